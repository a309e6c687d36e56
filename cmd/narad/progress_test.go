package main

import (
	"bytes"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A progress line is printed at each tick with what is done so far and
// the rate since the start, and none after Stop.
func TestProgressPrintsAtEachTickUntilStopped(t *testing.T) {
	var out bytes.Buffer
	var done atomic.Int64
	ticks := make(chan time.Time)
	p := startProgress(&out, "produce", 1000, func() int { return int(done.Load()) }, ticks)
	done.Store(250)
	ticks <- p.start.Add(5 * time.Second)
	done.Store(600)
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
// while it answers request number at; the tick is taken (so its line is
// printed) before that request is answered. A command that takes no tick
// fails the test instead of hanging it.
func tickAtRequest(t *testing.T, h *harness, broker *fakeBroker, at int) {
	ticks := make(chan time.Time)
	h.app.progressTicks = ticks
	broker.onRequest = func(count int) {
		if count != at {
			return
		}
		select {
		case ticks <- time.Now():
		case <-time.After(10 * time.Second):
			t.Errorf("request %d: the command took no progress tick", at)
		}
	}
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
	tickAtRequest(t, h, broker, 3)
	h.againstOK(broker, "bench", "orders", "--count", "5", "--workers", "1", "--json")
	require.Regexp(t, `(?m)^produce: 2 of 5 \(\d+ msg/s\)$`, h.stderr.String())
	require.NotContains(t, h.stdout.String(), "produce:")
}
