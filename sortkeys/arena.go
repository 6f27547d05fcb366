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
