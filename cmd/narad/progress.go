package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressInterval is how often a long operation (pub --count, the
// phases of bench) prints how far it got. An operation shorter than this
// prints nothing more than its final line.
const progressInterval = 5 * time.Second

// progress prints "LABEL: N of TOTAL (R msg/s)" to w at each tick while
// an operation runs, so a long run shows that it is alive and how fast it
// goes. It writes to stderr, never to the report on stdout.
type progress struct {
	w     io.Writer
	label string
	total int
	// done reports how many of total are finished; called from the
	// printing goroutine, so it must be safe for concurrent use.
	done  func() int
	start time.Time
	// stop ends the printing goroutine; ended waits for it.
	stop  chan struct{}
	ended sync.WaitGroup
}

// startProgress prints a progress line at every tick until Stop. ticks
// is a ticker's channel (newProgressTicker in production).
func startProgress(w io.Writer, label string, total int, done func() int, ticks <-chan time.Time) *progress {
	p := &progress{w: w, label: label, total: total, done: done, start: time.Now(), stop: make(chan struct{})}
	p.ended.Go(func() {
		for {
			select {
			case now := <-ticks:
				fmt.Fprintln(p.w, p.line(now))
			case <-p.stop:
				return
			}
		}
	})
	return p
}

// startProgressEvery is startProgress on a ticker of progressInterval.
func startProgressEvery(w io.Writer, label string, total int, done func() int) *progress {
	ticker := time.NewTicker(progressInterval)
	p := startProgress(w, label, total, done, ticker.C)
	p.ended.Go(func() {
		<-p.stop
		ticker.Stop()
	})
	return p
}

// startProgress prints the progress of an operation on the app's stderr
// at the app's progress ticks (every progressInterval by default) until
// Stop.
func (a *app) startProgress(label string, total int, done func() int) *progress {
	if a.progressTicks != nil {
		return startProgress(a.stderr, label, total, done, a.progressTicks)
	}
	return startProgressEvery(a.stderr, label, total, done)
}

// line is the progress as of now.
func (p *progress) line(now time.Time) string {
	done := p.done()
	return fmt.Sprintf("%s: %d of %d (%s msg/s)", p.label, done, p.total, formatRate(done, now.Sub(p.start)))
}

// Stop ends the printing; no line is printed after it returns.
func (p *progress) Stop() {
	close(p.stop)
	p.ended.Wait()
}
