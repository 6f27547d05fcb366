package sortkeys

import (
	"encoding/binary"
	"hash/maphash"
	"unsafe"
)

// idTable maps activity ids (or clientActivityIDs) to local ids, as gen-c's
// activityIdToLocalIdMap and clientActivityIdToLocalIdMap do. Every activity of a replay looks
// one up and most add one: an open-addressing table that keeps 32 bits of each key's hash beside
// it grows by moving slots without hashing a key again, and a probe reads a key only when those
// bits match. The keys are copied into byte chunks, each with its local id, and the slots refer
// to them by offset, so neither holds a pointer: the garbage collector skips both, and growing
// moves plain memory. A slot is 8 bytes (the local id lives with the key, which a hit reads
// anyway), so a million ids take 16 MB of slots, a probe of a new id touches one of them, and a
// growth moves half what 16-byte slots would.
type idTable struct {
	seed  maphash.Seed
	slots []idSlot // a power of two in length, at most three quarters full
	n     int
	// keys holds every key set so far, each as its local id (4 bytes, little-endian), its
	// length (uvarint) then its bytes, in chunks that are never reallocated (a deleted key's
	// bytes stay). The first chunk starts with a byte no key uses, so that no ref is 0.
	keys [][]byte
	// last is the key hashed last and lastHash its hash: a replay looks an id up and then sets
	// the same string (the same bytes of the same activity), which is not hashed again.
	last     string
	lastHash uint32
}

type idSlot struct {
	// hash is the key's hash, truncated: it places the slot (tables stay far below 2^32 slots)
	// and filters probes.
	hash uint32
	// ref locates the key's entry: chunk index in the high idRefChunkBits bits, offset in the
	// chunk in the low idRefOffBits; 0: an empty slot.
	ref uint32
}

// Key chunks start at idKeyChunkMin bytes and double up to idKeyChunkMax, so that a short
// replay holds little; a longer key gets a chunk of its own. An entry starts below
// idKeyChunkMax in its chunk, so its offset takes idRefOffBits bits and the chunk index the
// rest of a ref: 4095 chunks of at least a megabyte, more key bytes than a replay holds.
const (
	idKeyChunkMin  = 1 << 10
	idKeyChunkMax  = 1 << idRefOffBits
	idRefOffBits   = 20
	idRefChunkBits = 32 - idRefOffBits
)

func newIDTable() idTable { return idTable{seed: maphash.MakeSeed(), slots: make([]idSlot, 64)} }

// entry is the key entry that ref locates: its local id's bytes, then its key's length and key.
func (t *idTable) entry(ref uint32) []byte {
	return t.keys[ref>>idRefOffBits][ref&(idKeyChunkMax-1):]
}

// lidOf is the local id of the entry e.
func lidOf(e []byte) int { return int(binary.LittleEndian.Uint32(e)) }

// keyOf is the key of the entry e.
func keyOf(e []byte) []byte {
	n, w := binary.Uvarint(e[4:])
	return e[4+w : 4+w+int(n)]
}

func (t *idTable) hash(key string) uint32 {
	if len(key) == len(t.last) && unsafe.StringData(key) == unsafe.StringData(t.last) {
		return t.lastHash
	}
	h := uint32(maphash.String(t.seed, key))
	t.last, t.lastHash = key, h
	return h
}

// prefetch hashes key and starts loading the slot where its probe begins, so that a get or set
// of key that follows other work does not wait for memory. The hash is kept for them.
func (t *idTable) prefetch(key string) {
	h := t.hash(key)
	prefetch(unsafe.Pointer(&t.slots[h&uint32(len(t.slots)-1)]))
}

// get returns the local id of key.
func (t *idTable) get(key string) (int, bool) {
	h := t.hash(key)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.ref == 0 {
			return 0, false
		}
		if s.hash == h {
			if e := t.entry(s.ref); string(keyOf(e)) == key {
				return lidOf(e), true
			}
		}
	}
}

// set maps key to lid (0 < lid ≤ MaxInt32) and returns the table's copy of key, which stays
// valid and unchanged for the table's life (its chunks are never reallocated).
func (t *idTable) set(key string, lid int) string {
	if 4*(t.n+1) > 3*len(t.slots) {
		t.rebuild(2 * len(t.slots))
	}
	h := t.hash(key)
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.ref == 0 {
			*s = idSlot{hash: h, ref: t.store(key, lid)}
			t.n++
			return kept(t.entry(s.ref))
		}
		if s.hash == h {
			if e := t.entry(s.ref); string(keyOf(e)) == key {
				binary.LittleEndian.PutUint32(e, uint32(lid))
				return kept(e)
			}
		}
	}
}

// kept is the key of the entry e as a string sharing the chunk's bytes.
func kept(e []byte) string {
	k := keyOf(e)
	return unsafe.String(unsafe.SliceData(k), len(k))
}

// store appends an entry for key and lid to the chunks and returns its ref.
func (t *idTable) store(key string, lid int) uint32 {
	need := 4 + binary.MaxVarintLen64 + len(key)
	last := len(t.keys) - 1
	if last < 0 || cap(t.keys[last])-len(t.keys[last]) < need {
		// A chunk of its own is just large enough for its key: no entry starts past
		// idKeyChunkMax.
		size, lead := idKeyChunkMin, 1 // the first chunk's lead byte: no ref is 0
		if last >= 0 {
			size, lead = min(2*cap(t.keys[last]), idKeyChunkMax), 0
		}
		if last+1 >= 1<<idRefChunkBits {
			panic("sortkeys: id table full")
		}
		t.keys = append(t.keys, make([]byte, lead, max(size, lead+need)))
		last++
	}
	c := t.keys[last]
	ref := uint32(last)<<idRefOffBits | uint32(len(c))
	c = binary.LittleEndian.AppendUint32(c, uint32(lid))
	c = binary.AppendUvarint(c, uint64(len(key)))
	t.keys[last] = append(c, key...)
	return ref
}

// rebuild moves every slot into a table of size slots. It reads no key entry.
func (t *idTable) rebuild(size int) {
	old := t.slots
	t.slots, t.n = make([]idSlot, size), 0
	mask := uint32(size - 1)
	for _, s := range old {
		if s.ref == 0 {
			continue
		}
		i := s.hash & mask
		for t.slots[i].ref != 0 {
			i = (i + 1) & mask
		}
		t.slots[i] = s
		t.n++
	}
}
