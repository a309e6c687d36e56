package node

import (
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
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

// A node started to join under the id of a member whose decommission is
// complete (and which the leader has since forgotten) is told so by the
// members it asks, at the address its Join gives: the members' replicas
// record no address for a forgotten id, so the tell used to be dropped,
// and the joiner waited, not ready, its warnings guessing at the cause
// (an outside audit met it). It says join-refused once, asks no more,
// and its readiness names the reused id.
func TestAJoinerUnderARetiredIdIsToldSo(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader, reused := forgetAfterDecommission(t, c)
	require.NoError(t, c.nodes[reused].Abandon())

	var peers []meta.Peer
	for _, id := range c.except(reused) {
		peers = append(peers, c.configs[id].Meta.Peers[slices.IndexFunc(c.configs[id].Meta.Peers, func(p meta.Peer) bool { return p.ID == id })])
	}
	peers = append(peers, meta.Peer{ID: reused, RaftID: meta.RaftIDOf(reused), ClusterAddr: "127.0.0.99:7943"})
	cfg := clusterConfig(reused, len(peers)-1, peers)
	cfg.Meta.Join = true
	c.configs[reused] = cfg
	c.disks[reused] = storage.NewMemFS(rand.New(rand.NewPCG(7, 7)))
	c.metaPaths[reused] = filepath.Join(t.TempDir(), "fresh.db")
	events := &detailRecorder{}
	c.observers = map[string]Observer{reused: events}
	c.start(reused)

	c.tick(joinRetryMs)
	require.Equal(t, "127.0.0.99:7943", c.nodes[leader].ClusterAddrs()[reused],
		"a member addresses a retired id at the address its Join gives")
	c.tick(c.configs[reused].MemberDeadAfterMs)

	var refused []string
	for _, event := range events.events {
		require.False(t, strings.HasPrefix(event, "join-waiting: "), "a joiner told of its retired id does not guess: %s", event)
		if strings.HasPrefix(event, "join-refused: ") {
			refused = append(refused, event)
		}
	}
	require.Len(t, refused, 1, "said once: %v", events.events)
	require.Contains(t, refused[0], "ids are never reused")
	require.Contains(t, refused[0], "a new node id")
	require.ErrorContains(t, c.nodes[reused].Serving(), "cannot join under it")

	sent := 0
	c.drop = func(env msg.Envelope) bool {
		if _, join := env.Message.(msg.Join); join && env.From == reused {
			sent++
		}
		return false
	}
	c.tick(2 * joinRetryMs)
	require.Zero(t, sent, "a joiner told its id is retired asks no more")
	c.tick(retiredAskerKeepMs)
	require.NotEqual(t, "127.0.0.99:7943", c.nodes[leader].ClusterAddrs()[reused],
		"the address a retired id's Join gave is forgotten once it asks no more")
}
