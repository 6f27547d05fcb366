package sortkeys

import "hash/maphash"

// idTable maps activity ids (or clientActivityIDs) to local ids, as gen-c's
// activityIdToLocalIdMap and clientActivityIdToLocalIdMap do. Every activity of a replay looks
// one up and most add one: an open-addressing table that keeps each key's hash beside it grows
// by moving slots without hashing a key again, and a probe compares the full key only when the
// hashes match. The keys are copied into one byte array and the slots refer to them by offset,
// so neither holds a pointer: the garbage collector skips both, and growing moves plain memory.
type idTable struct {
	seed  maphash.Seed
	slots []idSlot // a power of two in length, at most three quarters full
	n     int
	// keys holds every key set so far, back to back (a deleted key's bytes stay).
	keys []byte
}

type idSlot struct {
	hash uint64
	// off and size locate the key in keys.
	off  uint64
	size uint32
	lid  int32 // 0: empty (local ids start at 1)
}

func newIDTable() idTable { return idTable{seed: maphash.MakeSeed(), slots: make([]idSlot, 64)} }

func (t *idTable) key(s *idSlot) []byte { return t.keys[s.off : s.off+uint64(s.size)] }

// get returns the local id of key.
func (t *idTable) get(key string) (int, bool) {
	h := maphash.String(t.seed, key)
	mask := uint64(len(t.slots) - 1)
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

// set maps key to lid (0 < lid ≤ MaxInt32).
func (t *idTable) set(key string, lid int) {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.rebuild(2*len(t.slots), 0)
	}
	h := maphash.String(t.seed, key)
	mask := uint64(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.lid == 0 {
			*s = idSlot{hash: h, off: uint64(len(t.keys)), size: uint32(len(key)), lid: int32(lid)}
			t.keys = append(t.keys, key...)
			t.n++
			return
		}
		if s.hash == h && string(t.key(s)) == key {
			s.lid = int32(lid)
			return
		}
	}
}

// deleteLid removes every key that maps to lid (deletes are rare: the table is rebuilt).
func (t *idTable) deleteLid(lid int) { t.rebuild(len(t.slots), int32(lid)) }

// rebuild moves every slot except those of local id drop into a table of size slots.
func (t *idTable) rebuild(size int, drop int32) {
	old := t.slots
	t.slots, t.n = make([]idSlot, size), 0
	mask := uint64(size - 1)
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
