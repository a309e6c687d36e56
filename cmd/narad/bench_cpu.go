package main

import "time"

// clientCPU is the user+system CPU time the bench process had used when a
// phase began, so that the phase can report its client's CPU per message
// beside its rate: client and server share the machine's cores, so a
// costly client lowers the rate a server can show.
type clientCPU struct {
	// start is the process's CPU time at the phase's start; 0 where the
	// system does not report it.
	start time.Duration
}

func startClientCPU() clientCPU { return clientCPU{start: processCPU()} }

// microsPerMessage is the CPU the process used since the phase began, in
// µs per message; 0 when unknown or when no message was counted.
func (c clientCPU) microsPerMessage(messages int) float64 {
	used := processCPU() - c.start
	if c.start == 0 || used <= 0 || messages <= 0 {
		return 0
	}
	return float64(used.Microseconds()) / float64(messages)
}
