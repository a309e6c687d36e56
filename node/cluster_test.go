package node

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/storage"
)

// clusterHarness drives several nodes in one goroutine: Readys are
// persisted at once, envelopes delivered in order to their targets, and
// time advances only by tick. It checks the metastore wiring of the node
// (Raft messages out through Ready, in through Step); data forwarding
// between nodes is not part of it yet.
type clusterHarness struct {
	t       *testing.T
	nodes   map[string]*Node
	ids     []string
	nowMs   int64
	replies map[RequestID]Reply
	nextID  RequestID
}

func newClusterHarness(t *testing.T, size int) *clusterHarness {
	cryptotest.SetGlobalRandom(t, 42) // raft's election jitter
	c := &clusterHarness{t: t, nodes: map[string]*Node{}, nowMs: harnessStartMs, replies: map[RequestID]Reply{}}
	var peers []meta.Peer
	for i := range size {
		id := fmt.Sprintf("n%d", i+1)
		c.ids = append(c.ids, id)
		peers = append(peers, meta.Peer{ID: id, RaftID: uint64(i + 1), ClusterAddr: fmt.Sprintf("127.0.0.%d:7943", i+1)})
	}
	dir := t.TempDir()
	for i, id := range c.ids {
		cfg := DefaultConfig()
		cfg.NodeID, cfg.AdvertiseAddr, cfg.ClusterAddr = id, fmt.Sprintf("127.0.0.%d:7942", i+1), peers[i].ClusterAddr
		cfg.Meta = meta.DefaultConfig(id, peers)
		store, err := meta.OpenStore(filepath.Join(dir, id+".db"), meta.StoreOptions{NoSync: true})
		require.NoError(t, err)
		n, err := New(cfg, storage.NewMemFS(rand.New(rand.NewPCG(uint64(i), 1))), store, c.nowMs, nil)
		require.NoError(t, err)
		c.nodes[id] = n
		t.Cleanup(func() { _ = n.Abandon() })
	}
	return c
}

// settle handles every node's Ready and delivers every message until the
// cluster is quiet.
func (c *clusterHarness) settle() {
	for quiet := false; !quiet; {
		quiet = true
		for _, id := range c.ids {
			n := c.nodes[id]
			for n.HasReady() {
				quiet = false
				c.handle(n)
			}
		}
	}
}

func (c *clusterHarness) handle(n *Node) {
	rd := n.Ready()
	for _, s := range rd.Syncs {
		require.NoError(c.t, s.Run())
	}
	for _, r := range rd.Replies {
		c.replies[r.ID] = r
	}
	for _, env := range rd.Messages {
		require.NoError(c.t, c.nodes[env.To].Step(env))
	}
	n.Advance(rd)
}

func (c *clusterHarness) tick(deltaMs int64) {
	c.nowMs += deltaMs
	for _, id := range c.ids {
		c.nodes[id].Tick(c.nowMs)
	}
	c.settle()
}

func (c *clusterHarness) leader() (string, bool) {
	for _, id := range c.ids {
		if c.nodes[id].meta.IsLeader() {
			return id, true
		}
	}
	return "", false
}

// elect ticks until a leader exists and is a member (its own heartbeat
// applied). Followers' heartbeats reach the leader only once forwarding
// exists, so they are not members yet.
func (c *clusterHarness) elect() string {
	for range 200 {
		c.tick(100)
		leader, ok := c.leader()
		if !ok {
			continue
		}
		if _, member := c.nodes[leader].meta.State().Member(leader); member {
			return leader
		}
	}
	c.t.Fatal("no leader after 20 simulated seconds")
	return ""
}

func (c *clusterHarness) do(at string, req Request) Reply {
	c.nextID++
	c.nodes[at].Handle(c.nextID, req)
	c.settle()
	reply, ok := c.replies[c.nextID]
	require.True(c.t, ok, "no reply to %T at %s", req, at)
	return reply
}

// TestThreeNodesShareTopicsThroughTheMetastore: three nodes elect a
// leader through their Readys and Steps, a topic created on the leader
// reaches every replica with the same placement, a follower's replica
// answers reads, and a follower asked to create a topic says where the
// leader is (forwarding, and with it followers' heartbeats, arrives with
// the cluster).
func TestThreeNodesShareTopicsThroughTheMetastore(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()

	created := c.do(leader, CreateTopic{Name: "orders", Partitions: 6})
	require.NoError(t, created.Err)
	c.tick(100) // followers learn the commit index with the next heartbeat
	var placements [][]meta.Assignment
	for _, id := range c.ids {
		record, ok := c.nodes[id].meta.State().Topic("orders")
		require.True(t, ok, "%s's replica has the topic", id)
		placements = append(placements, record.Assignments)
	}
	require.Equal(t, placements[0], placements[1])
	require.Equal(t, placements[0], placements[2])
	require.Equal(t, leader, placements[0][0].Owner, "only the leader is a member yet: it owns every partition")

	follower := c.ids[slices.IndexFunc(c.ids, func(id string) bool { return id != leader })]
	refused := c.do(follower, CreateTopic{Name: "other"})
	require.Equal(t, CodeUnavailable, CodeOf(refused.Err))
	require.Contains(t, refused.Err.Error(), leader)

	page := c.do(follower, ListTopics{}).Result.(TopicPage)
	require.Equal(t, []string{"orders"}, topicNames(page), "reads come from the local replica")
	require.Equal(t, CodeNotOwner, CodeOf(c.do(follower, Produce{Topic: "orders", Records: []ProduceRecord{{Partition: 0, Payload: []byte("x")}}}).Err),
		"a follower does not write the leader's partition")
}
