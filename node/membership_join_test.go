package node

import (
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/storage"
)

// A joining node that no member adds (its peer list names no running
// node) says so in its log every joinWaitWarnEveryMs, naming the peers it
// asks: it used to go silent after its transport's first failed dial,
// and its readiness said only that no leader was known. The warning also
// names the other cause an operator meets: an id that a removed member
// had, which the leader refuses (join-refused in its log only).
func TestAJoinerNobodyAddsSaysSo(t *testing.T) {
	peers := []meta.Peer{{ID: "n1", RaftID: meta.RaftIDOf("n1"), ClusterAddr: "127.0.0.1:7943"},
		{ID: "n6", RaftID: meta.RaftIDOf("n6"), ClusterAddr: "127.0.0.6:7943"}}
	cfg := clusterConfig("n6", 1, peers)
	cfg.Meta.Join = true
	store, err := meta.OpenStore(filepath.Join(t.TempDir(), "n6.db"), meta.StoreOptions{NoSync: true})
	require.NoError(t, err)
	events := &detailRecorder{}
	n, err := New(cfg, storage.NewMemFS(rand.New(rand.NewPCG(6, 6))), store, harnessStartMs, events)
	require.NoError(t, err)
	defer func() { _ = n.Abandon() }()

	waits := func() (said []string) {
		for _, event := range events.events {
			if strings.HasPrefix(event, "join-waiting: ") {
				said = append(said, event)
			}
		}
		return said
	}
	for nowMs := harnessStartMs; nowMs < harnessStartMs+joinWaitWarnEveryMs; nowMs += 100 {
		n.Tick(nowMs)
		for n.HasReady() {
			n.Advance(n.Ready())
		}
	}
	require.Empty(t, waits(), "not before a period of asking")
	for nowMs := harnessStartMs + joinWaitWarnEveryMs; nowMs <= harnessStartMs+2*joinWaitWarnEveryMs+joinRetryMs; nowMs += 100 {
		n.Tick(nowMs)
		for n.HasReady() {
			n.Advance(n.Ready())
		}
	}
	said := waits()
	require.Len(t, said, 2, "once per period")
	require.Contains(t, said[0], "n1@127.0.0.1:7943")
	require.Contains(t, said[0], "check cluster.peers")
	require.Contains(t, said[0], "no member ever had the id n6", "a reused id is refused by the leader alone: the joiner names the cause too")
}
