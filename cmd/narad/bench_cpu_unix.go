//go:build unix

package main

import (
	"syscall"
	"time"
)

// processCPU is the user+system CPU time this process has used (0 if the
// system does not say).
func processCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &usage); err != nil {
		return 0
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
