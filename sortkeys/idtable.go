package sortkeys

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// idTable maps activity ids (or clientActivityIDs) to local ids, as gen-c's
// activityIdToLocalIdMap and clientActivityIdToLocalIdMap do. Every activity of a replay looks
// one up and most add one: an open-addressing table that keeps 32 bits of each key's hash beside
// it grows by moving slots without hashing a key again, and a probe compares the full key only
// when those bits match. The keys are copied into byte chunks and the slots refer to them by
// offset, so neither holds a pointer: the garbage collector skips both, and growing moves plain
// memory. A slot is 16 bytes, so a million ids take 32 MB of slots and a probe of a new id
// touches one of them.
type idTable struct {
	seed  maphash.Seed
	slots []idSlot // a power of two in length, at most three quarters full
	n     int
	// keys holds every key set so far, each as its length (uvarint) then its bytes, in chunks
	// that are never reallocated (a deleted key's bytes stay).
	keys [][]byte
	// last is the key get looked up last and lastHash its hash: a replay looks an id up and then
	// sets the same string (the same bytes of the same activity), which is not hashed again.
	last     string
	lastHash uint32
}

type idSlot struct {
	// hash is the key's hash, truncated: it places the slot (tables stay far below 2^32 slots)
	// and filters probes.
	hash uint32
	lid  int32 // 0: empty (local ids start at 1)
	// ref locates the key: chunk index in the high 32 bits, offset in the chunk in the low 32.
	ref uint64
}

// Key chunks start at idKeyChunkMin bytes and double up to idKeyChunkMax, so that a short
// replay holds little; a longer key gets a chunk of its own.
const (
	idKeyChunkMin = 1 << 10
	idKeyChunkMax = 1 << 20
)

func newIDTable() idTable { return idTable{seed: maphash.MakeSeed(), slots: make([]idSlot, 64)} }

func (t *idTable) key(s *idSlot) []byte {
	c := t.keys[s.ref>>32][uint32(s.ref):]
	n, w := binary.Uvarint(c)
	return c[w : w+int(n)]
}

func (t *idTable) hash(key string) uint32 {
	if len(key) == len(t.last) && unsafe.StringData(key) == unsafe.StringData(t.last) {
		return t.lastHash
	}
	return uint32(maphash.String(t.seed, key))
}

// get returns the local id of key.
func (t *idTable) get(key string) (int, bool) {
	h := t.hash(key)
	t.last, t.lastHash = key, h
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.lid == 0 {
			return 0, false
		}
		if s.hash == h && string(t.key(s)) == key {
			return int(s.lid), true
		}
	}
}

// set maps key to lid (0 < lid ≤ MaxInt32) and returns the table's copy of key, which stays
// valid and unchanged for the table's life (its chunks are never reallocated).
func (t *idTable) set(key string, lid int) string {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.rebuild(2*len(t.slots), 0)
	}
	h := t.hash(key)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.lid == 0 {
			*s = idSlot{hash: h, lid: int32(lid), ref: t.store(key)}
			t.n++
			return t.kept(s)
		}
		if s.hash == h && string(t.key(s)) == key {
			s.lid = int32(lid)
			return t.kept(s)
		}
	}
}

// kept is the key of s as a string sharing the chunk's bytes.
func (t *idTable) kept(s *idSlot) string {
	k := t.key(s)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// store appends key to the chunks and returns its ref.
func (t *idTable) store(key string) uint64 {
	need := binary.MaxVarintLen64 + len(key)
	last := len(t.keys) - 1
	if last < 0 || cap(t.keys[last])-len(t.keys[last]) < need {
		size := idKeyChunkMin
		if last >= 0 {
			size = min(2*cap(t.keys[last]), idKeyChunkMax)
		}
		t.keys = append(t.keys, make([]byte, 0, max(size, need)))
		last++
	}
	c := t.keys[last]
	ref := uint64(last)<<32 | uint64(len(c))
	c = binary.AppendUvarint(c, uint64(len(key)))
	t.keys[last] = append(c, key...)
	return ref
}

// deleteLid removes every key that maps to lid (deletes are rare: the table is rebuilt).
func (t *idTable) deleteLid(lid int) { t.rebuild(len(t.slots), int32(lid)) }

// rebuild moves every slot except those of local id drop into a table of size slots.
func (t *idTable) rebuild(size int, drop int32) {
	old := t.slots
	t.slots, t.n = make([]idSlot, size), 0
	mask := uint32(size - 1)
	for _, s := range old {
		if s.lid == 0 || s.lid == drop {
			continue
		}
		i := s.hash & mask
		for t.slots[i].lid != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
		t.n++
	}
}
