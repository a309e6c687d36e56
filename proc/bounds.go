package proc

import "time"

// Bounds of the harness, with their unit last.
const (
	// MetricsBytesMax bounds a scraped /metrics page.
	MetricsBytesMax = 16 << 20
	// LogTailBytes is how much of a node's log a failure quotes.
	LogTailBytes = 4096
	// LogLineBytesMax bounds one line of a node's log when it is read (a
	// JSON record is a few hundred bytes; a panic's lines are short).
	LogLineBytesMax = 1 << 20
	// ProbeTimeout bounds one probe of a node (/readyz, /metrics) unless
	// the caller gives its own client.
	ProbeTimeout = 3 * time.Second
	// PollInterval is the pause between two probes of a condition.
	PollInterval = 100 * time.Millisecond
	// portLow and portHigh bound the ports FreeAddr hands out: below
	// Linux's default ephemeral range (32768-60999), from which the kernel
	// picks the local port of every outgoing connection and of a bind to
	// port 0, and above the well-known and registered-and-busy ports.
	portLow  = 20000
	portHigh = 32768
	// freePortTriesMax bounds FreeAddr's draws of a port it can bind.
	freePortTriesMax = 1000
)
