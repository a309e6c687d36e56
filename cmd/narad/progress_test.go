package main

import (
	"bytes"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A progress line is printed at each tick with what is done so far and
// the rate since the start, and none after Stop.
func TestProgressPrintsAtEachTickUntilStopped(t *testing.T) {
	var out bytes.Buffer
	// Each line asks done once, from the printing goroutine, after its
	// tick was taken; the answers come in order so that no store of the
	// test can race with the goroutine's read.
	answers := []int{250, 600}
	var asked atomic.Int64
	ticks := make(chan time.Time)
	p := startProgress(&out, "produce", 1000, func() int { return answers[asked.Add(1)-1] }, ticks)
	ticks <- p.start.Add(5 * time.Second)
	ticks <- p.start.Add(10 * time.Second)
	p.Stop()
	require.Equal(t, []string{"produce: 250 of 1000 (50 msg/s)", "produce: 600 of 1000 (60 msg/s)"},
		strings.Split(strings.TrimSpace(out.String()), "\n"))
	select {
	case ticks <- time.Now():
		t.Fatal("a tick after Stop was taken")
	default:
	}
}

// tickAtRequest makes the fake broker hand the app one progress tick
// while it answers request number at, and answer that request only once
// the tick's line is written, so the line counts the requests answered
// before it. A command that takes no tick, or prints no line, fails the
// test instead of hanging it.
func tickAtRequest(t *testing.T, h *harness, broker *fakeBroker, at int) {
	ticks := make(chan time.Time)
	h.app.progressTicks = ticks
	stderr := &signalingWriter{w: h.stderr, wrote: make(chan struct{}, 1)}
	h.app.stderr = stderr
	broker.onRequest = func(count int) {
		if count != at {
			return
		}
		select { // forget writes made before the tick
		case <-stderr.wrote:
		default:
		}
		select {
		case ticks <- time.Now():
		case <-time.After(10 * time.Second):
			t.Errorf("request %d: the command took no progress tick", at)
			return
		}
		select {
		case <-stderr.wrote:
		case <-time.After(10 * time.Second):
			t.Errorf("request %d: the progress tick printed no line", at)
		}
	}
}

// signalingWriter passes writes to w, one at a time, and signals wrote
// after each.
type signalingWriter struct {
	mu    sync.Mutex
	w     io.Writer
	wrote chan struct{}
}

func (s *signalingWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, err := s.w.Write(b)
	select {
	case s.wrote <- struct{}{}:
	default:
	}
	return n, err
}

// pub --count prints its progress at each tick while it runs.
func TestPubCountPrintsProgress(t *testing.T) {
	h := newHarness(t)
	broker := produceBroker(t)
	tickAtRequest(t, h, broker, 4)
	h.againstOK(broker, "pub", "orders", "x", "--count", "6")
	lines := strings.Split(strings.TrimSpace(h.stderr.String()), "\n")
	require.Len(t, lines, 2, h.stderr.String())
	require.Regexp(t, `^pub: 3 of 6 \(\d+ msg/s\)$`, lines[0], "the tick came while the fourth request was being answered")
	require.Regexp(t, manySummary, lines[1]+"\n")
}

// bench prints the progress of its produce and consume phases on stderr,
// never on stdout, where the report (or its JSON) goes.
func TestBenchPrintsProgressOfEachPhaseOnStderr(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	tickAtRequest(t, h, broker, 4) // the first request reads the node's /metrics (bench_server.go)
	h.againstOK(broker, "bench", "orders", "--count", "5", "--workers", "1", "--json")
	require.Regexp(t, `(?m)^produce: 2 of 5 \(\d+ msg/s\)$`, h.stderr.String())
	require.NotContains(t, h.stdout.String(), "produce:")
}
