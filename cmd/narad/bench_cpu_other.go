//go:build !unix

package main

import "time"

// processCPU is unknown here: the bench reports no client CPU.
func processCPU() time.Duration { return 0 }
