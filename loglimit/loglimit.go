// Package loglimit bounds how many log lines of one kind are written per
// second, so that a flood of one failure (a forward timed out for each
// request a flooded peer did not answer, a handshake failed for each
// connection of a scan) cannot bury a log. Past the bound, the lines of
// the kind are counted, and the next one let through says how many were
// left out. It writes no line itself: callers ask Allow, then log.
//
// Invariants: per kind, at most perSecond lines are let through in a
// window of one second that begins with the first line after the last
// window ended; the kinds remembered are at most KindsMax, and a kind
// past them is let through unlimited rather than lost.
package loglimit

import (
	"fmt"
	"sync"
	"time"
)

// KindsMax bounds the kinds a Limiter remembers: the callers' kinds are
// fixed sets of a few dozen at most.
const KindsMax = 256

// Limiter lets at most perSecond lines of each kind through per
// one-second window and counts the rest. Safe for concurrent use.
type Limiter struct {
	// perSecond (> 0) and now (the clock) are fixed at creation.
	perSecond int
	now       func() time.Time
	// mu guards kinds, at most KindsMax of them.
	mu    sync.Mutex
	kinds map[string]*window
}

// window is one kind's state: when its window began, the lines let
// through in it, and those suppressed since the last one let through.
type window struct {
	start      time.Time
	logged     int
	suppressed uint64
}

// New returns a Limiter of perSecond lines per kind, on the wall clock.
func New(perSecond int) *Limiter { return NewWithClock(perSecond, time.Now) }

// NewWithClock returns a Limiter that reads the time from now (tests).
func NewWithClock(perSecond int, now func() time.Time) *Limiter {
	if perSecond <= 0 {
		panic(fmt.Sprintf("loglimit: %d lines per second", perSecond))
	}
	return &Limiter{perSecond: perSecond, now: now, kinds: map[string]*window{}}
}

// Allow reports whether a line of kind may be logged now and, if so, how
// many lines of the kind were suppressed before it.
func (l *Limiter) Allow(kind string) (ok bool, suppressed uint64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	w, known := l.kinds[kind]
	if !known {
		if len(l.kinds) >= KindsMax {
			return true, 0
		}
		w = &window{start: now}
		l.kinds[kind] = w
	}
	if now.Sub(w.start) >= time.Second {
		w.start, w.logged = now, 0
	}
	if w.logged >= l.perSecond {
		w.suppressed++
		return false, 0
	}
	w.logged++
	suppressed, w.suppressed = w.suppressed, 0
	return true, suppressed
}
