package peer

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Drain returns once everything Send took was written: a transport
// closed right after it has lost nothing it was given (a node's last
// answers reach their peers when it stops). Against a peer that never
// answers, it gives up at its bound and says so.
func TestDrainWritesWhatWasQueuedBeforeClose(t *testing.T) {
	checkGoroutinesEnd(t)
	cluster := startCluster(t, "a", "b")
	sent := sendStream(t, cluster["a"], "a", "b", 100)
	require.True(t, cluster["a"].Drain(waitMax), "everything settles")
	require.Zero(t, cluster["a"].unsettled())
	require.NoError(t, cluster["a"].Close())
	require.Equal(t, sent, receiveFrom(t, cluster["b"].inbox, len(sent))["a"], "nothing lost to the close")
	stats := cluster["a"].Stats().Peers["b"]
	require.Equal(t, uint64(len(sent)), stats.Sent)
	require.Zero(t, stats.Dropped)

	silent := startTransport(t, testConfig("c", nil))
	require.NoError(t, silent.SetPeer("d", "127.0.0.1:1")) // nothing listens there
	sendStream(t, silent, "c", "d", 1)
	require.True(t, silent.Drain(waitMax), "an unreachable peer's messages are dropped, which settles them")
	require.NotZero(t, silent.Stats().Peers["d"].Dropped)
}

// Drain gives up at its bound while a message is still queued: a writer
// waiting out its reconnect backoff holds what was sent meanwhile.
func TestDrainGivesUpAtItsBound(t *testing.T) {
	checkGoroutinesEnd(t)
	cfg := testConfig("c", nil)
	cfg.ReconnectBackoffMin, cfg.ReconnectBackoffMax = waitMax, waitMax
	silent := startTransport(t, cfg)
	require.NoError(t, silent.SetPeer("d", "127.0.0.1:1"))
	sendStream(t, silent, "c", "d", 1)
	requireEventually(t, func() bool { return silent.Stats().Peers["d"].DialFailures > 0 }, "the first dial failed")
	sendStream(t, silent, "c", "d", 1) // queued behind the backoff
	require.False(t, silent.Drain(50*time.Millisecond))
	require.NotZero(t, silent.unsettled())
}
