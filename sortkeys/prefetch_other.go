//go:build !amd64

package sortkeys

import "unsafe"

// prefetch is a hint that only amd64 acts on (prefetch_amd64.s).
func prefetch(unsafe.Pointer) {}
