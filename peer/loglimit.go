package peer

import (
	"log/slog"
	"sync"
	"time"
)

// logLimiter lets at most perSecond lines through in each one-second
// window and counts the rest; the next line let through reports how many
// were suppressed. Safe for concurrent use.
type logLimiter struct {
	// perSecond is fixed at creation, > 0.
	perSecond int
	// now reads the clock (replaced by tests).
	now func() time.Time
	// mu guards the window.
	mu sync.Mutex
	// windowStart begins the current window; logged counts its lines let
	// through; suppressed counts the lines dropped since the last one let
	// through.
	windowStart time.Time
	logged      int
	suppressed  int
}

func newLogLimiter(perSecond int) *logLimiter {
	assert(perSecond > 0, "log limiter of %d lines per second", perSecond)
	return &logLimiter{perSecond: perSecond, now: time.Now}
}

// allow reports whether a line may be logged now and, if so, how many
// were suppressed before it.
func (l *logLimiter) allow() (bool, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.windowStart) >= time.Second {
		l.windowStart, l.logged = now, 0
	}
	if l.logged >= l.perSecond {
		l.suppressed++
		return false, 0
	}
	l.logged++
	suppressed := l.suppressed
	l.suppressed = 0
	return true, suppressed
}

// warn logs a warning through the limiter.
func (l *logLimiter) warn(logger *slog.Logger, message string, args ...any) {
	ok, suppressed := l.allow()
	if !ok {
		return
	}
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	logger.Warn(message, args...)
}
