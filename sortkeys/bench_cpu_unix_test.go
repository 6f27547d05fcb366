//go:build unix

package sortkeys

import (
	"syscall"
	"testing"
)

// processCPU is the CPU time the process has used so far (user + system, all threads, the
// garbage collector's included), in nanoseconds; ok is false when it cannot be read.
func processCPU() (ns int64, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}

// processFaults is the number of page faults the process has taken so far that needed no I/O:
// mostly first touches of memory the kernel has just handed out. ok is false when it cannot be
// read.
func processFaults() (n int64, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return int64(ru.Minflt), true
}

// BenchmarkFreshPages maps 64 MiB of anonymous memory and writes one byte to each 4 KiB page:
// what the kernel (and, in a virtual machine, the host) charges for memory a process touches for
// the first time. A replay keeps nearly everything it allocates, so a long one takes most of its
// memory fresh; ns/page times the replay's faults/event is that share of its ns/event.
func BenchmarkFreshPages(b *testing.B) {
	const size, page = 64 << 20, 4096
	for b.Loop() {
		m, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
		if err != nil {
			b.Skip("anonymous mmap:", err)
		}
		for i := 0; i < size; i += page {
			m[i] = 1
		}
		if err := syscall.Munmap(m); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size/page), "ns/page")
}
