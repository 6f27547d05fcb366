package sortkeys

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unsafe"

	"github.com/directline-go/directline/activity"
	"github.com/directline-go/directline/activity/jsonscan"
)

// record is one stored revision of an activity. It keeps only what the reducers and the
// renderer read after the event that delivered it; what the entity readers need is rebuilt from
// raw on the rare occasions they run later. A long replay keeps one per event, and its speed is
// bound by the memory they take: the members are as narrow as the replay allows (see
// ErrLogTooLong and ErrActivityTooLarge) and ordered widest first, so that there is no padding
// between them.
type record struct {
	// rawPtr and rawLen are the activity as delivered (raw): a pointer and a 32-bit length take
	// 12 bytes where a slice takes 24.
	rawPtr *byte
	// dec is what the reducers read only while the event that delivered the record is applied
	// (or while the record is held): scratch storage that the next decode reuses; nil afterwards.
	dec *decoded
	// ext holds the strings that are neither views of raw nor common values (see strRef and
	// valueCode).
	ext *recordStrings
	// ls is what the replay keeps of the livestream metadata, read once; nil when the activity
	// is not part of a livestream.
	ls *streamInfo
	// ab is what the gen-a/gen-b reducer reads (nil in gen-c).
	ab *abInfo
	// tsDate is +new Date(timestamp).
	tsDate float64
	// tsV and tsDef are ts(), the gen-c logical timestamp: a numeric webchat:sequence-id, else
	// Date.parse of a string timestamp, else undefined.
	tsV float64
	// ltsV and ltsDef are lts(), +new Date(localTimestamp), undefined when the member is absent.
	ltsV float64
	// lid is the local id Web Chat keeps across revisions (gen-c) or a unique revision number.
	lid int32
	// rev numbers revisions uniquely; the keys walk uses it as the revision's identity.
	rev     int32
	arrival int32
	rawLen  int32
	// unitIdx with unitPrefix names the sorting unit (Item.Unit), which the engine spells out
	// when the order is read (engine.unitID): gen-c's grouping index (a session's id is the
	// livestream metadata's, gen-b's part grouping abInfo.partOf).
	unitIdx int32
	// id, clientActivityID (channelData) and replyToId, read through id(), cid() and
	// replyToID(): they are views of raw, which hold no pointer for the garbage collector to
	// follow, or, for a string with escapes, its decoded value in ext.
	idRef, cidRef, replyRef strRef
	// entStart and entEnd locate the entities member as delivered in raw (entEnd 0: absent).
	entStart, entEnd int32
	// Interned id, clientActivityID and session id for the keys walk.
	idSym, cidSym, sidSym int32
	// typCode and roleCode are the type member and the role, read through typ() and role().
	typCode, roleCode valueCode
	unitPrefix        unitPrefix
	tsDef, ltsDef     bool
	// idKeyed, cidKeyed and replyKeyed say ext holds idKey's, cidKey's or replyKey's key of a
	// member that is not a string; replyObject that replyToId is an object or an array.
	idKeyed, cidKeyed, replyKeyed, replyObject bool
	// idIsString and textKind say how id and text were sent (JavaScript typeof checks, and
	// whether a string is empty); hasAttachments a non-empty attachments array; hasTimestamp is
	// timestamp's presence.
	idIsString     bool
	textKind       uint8
	hasAttachments bool
	// attachmentsOther: attachments is there but not an array.
	attachmentsOther bool
	hasTimestamp     bool
	// Necessary conditions, found while scanning, for the entity readers to find anything: an
	// entity mentioning streaminfo, isPartOf or abstract (or holding an escape). They spare
	// the readers' full decode of every entity of every activity.
	mayStreamInfo, mayPartOf, mayAbstract bool
	pending                               bool
	// postBack and messageBackHidden are what the renderer reads from channelData.
	postBack, messageBackHidden bool
	// uiDone says shown holds the rendering layer's view of this revision; symDone that the
	// symbols do.
	uiDone, shown, symDone bool
	// ghost marks a revision deleted from the store but still in the UI list (gen-c).
	ghost bool
}

func (r *record) ts() jsNum  { return jsNum{def: r.tsDef, v: r.tsV} }
func (r *record) lts() jsNum { return jsNum{def: r.ltsDef, v: r.ltsV} }

// A strRef is a string member of a record: raw[off:off+n], or ext's string when n < 0.
type strRef struct{ off, n int32 }

// recordStrings holds the string members that are not views of raw (they held escapes), by
// strID, strCid and strReplyTo, and the type and role when they are not common values, by strType
// and strRole.
type recordStrings [5]string

const (
	strID = iota
	strCid
	strReplyTo
	strType
	strRole
)

func (r *record) str(ref strRef, which int) string {
	if ref.n < 0 {
		return r.ext[which]
	}
	if ref.n == 0 {
		return ""
	}
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(r.rawPtr), ref.off)), int(ref.n))
}

// raw is the activity as delivered.
func (r *record) raw() json.RawMessage { return unsafe.Slice(r.rawPtr, r.rawLen) }

func (r *record) id() string  { return r.str(r.idRef, strID) }
func (r *record) cid() string { return r.str(r.cidRef, strCid) }

// idKey and cidKey are the id and clientActivityID as gen-a's and gen-b's reducers match them
// (a truthiness check, then ===): the string itself, or for a truthy number or true a key no
// string can equal (keyOfValue), which an id() of "" leaves in ext; "" for what is falsy or an
// object, which === matches with nothing else.
func (r *record) idKey() string {
	if r.idKeyed {
		return r.ext[strID]
	}
	return r.id()
}

func (r *record) cidKey() string {
	if r.cidKeyed {
		return r.ext[strCid]
	}
	return r.cid()
}

// setKeyOf keeps the key of v, a member that is not a string, for idKey or cidKey (which), and
// reports whether there is one.
func (r *record) setKeyOf(v []byte, which int) bool {
	k := keyOfValue(v)
	if k == "" {
		return false
	}
	if r.ext == nil {
		r.ext = new(recordStrings)
	}
	r.ext[which] = k
	return true
}

// keyOfValue is the key of a JSON number or true, which JavaScript compares by value: "\xff"
// (a byte no UTF-8 string holds) and the value as String() prints it, so 5 and 5.0 are one key
// and "5" another; "" for 0, NaN, false, null, strings, arrays and objects.
func keyOfValue(v []byte) string {
	t := jsonscan.TrimSpace(v)
	switch {
	case len(t) == 4 && string(t) == "true":
		return "\xfftrue"
	case len(t) > 0 && (t[0] == '-' || t[0] >= '0' && t[0] <= '9'):
		if f, ok := jsonNumber(t); ok && f != 0 && !math.IsNaN(f) {
			return "\xff" + NumberString(f)
		}
	}
	return ""
}
func (r *record) replyToID() string { return r.str(r.replyRef, strReplyTo) }

// replyKey is replyToId as the reply hold reads it (queueIncomingActivitySaga.ts): truthy says it
// is truthy; key is what === matches it with, as idKey gives it, "" for an object or array, which
// === matches with nothing.
func (r *record) replyKey() (key string, truthy bool) {
	switch {
	case r.replyKeyed:
		return r.ext[strReplyTo], true
	case r.replyObject:
		return "", true
	}
	s := r.replyToID()
	return s, s != ""
}

func (r *record) typ() string  { return r.value(r.typCode, strType) }
func (r *record) role() string { return r.value(r.roleCode, strRole) }

func (r *record) setType(s string) { r.typCode = r.code(s, strType) }
func (r *record) setRole(s string) { r.roleCode = r.code(s, strRole) }

func (r *record) value(c valueCode, which int) string {
	if c == valueOther {
		return r.ext[which]
	}
	return commonValues[c]
}

// code returns s's code, keeping s in ext as the string member which when it is not a common
// value.
func (r *record) code(s string, which int) valueCode {
	c := codeOf(s)
	if c == valueOther {
		if r.ext == nil {
			r.ext = new(recordStrings)
		}
		r.ext[which] = s
	}
	return c
}

// strOf reads the JSON value v, a slice of raw, as the string member which; ok is false when v is
// not a string (the member then reads as ""). A string without escapes is kept as a view of raw
// (which the replay keeps as it was given), as viewOf would read it.
func (r *record) strOf(v []byte, which int) (ref strRef, ok bool) {
	if inner, plain := jsonscan.PlainString(v); plain {
		off := uintptr(unsafe.Pointer(unsafe.SliceData(inner))) - uintptr(unsafe.Pointer(r.rawPtr))
		return strRef{off: int32(off), n: int32(len(inner))}, true
	}
	s, ok := jsonscan.StringValue(v)
	if s == "" {
		return strRef{}, ok
	}
	if r.ext == nil {
		r.ext = new(recordStrings)
	}
	r.ext[which] = s
	return strRef{n: -1}, ok
}

// rawEntities is the entities member as delivered (nil when absent).
func (r *record) rawEntities() json.RawMessage {
	if r.entEnd == 0 {
		return nil
	}
	return r.raw()[r.entStart:r.entEnd]
}

// entityView is an Activity holding just the entities, for the Message entity reader after the
// record's event.
func (r *record) entityView() *activity.Activity {
	a := &activity.Activity{}
	_ = jsonscan.Elements(r.rawEntities(), func(ev []byte) { a.Entities = append(a.Entities, ev) })
	return a
}

// decoded is a record's scratch storage.
type decoded struct {
	// act is what the activity package's livestream and part-grouping readers look at.
	act activity.Activity
	// cd holds the channelData members the reducers read.
	cd channelData
}

// detach gives a record that outlives its event (a held reply) its own copy of its scratch
// storage.
func (r *record) detach() {
	if r.dec != nil {
		d := *r.dec
		d.act.Entities = slices.Clone(d.act.Entities)
		r.dec = &d
	}
}

// release drops the scratch storage once the record's event has been applied.
func (r *record) release() { r.dec = nil }

// unitPrefix is the kind part of Item.Unit.
type unitPrefix uint8

const (
	unitNone unitPrefix = iota
	unitLivestream
	unitHowTo
	unitPart
)

var unitPrefixes = [...]string{unitNone: "", unitLivestream: "livestream:", unitHowTo: "howto:", unitPart: "part:"}

// textKind values: how text was sent.
const (
	textAbsent = iota
	textEmpty
	// textNonEmpty is a string other than "".
	textNonEmpty
	textOther
)

// textKindOf is the textKind of a string text.
func textKindOf(nonEmpty bool) uint8 {
	if nonEmpty {
		return textNonEmpty
	}
	return textEmpty
}

// textIsString says text is a string (typeof text === 'string').
func (r *record) textIsString() bool { return r.textKind == textEmpty || r.textKind == textNonEmpty }

// hasText says text is a non-empty string.
func (r *record) hasText() bool { return r.textKind == textNonEmpty }

// channelData: raw members as sent (nil when absent; JSON null is kept, as Web Chat keeps it
// inside channelData).
type channelData struct {
	raw                          json.RawMessage
	seqID, cid                   json.RawMessage
	entityPosition, entityPartOf json.RawMessage
	postBack, messageBack        json.RawMessage
	// stream holds streamType, streamId and streamSequence for the livestream readers.
	stream activity.StreamMembers
}

func (r *record) name() string {
	if id := r.id(); id != "" {
		return id
	}
	return r.cid()
}

// ui returns the livestream session id (or "") and the visibility of this revision, computed once.
func (r *record) ui() (sid string, shown bool) {
	if !r.uiDone {
		r.shown = visible(r)
		r.uiDone = true
	}
	if r.ls != nil {
		sid = r.ls.sessionID
	}
	return sid, r.shown
}

// item is the record as Order lists it; unitID is the id of its sorting unit (engine.unitID).
func (r *record) item(unitID string) Item {
	return Item{Name: r.name(), ID: r.id(), ClientActivityID: r.cid(), Pending: r.pending, Role: r.role(),
		Activity: r.raw(), Arrival: int(r.arrival), Unit: unitPrefixes[r.unitPrefix] + unitID}
}

// ErrNotObject is returned by Apply when an event's activity is not a JSON object.
var ErrNotObject = errors.New("sortkeys: activity is not a JSON object")

// ErrActivityTooLarge is returned by Apply for an activity of more than 2 GiB − 1 bytes: a record
// locates its members with 32-bit offsets.
var ErrActivityTooLarge = errors.New("sortkeys: activity too large")

// maxActivityLen is the longest activity a record holds (math.MaxInt32 bytes; tests lower it).
var maxActivityLen = math.MaxInt32

// decodeRecord reads the members the model needs and applies Web Chat's normalisation on receipt
// (WEBCHAT-ORDERING §3 step 1): null members are absent, and a missing role is inferred from
// from.id and userID. The activity.Activity in the record's dec (scratch storage in mem) carries
// what the activity package's livestream and part-grouping readers look at: type, id, text (for
// livestream candidates only, the one reader of it), entities and whether there are attachments;
// channelData's stream members are in dec.cd, and from and attachment entries are not decoded.
// post says the activity is a post's, which Web Chat does not normalise: a null timestamp stays.
func decodeRecord(raw json.RawMessage, userID string, mem *decodeArenas, post bool) (*record, error) {
	if len(raw) > maxActivityLen {
		return nil, ErrActivityTooLarge
	}
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, ErrNotObject
	}
	// t and every value read below are slices of raw: the difference of capacities is the
	// offset into raw.
	base := cap(raw)
	r := mem.records.alloc()
	r.rawPtr, r.rawLen = unsafe.SliceData(raw), int32(len(raw))
	r.dec = &mem.dec
	cd := &mem.dec.cd
	if mem.cdUsed {
		// Only scanChannelData writes cd: after an activity without channelData it is still
		// zero.
		*cd, mem.cdUsed = channelData{}, false
	}
	a := &mem.dec.act
	// decodeRecord sets these members of act and no other, so the rest stay zero.
	a.Text, a.Attachments, a.Entities = "", nil, mem.ents[:0]
	tsString, textPlain := false, false
	var fromID, text []byte
	var fromRole string
	hasFrom := false
	// entErr is set while the last entities member read is not an array.
	var entErr error
	// One forward pass: the members the model reads are read where they stand (from, channelData
	// and the entities are entered rather than skipped and scanned again); the rest is skipped.
	o, err := jsonscan.OpenObject(t, 0)
	if err != nil {
		return nil, err
	}
	// Members come several at a time from MemberRun (run[k:n] are still to be read), one at a
	// time from Member where it leaves them to the general way: memberReader.next, written out
	// here because a call per member of every activity costs about 5 % of the decoding.
	var run [8]jsonscan.Span
	k, n, closed := 0, 0, false
	for {
		var key []byte
		var i, vend int
		if k == n && !closed {
			n, closed = o.MemberRun(run[:])
			k = 0
		}
		if k < n {
			m := &run[k]
			k++
			key, i, vend = t[m.KeyStart:m.KeyEnd], m.Value, m.End
		} else if closed {
			break
		} else {
			var done bool
			if key, i, vend, done, err = o.Member(); err != nil {
				return nil, err
			}
			if done {
				break
			}
			if vend != 0 {
				o.SkipTo(vend)
			}
		}
		if vend != 0 {
			// A plain string, which MemberRun or Member moved past.
			// The value is sliced only for the members read.
			switch string(key) {
			case "type":
				typ, _ := internedOf(t[i:vend])
				r.setType(typ)
			case "id":
				r.idKeyed = false
				r.idRef, r.idIsString = strRef{off: int32(base - cap(t) + i + 1), n: int32(vend - i - 2)}, true
			case "text":
				text, textPlain = t[i:vend], true
				r.textKind = textKindOf(vend-i > 2)
			case "timestamp":
				// A plain string is its inside: jsDateValue would parse just that, and parseDate
				// starts with the fixed form.
				ts, ok := parseUTCMillis(t[i+1 : vend-1])
				if !ok {
					ts = parseDate(t[i+1 : vend-1])
				}
				r.hasTimestamp, r.tsDate, tsString = true, ts, true
			case "localTimestamp":
				r.ltsDef, r.ltsV = true, parseDate(t[i+1:vend-1])
			case "replyToId":
				r.replyKeyed, r.replyObject = false, false
				r.replyRef = strRef{off: int32(base - cap(t) + i + 1), n: int32(vend - i - 2)}
			case "from":
				// Not an object: from counts as absent.
				hasFrom, fromID, fromRole = false, nil, ""
			case "channelData":
				// Not an object: nothing is read from it.
				*cd = channelData{}
			case "entities":
				// Not an array: Web Chat fails on it, unless a later entities replaces it.
				a.Entities, r.entStart, r.entEnd, entErr = a.Entities[:0], 0, 0, jsonscan.ErrSyntax
			case "attachments":
				r.hasAttachments, r.attachmentsOther = false, true
			}
			continue
		}
		if i < len(t) && t[i] == 'n' {
			// Web Chat drops null members on receipt.
			end, err := jsonscan.SkipValue(t, i)
			if err != nil {
				return nil, err
			}
			if string(t[i:end]) == "null" {
				o.SkipTo(end)
				if post && string(key) == "timestamp" {
					// A post is not normalised: its timestamp stays null, and new Date(null) is 0.
					r.hasTimestamp, r.tsDate, tsString = true, 0, false
					continue
				}
				// JSON.parse keeps the last of repeated members: a null after a member of the
				// same name leaves it absent too.
				switch string(key) {
				case "from":
					hasFrom, fromID, fromRole = false, nil, ""
				case "channelData":
					*cd = channelData{}
				case "entities":
					a.Entities, r.entStart, r.entEnd, entErr = a.Entities[:0], 0, 0, nil
				case "type":
					r.setType("")
				case "id":
					r.idRef, r.idIsString, r.idKeyed = strRef{}, false, false
				case "text":
					text, textPlain, r.textKind = nil, false, textAbsent
				case "timestamp":
					r.hasTimestamp, r.tsDate, tsString = false, 0, false
				case "localTimestamp":
					r.ltsDef, r.ltsV = false, 0
				case "replyToId":
					r.replyRef, r.replyKeyed, r.replyObject = strRef{}, false, false
				case "attachments":
					r.hasAttachments, r.attachmentsOther = false, false
				}
				continue
			}
		}
		var end int
		switch string(key) {
		case "from":
			// A repeated member replaces the earlier one, as in JSON.parse.
			fromID, fromRole = nil, ""
			end, hasFrom, err = scanFrom(t, i, &fromID, &fromRole)
		case "channelData":
			if mem.cdUsed {
				// A repeated channelData replaces the one read before, as in JSON.parse.
				*cd = channelData{}
			}
			mem.cdUsed = true
			end, err = scanChannelData(t, i, cd)
		case "entities":
			a.Entities, r.entStart, r.entEnd, entErr = a.Entities[:0], 0, 0, nil
			end, err = r.scanEntities(t, i, a)
			switch {
			case err == nil:
				r.entStart, r.entEnd = int32(base-cap(t)+i), int32(base-cap(t)+end)
			case errors.Is(err, errNotArray):
				a.Entities, entErr, err = a.Entities[:0], jsonscan.ErrSyntax, nil
			}
		case "type":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				typ, _ := internedOf(t[i:end])
				r.setType(typ)
			}
		case "id":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				r.idRef, r.idIsString = r.strOf(t[i:end], strID)
				r.idKeyed = !r.idIsString && r.setKeyOf(t[i:end], strID)
			}
		case "text":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				v := t[i:end]
				text, textPlain = v, false
				r.textKind = textOther
				if inner, ok := jsonscan.PlainString(v); ok {
					r.textKind = textKindOf(len(inner) > 0)
				} else if s, ok := jsonscan.StringValue(v); ok {
					r.textKind = textKindOf(s != "")
				}
			}
		case "timestamp":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				v := t[i:end]
				r.hasTimestamp, r.tsDate = true, jsDateValue(v)
				tsString = v[0] == '"'
			}
		case "localTimestamp":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				r.ltsDef, r.ltsV = true, jsDateValue(t[i:end])
			}
		case "replyToId":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				v := t[i:end]
				var isString bool
				r.replyRef, isString = r.strOf(v, strReplyTo)
				r.replyKeyed = !isString && r.setKeyOf(v, strReplyTo)
				r.replyObject = v[0] == '{' || v[0] == '['
			}
		case "attachments":
			if end, err = jsonscan.SkipValue(t, i); err == nil {
				n := 0
				r.attachmentsOther = jsonscan.Elements(t[i:end], func([]byte) { n++ }) != nil
				r.hasAttachments = !r.attachmentsOther && n > 0
			}
		default:
			// run is free: a value MemberRun leaves to the caller is the last of its run.
			end, err = skipValue(t, i, run[:])
		}
		if err != nil {
			return nil, err
		}
		o.SkipTo(end)
	}
	if jsonscan.SkipSpace(t, o.Pos()) != len(t) {
		return nil, jsonscan.ErrSyntax
	}
	if entErr != nil {
		return nil, entErr
	}
	if r.entEnd != 0 {
		// Keep the room the entities grew to (without entities, act.Entities is mem.ents).
		mem.ents = a.Entities[:0]
	} else {
		a.Entities = nil
	}
	a.Type, a.ID = r.typ(), r.id()
	if r.hasAttachments {
		a.Attachments = oneAttachment
	}
	if cd.cid != nil {
		// Absent, clientActivityID reads as "" (the zero strRef).
		var isString bool
		r.cidRef, isString = r.strOf(cd.cid, strCid)
		r.cidKeyed = !isString && r.setKeyOf(cd.cid, strCid)
	}
	if mem.idsRead != nil {
		mem.idsRead(r)
	}
	switch {
	case !hasFrom:
		r.setRole("channel")
	case fromRole != "":
		r.setRole(fromRole)
	default:
		r.setRole(roleOf(fromID, userID))
	}
	// The channelData members are mostly absent: nil is not a number and not truthy.
	seq, isSeq := 0.0, false
	if cd.seqID != nil {
		seq, isSeq = jsonNumber(cd.seqID)
	}
	if isSeq {
		r.tsDef, r.tsV = true, seq
	} else if tsString {
		r.tsDef, r.tsV = true, r.tsDate
	}
	r.postBack = cd.postBack != nil && truthy(cd.postBack)
	if cd.messageBack != nil && truthy(cd.messageBack) {
		var mb map[string]json.RawMessage
		r.messageBackHidden = json.Unmarshal(cd.messageBack, &mb) != nil || !truthy(mb["displayText"])
	}
	if cd.stream.StreamType != nil || r.mayStreamInfo {
		// Only livestream candidates need text.
		if textPlain {
			// A plain string is its inside, which viewOf would share.
			a.Text = unsafe.String(&text[1], len(text)-2)
		} else {
			a.Text, _ = viewOf(text)
		}
		if cd.stream.StreamType != nil && cd.raw == nil {
			// streamType was met in a channelData that is not an object.
			return nil, jsonscan.ErrSyntax
		}
		// The reader looks into the entities for a streaminfo entity and, for an interim without
		// text or attachments, for the Message entity's abstract. Where the scan found neither
		// mentioned, it cannot find them: it gets no entities to parse.
		ents := a.Entities
		if !r.mayStreamInfo && !r.mayAbstract {
			a.Entities = nil
		}
		ls, ok := a.LivestreamWith(cd.stream)
		a.Entities = ents
		if ok && r.livestreamShape() {
			r.keepLivestream(ls, cd, mem)
		}
	}
	return r, nil
}

// livestreamShape checks what Web Chat's livestream schemas require of the activity beyond
// activity.Livestream's checks, which the typed activity holds by construction: id a string,
// text a string when present, attachments an array when present
// (getActivityLivestreamingMetadata.ts).
func (r *record) livestreamShape() bool {
	return r.idIsString && r.textKind != textOther && !r.attachmentsOther
}

// streamInfo is what the replay reads of a revision's livestream metadata (activity.Livestream):
// 32 bytes where the metadata takes 80.
type streamInfo struct {
	// sessionID is the metadata's SessionID: the id or channelData's streamId as a view of raw
	// where it equals one of them, so that a record keeps no string object of its own alive.
	sessionID string
	// seq is Sequence (+Inf for a final revision).
	seq float64
	// final and contentless are the kinds the replay tells apart.
	final, contentless bool
}

// keepLivestream sets r.ls from the metadata ls, which the reader read from r and cd.
func (r *record) keepLivestream(ls activity.Livestream, cd *channelData, mem *decodeArenas) {
	sid := ls.SessionID
	if id := r.id(); sid == id {
		sid = id
	} else if s, ok := viewOf(cd.stream.StreamID); ok && s == sid {
		sid = s
	}
	r.ls = mem.livestreams.alloc()
	*r.ls = streamInfo{sessionID: sid, seq: ls.Sequence,
		final: ls.Kind == activity.LivestreamFinal, contentless: ls.Kind == activity.LivestreamContentless}
}

// The readers below enter from, channelData and the entities instead of skipping them and
// scanning them again. Entering reads literals strictly (a literal ends at a quote or an opening
// bracket too), which keeps it in step with the bracket-matching skip the activity's own scan
// uses; input on which the two could disagree fails the entering read, and the value is then
// skipped and read member by member as the activity's scan sees it.

// scanFrom reads from.id and from.role from the value at d[i]; ok is false, and from counts as
// absent, when the value is not an object.
func scanFrom(d []byte, i int, fromID *[]byte, fromRole *string) (end int, ok bool, err error) {
	o, err := jsonscan.OpenObject(d, i)
	if err != nil {
		return fromMembers(d, i, fromID, fromRole)
	}
	// The usual from, compact members with string values, is read in one MemberRun.
	var run [4]jsonscan.Span
	n, done := o.MemberRun(run[:])
	if !done {
		return fromMembers(d, i, fromID, fromRole)
	}
	for _, m := range run[:n] {
		switch string(d[m.KeyStart:m.KeyEnd]) {
		case "id":
			*fromID = d[m.Value:m.End]
		case "role":
			*fromRole, _ = internedOf(d[m.Value:m.End])
		}
	}
	return o.Pos(), true, nil
}

// fromMembers is scanFrom for any from: entered when it can be, else skipped and read member by
// member.
func fromMembers(d []byte, i int, fromID *[]byte, fromRole *string) (end int, ok bool, err error) {
	read := func(k, v []byte) {
		switch string(k) {
		case "id":
			*fromID = v
		case "role":
			*fromRole, _ = internedOf(v)
		}
	}
	if end, err := enterObject(d, i, read); err == nil {
		return end, true, nil
	}
	if end, err = jsonscan.SkipValue(d, i); err != nil {
		return 0, false, err
	}
	return end, jsonscan.Members(d[i:end], read) == nil, nil
}

// scanChannelData reads the channelData members the model needs from the value at d[i]; the raw
// object is kept when the value is an object.
func scanChannelData(d []byte, i int, cd *channelData) (int, error) {
	end, err := enterObject(d, i, cd.set)
	if err == nil {
		cd.raw = d[i:end]
		return end, nil
	}
	if end, err = jsonscan.SkipValue(d, i); err != nil {
		return 0, err
	}
	if jsonscan.Members(d[i:end], cd.set) == nil {
		cd.raw = d[i:end]
	}
	return end, nil
}

// set keeps the channelData member k if the model reads it.
func (cd *channelData) set(k, cv []byte) {
	switch string(k) {
	case "webchat:sequence-id":
		cd.seqID = cv
	case "clientActivityID":
		cd.cid = cv
	case "streamType":
		cd.stream.StreamType = cv
	case "streamId":
		cd.stream.StreamID = cv
	case "streamSequence":
		cd.stream.StreamSequence = cv
	case "webchat:entity-position":
		cd.entityPosition = cv
	case "webchat:entity-part-of":
		cd.entityPartOf = cv
	case "postBack":
		cd.postBack = cv
	case "messageBack":
		cd.messageBack = cv
	}
}

// skipValue is jsonscan.SkipValue(d, i), with an object of plain string members (as
// conversation usually is) read in one MemberRun: it holds no bracket or quote outside its
// strings but its own, so the bracket matching would end where the run does.
func skipValue(d []byte, i int, run []jsonscan.Span) (int, error) {
	if i < len(d) && d[i] == '{' {
		if o, err := jsonscan.OpenObject(d, i); err == nil {
			if _, done := o.MemberRun(run); done {
				return o.Pos(), nil
			}
		}
	}
	return jsonscan.SkipValue(d, i)
}

// skipValueStrict is jsonscan.SkipValueStrict(d, i), which skips an object as SkipValue does:
// with skipValue.
func skipValueStrict(d []byte, i int, run []jsonscan.Span) (int, error) {
	if i < len(d) && d[i] == '{' {
		return skipValue(d, i, run)
	}
	return jsonscan.SkipValueStrict(d, i)
}

// memberReader reads an object's members a run at a time from MemberRun, and one at a time from
// Member where a run stops (whitespace, an escaped key): the loop of every reader that enters an
// object.
type memberReader struct {
	o      jsonscan.Object
	d      []byte
	run    [8]jsonscan.Span
	k, n   int // run[k:n] are still to be read
	closed bool
}

// open starts reading the object at d[i].
func (m *memberReader) open(d []byte, i int) error {
	o, err := jsonscan.OpenObject(d, i)
	m.o, m.d = o, d
	return err
}

// next is Object.Member, except that a plain string value has been passed over already: vend is
// its end. A value with vend 0 is the caller's to skip or enter, followed by m.o.SkipTo. done:
// the closing brace was read, and m.o.Pos() is past it.
func (m *memberReader) next() (key []byte, vi, vend int, done bool, err error) {
	if m.k < m.n {
		s := &m.run[m.k]
		m.k++
		return m.d[s.KeyStart:s.KeyEnd], s.Value, s.End, false, nil
	}
	return m.refill()
}

// refill is next once the run read so far is used up: a new run, or one member from Member.
func (m *memberReader) refill() (key []byte, vi, vend int, done bool, err error) {
	if !m.closed {
		if m.n, m.closed = m.o.MemberRun(m.run[:]); m.n > 0 {
			s := &m.run[0]
			m.k = 1
			return m.d[s.KeyStart:s.KeyEnd], s.Value, s.End, false, nil
		}
		m.k = 0
	}
	if m.closed {
		return nil, 0, 0, true, nil
	}
	if key, vi, vend, done, err = m.o.Member(); err == nil && !done && vend != 0 {
		m.o.SkipTo(vend)
	}
	return key, vi, vend, done, err
}

// scratch is the run's room, free while the caller reads a value next left to it: such a value
// is the last of its run.
func (m *memberReader) scratch() []jsonscan.Span { return m.run[:] }

// enterObject calls f for every member of the object at d[i] and returns the index after it.
func enterObject(d []byte, i int, f func(key, val []byte)) (int, error) {
	var m memberReader
	if err := m.open(d, i); err != nil {
		return 0, err
	}
	for {
		key, vi, vend, done, err := m.next()
		if err != nil {
			return 0, err
		}
		if done {
			return m.o.Pos(), nil
		}
		if vend == 0 {
			if vend, err = jsonscan.SkipValueStrict(d, vi); err != nil {
				return 0, err
			}
			m.o.SkipTo(vend)
		}
		f(key, d[vi:vend])
	}
}

// scanEntities collects the entities at d[i] into a.Entities and notes which entity readers may
// find something (mayStreamInfo, mayPartOf, mayAbstract). A value that is not an array, or an
// array that is not well formed, is an error.
func (r *record) scanEntities(d []byte, i int, a *activity.Activity) (int, error) {
	n := len(a.Entities)
	if end, err := r.enterEntities(d, i, a); err == nil {
		return end, nil
	}
	a.Entities = a.Entities[:n]
	end, err := jsonscan.SkipValue(d, i)
	if err != nil {
		return 0, err
	}
	// The value is valid JSON, so Elements fails only on a value that is not an array.
	if jsonscan.Elements(d[i:end], func(ev []byte) {
		a.Entities = append(a.Entities, ev)
		r.mentions(ev)
	}) != nil {
		return end, errNotArray
	}
	return end, nil
}

// errNotArray is scanEntities' error for an entities member that is valid JSON but not an array.
var errNotArray = errors.New("sortkeys: entities is not an array")

func (r *record) enterEntities(d []byte, i int, a *activity.Activity) (int, error) {
	if i >= len(d) || d[i] != '[' {
		return 0, jsonscan.ErrSyntax
	}
	j := jsonscan.SkipSpace(d, i+1)
	if j < len(d) && d[j] == ']' {
		return j + 1, nil
	}
	for {
		end, err := r.enterEntity(d, j)
		if err != nil {
			return 0, err
		}
		a.Entities = append(a.Entities, d[j:end])
		j = jsonscan.SkipSpace(d, end)
		if j >= len(d) {
			return 0, jsonscan.ErrSyntax
		}
		if d[j] == ']' {
			return j + 1, nil
		}
		if d[j] != ',' {
			return 0, jsonscan.ErrSyntax
		}
		j = jsonscan.SkipSpace(d, j+1)
	}
}

// enterEntity skips the entity at d[i], noting the members the entity readers look for: a type
// holding "streaminfo", isPartOf and abstract. An entity that is not an object, or one with an
// escape in a key or in its type, is judged by its bytes as a whole (mentions).
func (r *record) enterEntity(d []byte, i int) (int, error) {
	if i >= len(d) || d[i] != '{' {
		end, err := jsonscan.SkipValueStrict(d, i)
		if err == nil {
			r.mentions(d[i:end])
		}
		return end, err
	}
	var m memberReader
	if err := m.open(d, i); err != nil {
		return 0, err
	}
	o := &m.o
	var streamInfo, partOf, abstract, unsure bool
	for {
		key, vi, vend, done, err := m.next()
		if err != nil {
			return 0, err
		}
		if done {
			break
		}
		// MemberRun reads no escaped key, and leaves Escaped false.
		unsure = unsure || o.Escaped()
		if vend == 0 {
			if vend, err = skipValueStrict(d, vi, m.scratch()); err != nil {
				return 0, err
			}
			o.SkipTo(vend)
		}
		switch string(key) {
		case "type":
			v := d[vi:vend]
			streamInfo = streamInfo || bytes.Contains(v, []byte("streaminfo"))
			unsure = unsure || bytes.IndexByte(v, '\\') >= 0
		case "isPartOf":
			partOf = true
		case "abstract":
			abstract = true
		}
	}
	if unsure {
		r.mentions(d[i:o.Pos()])
		return o.Pos(), nil
	}
	r.mayStreamInfo = r.mayStreamInfo || streamInfo
	r.mayPartOf = r.mayPartOf || partOf
	r.mayAbstract = r.mayAbstract || abstract
	return o.Pos(), nil
}

// mentions notes what an entity's bytes mention (an escape may hide any of it).
func (r *record) mentions(ev []byte) {
	esc := bytes.IndexByte(ev, '\\') >= 0
	r.mayStreamInfo = r.mayStreamInfo || esc || bytes.Contains(ev, []byte("streaminfo"))
	r.mayPartOf = r.mayPartOf || esc || bytes.Contains(ev, []byte("isPartOf"))
	r.mayAbstract = r.mayAbstract || esc || bytes.Contains(ev, []byte("abstract"))
}

// oneAttachment stands for a non-empty attachments array: the readers only ask whether there is
// one.
var oneAttachment = []*activity.Attachment{{}}

// roleOf infers the role of an activity without from.role from from.id (fid, raw JSON): the user's
// when it is userID, the bot's when it is any other non-empty string, else the channel's.
func roleOf(fid []byte, userID string) string {
	id, ok := jsonscan.PlainString(fid)
	if !ok {
		s, _ := jsonscan.StringValue(fid)
		id = []byte(s)
	}
	switch {
	case len(id) == 0:
		return "channel"
	case string(id) == userID:
		return activity.RoleUser
	}
	return activity.RoleBot
}

// decodeArenas allocates what decodeRecord creates for each activity.
type decodeArenas struct {
	records     arena[record]
	livestreams arena[streamInfo]
	// Scratch storage behind a record's dec while its event is applied.
	dec decoded
	// cdUsed says cd may hold members of a channelData read before: an earlier activity's, or
	// while decoding, an earlier member of the same activity.
	cdUsed bool
	// ents keeps the room act.Entities grew to across activities without entities.
	ents []json.RawMessage
	// idsRead, when set, is called once a record's id and clientActivityID are read, before
	// its role, timestamps and livestream metadata are (gen-c starts loading the id-table slots
	// it will look them up in).
	idsRead func(r *record)
}

func isJSONNull(raw json.RawMessage) bool {
	t := jsonscan.TrimSpace(raw)
	return len(t) == 4 && string(t) == "null"
}

// jsonNumber returns raw as a float64 when it is a JSON number (typeof === "number").
func jsonNumber(raw json.RawMessage) (float64, bool) {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	return f, true
}

// toNumber is JavaScript's ToNumber for a JSON value (undefined when raw is nil).
func toNumber(raw json.RawMessage) float64 {
	t := jsonscan.TrimSpace(raw)
	if len(t) == 0 {
		return math.NaN()
	}
	switch t[0] {
	case 'n', 'f':
		return 0
	case 't':
		return 1
	case '{':
		return math.NaN()
	case '[':
		var arr []json.RawMessage
		if json.Unmarshal(t, &arr) != nil || len(arr) > 1 {
			return math.NaN()
		}
		if len(arr) == 0 {
			return 0
		}
		if s, ok := jsonscan.StringValue(arr[0]); ok {
			return stringToNumber(s)
		}
		if f, ok := jsonNumber(arr[0]); ok {
			return f
		}
		if isJSONNull(arr[0]) {
			return 0
		}
		return math.NaN()
	case '"':
		s, _ := jsonscan.StringValue(t)
		return stringToNumber(s)
	}
	f, _ := jsonNumber(t)
	return f
}

// stringToNumber is JavaScript's StringToNumber for decimal, hexadecimal, octal, binary and
// Infinity forms; whitespace around the literal is allowed and "" is 0.
func stringToNumber(s string) float64 {
	s = trimJSSpace(s)
	if s == "" {
		return 0
	}
	switch s {
	case "Infinity", "+Infinity":
		return math.Inf(1)
	case "-Infinity":
		return math.Inf(-1)
	}
	if len(s) > 2 && s[0] == '0' {
		base := 0
		switch s[1] {
		case 'x', 'X':
			base = 16
		case 'o', 'O':
			base = 8
		case 'b', 'B':
			base = 2
		}
		if base != 0 {
			v, err := strconv.ParseUint(s[2:], base, 64)
			if err != nil {
				return math.NaN()
			}
			return float64(v)
		}
	}
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-') {
			return math.NaN()
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return math.NaN()
	}
	return f
}

// trimJSSpace trims what StringToNumber does around a numeric literal.
func trimJSSpace(s string) string {
	return strings.TrimFunc(s, isJSSpace)
}

// isJSSpace is ECMAScript's WhiteSpace or LineTerminator, which StringToNumber trims: tab,
// vertical tab, form feed, space, no-break space, BOM, the Zs category, LF, CR, U+2028, U+2029.
func isJSSpace(c rune) bool {
	switch c {
	case '\t', '\v', '\f', ' ', '\u00a0', '\ufeff', '\n', '\r', '\u2028', '\u2029':
		return true
	}
	return c > 0x7f && unicode.Is(unicode.Zs, c)
}
