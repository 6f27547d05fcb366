// Package stream is the Direct Line 3.0 WebSocket stream hub: it fans committed log entries out to
// every open stream of a conversation and replays history on connect (Direct Line 3.0: "Receive
// activities via WebSocket stream"; DESIGN invariants 7 and 8).
//
// # Frames
//
// Every non-empty frame is a text frame holding one ActivitySet:
//
//	{"activities":[<stamped activity>, ...],"watermark":"<seq of the last entry in the frame>"}
//
// with at most 100 activities (and about 64 KiB) per frame, in seq order, each entry once. The
// only other frame the server sends is an empty text frame, every Options.KeepAlive (20 s by
// default), which DLJS ignores; DLJS parses every non-empty frame as an ActivitySet, so nothing
// else is ever sent. Frames from the client (DLJS sends an empty one every 20 s) are read and
// dropped; they and pongs keep the connection alive. The server pings every Options.PingInterval
// and drops a peer that sends nothing for twice that long.
//
// # Resume
//
// A stream first registers for live entries (buffering them), then reads history with
// History.ReadAfter from the watermark in pages, sends it, and then sends the buffered and later
// live entries, skipping every entry at or below the last seq already sent. Entries that history
// covered but did not return (superseded revisions, deleted activities) are skipped too, while
// ephemeral entries (typing, livestream revisions) are sent live only: they never come from
// history, so a resumed stream does not replay them (DESIGN invariant 8).
//
// Without a watermark in the stream URL (DLJS sends "watermark=" on first connect; the hosted
// service uses "watermark=-") the stream replays the whole history, exactly as watermark 0 does.
// A client that connects right after starting a conversation therefore never misses the bot's
// welcome or the echo of something it posted before the socket opened. A watermark beyond the
// end of the log means what it says: entries up to it are never sent (GET activities agrees).
//
// One narrow case loses a typing activity: when it was committed before the history read but its
// commit hook runs after a later entry was already sent from history. Nothing replayable is ever
// lost or repeated.
//
// # Close codes
//
// Each server-initiated close says what the client should do. DLJS reconnects after any close
// (GET /conversations/{id}?watermark=<last>, then a new socket), so the codes matter for logs,
// metrics and other clients:
//
//	1012 Service Restart   "service restart": the hub is shutting down; reconnect with your watermark.
//	1013 Try Again Later   "slow consumer": the client fell more than Options.QueueSize entries
//	                       behind; reconnect with your watermark (nothing is lost).
//	1011 Internal Error    "history unavailable": history could not be read; reconnect later.
//	4001                   "token expired": the token the stream URL was issued for expired; get a
//	                       new token (reconnecting with the expired one gives 403).
//
// Several streams may be open on one conversation (browser tabs); none is closed as a "collision".
//
// # Delivery
//
// Hub.OnCommit is the store's commit hook. It never blocks: it appends to each subscriber's bounded
// queue and returns. An idle WebSocket costs one goroutine, which reads the connection (started
// by ServeWS, which returns so the HTTP request's goroutine and state go), a 256-byte read buffer,
// no write buffer (a pooled one is taken per frame) and no timer: one clock goroutine per hub
// finds the keep-alives, pings and token expiries that are due (up to a second late). It has no
// writer goroutine while idle: one is started when entries, a keep-alive or a ping are due, and it
// exits when it has written everything. Lock order: see LOCKS.md.
package stream
