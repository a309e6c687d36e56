package host

import (
	"context"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// Bounds of the garbage collector's pacing (docs/operations.md#memory).
const (
	// gcHeadroomBytes is the heap growth allowed between collections when
	// the live heap is small: a broker's live heap is a few MiB, so the
	// runtime's default (collect when the heap doubles) collected about
	// ten times a second under load and cost 10-15 % of the CPU of a
	// request.
	gcHeadroomBytes = 64 << 20
	// gcPercentMin and gcPercentMax bound the GC percent the tuner sets:
	// never below the runtime's default, never a heap goal above
	// (1 + gcPercentMax/100) times the live heap.
	gcPercentMin = 100
	gcPercentMax = 800
	// gcTuneInterval is how often the tuner reads the live heap.
	gcTuneInterval = time.Second
	// gcLiveHeapMetric is the runtime's count of live heap bytes after
	// the last collection.
	gcLiveHeapMetric = "/gc/heap/live:bytes"
)

// tuneGC keeps the heap goal near the live heap plus gcHeadroomBytes
// (within gcPercentMin..gcPercentMax) until ctx ends. It does nothing
// when the operator set GOGC: their choice stands.
func tuneGC(ctx context.Context) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	sample := []metrics.Sample{{Name: gcLiveHeapMetric}}
	ticker := time.NewTicker(gcTuneInterval)
	defer ticker.Stop()
	applied := 0
	for {
		metrics.Read(sample)
		if sample[0].Value.Kind() == metrics.KindUint64 {
			if percent := gcPercentFor(sample[0].Value.Uint64()); percent != applied {
				debug.SetGCPercent(percent)
				applied = percent
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// gcPercentFor is the GC percent whose heap goal is the live heap plus
// gcHeadroomBytes, within gcPercentMin..gcPercentMax.
func gcPercentFor(liveBytes uint64) int {
	if liveBytes == 0 {
		return gcPercentMax
	}
	return int(min(max(gcHeadroomBytes*100/liveBytes, gcPercentMin), gcPercentMax))
}
