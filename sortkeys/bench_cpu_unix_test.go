//go:build unix

package sortkeys

import "syscall"

// processCPU is the CPU time the process has used so far (user + system, all threads, the
// garbage collector's included), in nanoseconds; ok is false when it cannot be read.
func processCPU() (ns int64, ok bool) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
