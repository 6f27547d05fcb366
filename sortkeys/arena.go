package sortkeys

// arena hands out values from chunks: a replay keeps nearly everything it creates until it ends,
// so a chunk per 256 values means far fewer allocations for the garbage collector to track, and
// neighbours in the list tend to be neighbours in memory.
type arena[T any] struct{ buf []T }

const arenaChunk = 256

func (a *arena[T]) alloc() *T {
	if len(a.buf) == cap(a.buf) {
		a.buf = make([]T, 0, arenaChunk)
	}
	a.buf = a.buf[:len(a.buf)+1]
	return &a.buf[len(a.buf)-1]
}

// numbered holds values by index in chunks of numberedChunk that are never moved, where one slice
// grown by append allocates about twice what it keeps and copies it at each doubling. Index 0 is
// taken when it is made: an index of 0 can mean none.
type numbered[T any] struct {
	chunks [][]T
	n      int32
}

const numberedChunk = 1024

func newNumbered[T any]() numbered[T] {
	return numbered[T]{chunks: [][]T{make([]T, numberedChunk)}, n: 1}
}

// at is the value of index i.
func (s *numbered[T]) at(i int32) *T {
	u := uint32(i) // unsigned: the chunk and the offset are a shift and a mask
	return &s.chunks[u/numberedChunk][u%numberedChunk]
}

// add returns the index of a new zero value.
func (s *numbered[T]) add() int32 {
	if s.n%numberedChunk == 0 {
		s.chunks = append(s.chunks, make([]T, numberedChunk))
	}
	s.n++
	return s.n - 1
}
