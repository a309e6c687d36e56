package proc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
)

// ErrNoFreePort is returned when FreeAddr found no port it could bind.
var ErrNoFreePort = errors.New("no free loopback port")

// handedOut holds the ports FreeAddr returned in this process, so that it
// never returns one twice (two nodes of one test would collide).
var handedOut = struct {
	mu    sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// FreeAddr returns a loopback address whose port was free a moment ago.
// The port lies outside the kernel's ephemeral range (see portLow), so the
// kernel does not give it to an outgoing connection before the node binds
// it; another process that picks ports the same way may still race for
// it, which a node reports as ErrAddrInUse.
func FreeAddr() (string, error) {
	handedOut.mu.Lock()
	defer handedOut.mu.Unlock()
	for range freePortTriesMax {
		port := portLow + rand.IntN(portHigh-portLow)
		if handedOut.ports[port] {
			continue
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		listener, err := net.Listen("tcp", addr)
		if err != nil {
			continue
		}
		listener.Close()
		handedOut.ports[port] = true
		return addr, nil
	}
	return "", ErrNoFreePort
}

// SleepContext pauses for d or until ctx ends (then it returns ctx's
// error); with d <= 0 it only reports whether ctx has ended.
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// LogTail returns the last LogTailBytes of a log file, or why it could not
// be read.
func LogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > LogTailBytes {
		data = data[len(data)-LogTailBytes:]
	}
	return string(data)
}

// Build compiles the narad binary of the module that holds the working
// directory into dir and returns its path.
func Build(dir string) (string, error) {
	binary := filepath.Join(dir, "narad")
	output, err := exec.Command("go", "build", "-o", binary, "narad/cmd/narad").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("build narad: %w: %s", err, output)
	}
	return binary, nil
}

// Percentile returns the nearest-rank q quantile (0 <= q <= 1) of
// durations, or 0 for none. durations is not changed.
func Percentile(durations []time.Duration, q float64) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(durations))
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
}
