package sortkeys

import "unsafe"

// prefetch asks the processor to start loading the cache line at p (PREFETCHT0) and returns at
// once; p is only a hint and is never dereferenced.
//
//go:noescape
func prefetch(p unsafe.Pointer)
