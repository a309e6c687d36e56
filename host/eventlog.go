package host

import (
	"sync"
	"time"
)

// The log's bounds on node events (Metrics.Event).
const (
	// eventLogInterval is how often one kind of warning may be logged: the
	// node emits some per request (forward-timed-out, one for each forward
	// a flooded peer did not answer), and a line each buried the log. Past
	// one line per interval, the warnings of that kind are counted, and the
	// next line of the kind says how many were suppressed; the metrics
	// count every one.
	eventLogInterval = time.Second
	// eventLogKindsMax bounds the kinds the limiter remembers: the node's
	// kinds are a fixed set of a few dozen. Past the bound, a kind not yet
	// remembered is logged unlimited.
	eventLogKindsMax = 256
)

// eventLogLimiter lets one warning of each kind through per
// eventLogInterval and counts the rest. Its zero value is ready. Safe for
// concurrent use.
type eventLogLimiter struct {
	// now reads the clock when set (by tests), else time.Now does.
	now func() time.Time
	// mu guards kinds.
	mu sync.Mutex
	// kinds holds, per kind logged (at most eventLogKindsMax), when its
	// last line was, and how many of its warnings were suppressed since.
	kinds map[string]*eventLogWindow
}

// eventLogWindow is one kind's state in the limiter.
type eventLogWindow struct {
	loggedAt   time.Time
	suppressed uint64
}

// allow reports whether a warning of kind may be logged now and, if so,
// how many of its kind were suppressed before it.
func (l *eventLogLimiter) allow(kind string) (bool, uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	window, known := l.kinds[kind]
	if !known {
		if l.kinds == nil {
			l.kinds = map[string]*eventLogWindow{}
		}
		if len(l.kinds) < eventLogKindsMax {
			l.kinds[kind] = &eventLogWindow{loggedAt: now}
		}
		return true, 0
	}
	if now.Sub(window.loggedAt) < eventLogInterval {
		window.suppressed++
		return false, 0
	}
	suppressed := window.suppressed
	window.loggedAt, window.suppressed = now, 0
	return true, suppressed
}
