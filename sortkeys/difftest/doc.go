// Package difftest holds the differential tests of the sortkeys model: seeded random activity
// logs are replayed through the published botframework-webchat-core packages in Node (driver
// webchat-demo/diff/replay.mjs) and through sortkeys.Replay, and the two must agree on the order
// of state.activities at every checkpoint. The reply hold (sortkeys.Options.ReplyHold) is
// compared the same way through Web Chat's own sagas on a simulated clock (driver
// webchat-demo/diff/hold.mjs), with random logs and the logs under testdata/hold.
//
//   - gen-a: botframework-webchat-core 4.18.2
//   - gen-b: botframework-webchat-core 4.18.1-main.20251101.54e519d
//
// The tests need `npm ci --prefix webchat-demo`. Without it they skip, or fail when
// DIRECTLINE_NODE_TESTS=1 (as `make test` sets it).
package difftest
