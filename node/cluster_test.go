package node

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"testing/cryptotest"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// clusterHarness drives several nodes in one goroutine: Readys are
// persisted at once, envelopes delivered in order to their targets, and
// time advances only by tick. A node can be cut off: messages to and from
// it are dropped, as a crash or a partition would.
type clusterHarness struct {
	t       *testing.T
	nodes   map[string]*Node
	ids     []string
	nowMs   int64
	replies map[msg.RequestID]msg.Reply
	nextID  msg.RequestID
	// cut holds the nodes whose messages are dropped, both ways.
	cut map[string]bool
	// forwarded counts ForwardRequests delivered, by receiver.
	forwarded map[string]int
	// drop, when set, drops the envelopes it selects (a one-way fault).
	drop func(msg.Envelope) bool
	// holdJobs, when set, keeps the nodes' jobs in held instead of
	// running them, as a driver whose job is still on its goroutine.
	holdJobs bool
	held     []heldJob
	// observers, when set before a (re)start, receive each node's events.
	observers map[string]Observer
	// disks, metaPaths and configs let restart bring a node back.
	disks     map[string]*storage.MemFS
	metaPaths map[string]string
	configs   map[string]Config
}

func clusterConfig(id string, index int, peers []meta.Peer) Config {
	cfg := DefaultConfig()
	cfg.HandleKey = testHandleKey
	cfg.NodeID, cfg.AdvertiseAddr, cfg.ClusterAddr = id, fmt.Sprintf("127.0.0.%d:7942", index+1), peers[index].ClusterAddr
	cfg.Meta = meta.DefaultConfig(id, peers)
	cfg.MemberHeartbeatIntervalMs, cfg.MemberDeadAfterMs = 500, 3_000
	cfg.ForwardTimeoutMs, cfg.PeerDownMs = 1_000, 2_000
	return cfg
}

func newClusterHarness(t *testing.T, size int) *clusterHarness {
	cryptotest.SetGlobalRandom(t, 42) // raft's election jitter
	c := &clusterHarness{t: t, nodes: map[string]*Node{}, nowMs: harnessStartMs, replies: map[msg.RequestID]msg.Reply{},
		cut: map[string]bool{}, forwarded: map[string]int{},
		disks: map[string]*storage.MemFS{}, metaPaths: map[string]string{}, configs: map[string]Config{}}
	var peers []meta.Peer
	for i := range size {
		id := fmt.Sprintf("n%d", i+1)
		c.ids = append(c.ids, id)
		peers = append(peers, meta.Peer{ID: id, RaftID: meta.RaftIDOf(id), ClusterAddr: fmt.Sprintf("127.0.0.%d:7943", i+1)})
	}
	dir := t.TempDir()
	for i, id := range c.ids {
		c.disks[id] = storage.NewMemFS(rand.New(rand.NewPCG(uint64(i), 1)))
		c.metaPaths[id] = filepath.Join(dir, id+".db")
		c.configs[id] = clusterConfig(id, i, peers)
		c.start(id)
	}
	t.Cleanup(func() {
		for _, n := range c.nodes {
			if n != nil {
				_ = n.Abandon()
			}
		}
	})
	return c
}

// start recovers a node from its disk and metastore file.
func (c *clusterHarness) start(id string) {
	store, err := meta.OpenStore(c.metaPaths[id], meta.StoreOptions{NoSync: true})
	require.NoError(c.t, err)
	n, err := New(c.configs[id], c.disks[id], store, c.nowMs, c.observers[id])
	require.NoError(c.t, err)
	c.nodes[id] = n
}

// reconfigure restarts every node from its disk with its configuration
// changed by change.
func (c *clusterHarness) reconfigure(change func(*Config)) {
	for _, id := range c.ids {
		cfg := c.configs[id]
		change(&cfg)
		c.configs[id] = cfg
		require.NoError(c.t, c.nodes[id].Abandon())
		c.start(id)
	}
}

// crash drops a node as a kill would (unsynced writes lost) and starts it
// again from what is durable.
func (c *clusterHarness) crash(id string) {
	require.NoError(c.t, c.nodes[id].Abandon())
	c.disks[id].Crash()
	c.start(id)
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

func (c *clusterHarness) handle(n *Node) { c.finish(n, n.Ready()) }

// finish handles a Ready taken from n as a driver does.
func (c *clusterHarness) finish(n *Node, rd Ready) {
	c.deliver(rd.ProduceForwards) // before the syncs, as the host sends them
	for _, r := range rd.EarlyReplies {
		c.replies[r.ID] = r
	}
	for _, s := range rd.Syncs {
		require.NoError(c.t, s.Run())
	}
	for _, r := range rd.Replies {
		c.replies[r.ID] = r
	}
	c.deliver(rd.Messages)
	n.Advance(rd)
	for _, job := range rd.Jobs {
		if c.holdJobs {
			c.held = append(c.held, heldJob{node: n, job: job})
			continue
		}
		job.Run()
		n.JobDone(job)
	}
}

// deliver steps envelopes into their nodes, unless cut off or dropped.
func (c *clusterHarness) deliver(envelopes []msg.Envelope) {
	for _, env := range envelopes {
		if c.cut[env.From] || c.cut[env.To] || (c.drop != nil && c.drop(env)) {
			continue
		}
		if _, ok := env.Message.(msg.ForwardRequest); ok {
			c.forwarded[env.To]++
		}
		err := c.nodes[env.To].Step(env)
		if _, isRaft := env.Message.(msg.RaftMessage); !isRaft {
			require.NoError(c.t, err) // raft refuses messages of removed voters, as it should
		}
	}
}

// heldJob is a job the harness has not run yet, and the node it is for.
type heldJob struct {
	node *Node
	job  Job
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
		if c.nodes[id].meta.IsLeader() && !c.cut[id] {
			return id, true
		}
	}
	return "", false
}

// elect ticks until a leader exists and every node is an alive member.
func (c *clusterHarness) elect() string {
	for range 200 {
		c.tick(100)
		leader, ok := c.leader()
		if ok && c.allAlive(leader) {
			return leader
		}
	}
	c.t.Fatal("no leader with every member alive after 20 simulated seconds")
	return ""
}

// except lists the cluster's nodes but id, in id order.
func (c *clusterHarness) except(id string) []string {
	var others []string
	for _, other := range c.ids {
		if other != id {
			others = append(others, other)
		}
	}
	return others
}

// cutUntilMarkedDead cuts ids off the network and ticks until the leader's
// metastore holds each of them dead.
func (c *clusterHarness) cutUntilMarkedDead(leader string, ids ...string) {
	for _, id := range ids {
		c.cut[id] = true
	}
	c.tickUntil(100, 100, func() bool {
		for _, id := range ids {
			if m, _ := c.nodes[leader].meta.State().Member(id); m.Alive {
				return false
			}
		}
		return true
	})
}

// requireMetastoreCommits fails the test unless the cluster still has a
// leader that commits a topic creation, after drained was decommissioned.
func (c *clusterHarness) requireMetastoreCommits(drained string) {
	now, ok := c.leader()
	require.True(c.t, ok, "the metastore lost its leader")
	_, voter := c.nodes[now].meta.State().PeerByNodeID(drained)
	reply := c.await(c.send(now, msg.CreateTopic{Name: "after", Partitions: 3}), 100, 100)
	require.NoError(c.t, reply.Err, "the metastore cannot commit (drained node still a voter: %t; voters %v)",
		voter, c.nodes[now].meta.State().ConfState().Voters)
}

func (c *clusterHarness) allAlive(at string) bool {
	for _, id := range c.ids {
		if m, ok := c.nodes[at].meta.State().Member(id); !ok || !m.Alive {
			return false
		}
	}
	return true
}

// electWithTopic elects a leader, creates a topic through it and lets the
// topic reach every replica; it returns the leader.
func (c *clusterHarness) electWithTopic(name string, partitions int) string {
	leader := c.elect()
	require.NoError(c.t, c.do(leader, msg.CreateTopic{Name: name, Partitions: partitions}).Err)
	c.tick(100)
	return leader
}

// send hands a request to a node without settling.
func (c *clusterHarness) send(at string, req msg.Request) msg.RequestID {
	c.nextID++
	c.nodes[at].Handle(c.nextID, req)
	return c.nextID
}

func (c *clusterHarness) do(at string, req msg.Request) msg.Reply {
	id := c.send(at, req)
	c.settle()
	reply, ok := c.replies[id]
	require.True(c.t, ok, "no reply to %T at %s", req, at)
	return reply
}

// await ticks until the request is answered.
func (c *clusterHarness) await(id msg.RequestID, stepMs int64, steps int) msg.Reply {
	for range steps {
		if reply, ok := c.replies[id]; ok {
			return reply
		}
		c.tick(stepMs)
	}
	reply, ok := c.replies[id]
	require.True(c.t, ok, "request %d unanswered", id)
	return reply
}

// owners returns the placement of a topic as node at sees it.
func (c *clusterHarness) owners(at, topicName string) []string {
	record, ok := c.nodes[at].meta.State().Topic(topicName)
	require.True(c.t, ok)
	var owners []string
	for _, a := range record.Assignments {
		owners = append(owners, a.Owner)
	}
	return owners
}

// partitionsOwned counts the partitions of the topics each node owns, as
// node at sees the placement.
func (c *clusterHarness) partitionsOwned(at string, topicNames ...string) map[string]int {
	owned := map[string]int{}
	for _, name := range topicNames {
		for _, owner := range c.owners(at, name) {
			owned[owner]++
		}
	}
	return owned
}

// otherThan returns the first node id that is none of the given ones.
func (c *clusterHarness) otherThan(ids ...string) string {
	for _, id := range c.ids {
		if !slices.Contains(ids, id) {
			return id
		}
	}
	c.t.Fatal("no other node")
	return ""
}

func producePinned(topicName string, partition int, payload string) msg.Produce {
	return msg.Produce{Topic: topicName, Records: []msg.ProduceRecord{{Partition: partition, Payload: []byte(payload)}}}
}

// TestThreeNodesShareTopicsThroughTheMetastore: three nodes elect a
// leader, every node heartbeats (followers through raft's proposal
// forwarding) and becomes a member; a topic created through a follower
// is placed over all three, and the follower reads its own write at once.
func TestThreeNodesShareTopicsThroughTheMetastore(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	follower := c.otherThan(leader)

	created := c.do(follower, msg.CreateTopic{Name: "orders", Partitions: 6})
	require.NoError(t, created.Err)
	detail := c.do(follower, msg.GetTopic{Name: "orders", Partition: msg.PartitionNone})
	require.NoError(t, detail.Err, "the proposer applied the entry before answering")
	c.tick(100) // the others learn the commit index with the next heartbeat
	placement := c.owners(c.ids[0], "orders")
	for _, id := range c.ids {
		require.Equal(t, placement, c.owners(id, "orders"), "%s's replica has the same placement", id)
	}
	for _, id := range c.ids {
		require.Equal(t, 2, countOf(placement, id), "six partitions over three live nodes: two each")
	}
	page := c.do(c.otherThan(leader, follower), msg.ListTopics{}).Result.(msg.TopicPage)
	require.Equal(t, []string{"orders"}, topicNames(page), "reads come from the local replica")
}

func countOf(values []string, value string) int {
	count := 0
	for _, v := range values {
		if v == value {
			count++
		}
	}
	return count
}

// TestProduceThroughAnyNodeLandsAtTheOwner: a produce sent to any node is
// written by the partition's owner only, answered with where it landed,
// and readable by replay through any node.
func TestProduceThroughAnyNodeLandsAtTheOwner(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	for partition := range 6 {
		for _, at := range c.ids {
			payload := fmt.Sprintf("p%d-via-%s", partition, at)
			reply := c.do(at, producePinned("t", partition, payload))
			require.NoError(t, reply.Err)
			placement := reply.Result.(msg.ProduceResult).Records[0]
			require.Equal(t, partition, placement.Partition)
			replayed := c.do(c.otherThan(at), msg.Replay{Topic: "t", Partition: partition, Offset: placement.Offset})
			require.NoError(t, replayed.Err)
			require.Equal(t, payload, string(replayed.Result.(msg.ReplayResult).Message.Payload))
		}
		for _, id := range c.ids {
			_, open := c.nodes[id].partitions[partitionKey{"t", partition}]
			require.Equal(t, id == owners[partition], open, "only the owner %s holds partition %d", owners[partition], partition)
		}
	}
}

// TestBatchProduceSpanningOwnersAnswersOnce: one batch whose records hash
// to partitions of every node is split by owner and answered once, every
// placement filled in request order.
func TestBatchProduceSpanningOwnersAnswersOnce(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.electWithTopic("t", 6)
	var records []msg.ProduceRecord
	for i := range 60 {
		records = append(records, msg.ProduceRecord{Partition: msg.PartitionNone, Key: fmt.Appendf(nil, "key-%d", i), Payload: fmt.Appendf(nil, "v%d", i)})
	}
	reply := c.do(c.ids[0], msg.Produce{Topic: "t", Records: records, Batch: true})
	require.NoError(t, reply.Err)
	placements := reply.Result.(msg.ProduceResult).Records
	require.Len(t, placements, 60)
	seen := map[int]bool{}
	for i, placement := range placements {
		seen[placement.Partition] = true
		got := c.do(c.ids[1], msg.Replay{Topic: "t", Partition: placement.Partition, Offset: placement.Offset})
		require.Equal(t, fmt.Sprintf("v%d", i), string(got.Result.(msg.ReplayResult).Message.Payload))
	}
	require.Len(t, seen, 6, "sixty keys reach every partition")
	require.Positive(t, c.forwarded[c.ids[1]]+c.forwarded[c.ids[2]], "parts went to the other owners")
}

// TestConsumeAndAckAcrossNodes: records on another node's partitions are
// consumed through a node that owns none of them, acked through a third
// node, and the owner's committed offset moves.
func TestConsumeAndAckAcrossNodes(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	consumer := owners[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != consumer })
	require.NoError(t, c.do(consumer, producePinned("t", remote, "far")).Err)

	got := c.do(consumer, msg.Consume{Topic: "t", Partition: msg.PartitionNone})
	require.NoError(t, got.Err)
	messages := got.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1)
	require.Equal(t, "far", string(messages[0].Payload))
	require.Equal(t, remote, messages[0].Partition)

	acker := c.otherThan(consumer, owners[remote])
	acked := c.do(acker, msg.Ack{Topic: "t", Handles: []string{messages[0].ReceiptHandle}, Action: msg.AckCommit})
	require.NoError(t, acked.Err)
	again := c.do(acker, msg.Ack{Topic: "t", Handles: []string{messages[0].ReceiptHandle}, Action: msg.AckCommit})
	require.NoError(t, again.Err, "a retried ack that landed says so at the owner")
	stale := c.do(acker, msg.Ack{Topic: "t", Handles: []string{messages[0].ReceiptHandle}, Action: msg.AckNack})
	require.Equal(t, msg.CodeGone, msg.CodeOf(stale.Err), "the owner's lease table saw the first ack")
	owner := c.nodes[owners[remote]]
	require.Equal(t, uint64(1), owner.partitions[partitionKey{"t", remote}].leases.Committed())
}

// TestLongPollIsWokenByARecordOnAnotherNode: a poll parked on a node that
// owns no partition with records is answered when a record becomes
// visible on another node's partition, well before its wait ends.
func TestLongPollIsWokenByARecordOnAnotherNode(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	poller := owners[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != poller })
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "nothing to consume yet: the poll waits")

	require.NoError(t, c.do(c.otherThan(poller, owners[remote]), producePinned("t", remote, "wake")).Err)
	reply, answered := c.replies[poll]
	require.True(t, answered, "the owner's Notify made the poll probe it without a tick")
	require.Equal(t, "wake", string(reply.Result.(msg.ConsumeResult).Messages[0].Payload))
}

// TestProduceIsReroutedAroundADeadOwner: with one node cut off and marked
// dead, keyless produces through the others land on live partitions, a
// pinned produce to the dead owner's partition is a 503, and the topic
// description reports its partitions unavailable.
func TestProduceIsReroutedAroundADeadOwner(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	dead := c.otherThan(leader)
	c.cut[dead] = true
	for range 8 {
		c.tick(500) // past MemberDeadAfterMs
	}
	member, _ := c.nodes[leader].meta.State().Member(dead)
	require.False(t, member.Alive, "the leader marked the silent member dead")

	at := c.otherThan(leader, dead)
	for i := range 12 {
		reply := c.do(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: fmt.Appendf(nil, "r%d", i)}}})
		require.NoError(t, reply.Err)
		require.NotEqual(t, dead, owners[reply.Result.(msg.ProduceResult).Records[0].Partition])
		c.tick(10) // the next sync round moves the sticky partition on
	}
	pinned := slices.Index(owners, dead)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.do(at, producePinned("t", pinned, "x")).Err))
	detail := c.do(at, msg.GetTopic{Name: "t", Partition: msg.PartitionNone}).Result.(msg.TopicDetail)
	for _, stats := range detail.PartitionStats {
		require.Equal(t, stats.OwnerNode != dead, stats.Available, "partition %d owned by %s", stats.Index, stats.OwnerNode)
	}

	delete(c.cut, dead)
	for range 12 {
		c.tick(100) // a heartbeat interval and a bit: one lost on the way is not waited for
	}
	member, _ = c.nodes[leader].meta.State().Member(dead)
	require.True(t, member.Alive, "a member that heartbeats again is alive again")
}

// TestUnansweredKeyedForwardIsA503AfterTheTimeout: an owner that is cut
// off but not yet marked dead lets a forwarded keyed produce time out; the
// record stays pinned to its key's partition, so the client gets a
// retryable 503, and the next produce with that key gets one at once,
// while a keyless produce avoids the silent owner.
func TestUnansweredKeyedForwardIsA503AfterTheTimeout(t *testing.T) {
	c, towards := produceTowardsACutOwner(t)
	owners, silent, at, key := towards.owners, towards.cut, towards.at, towards.key
	reply := c.await(towards.id, 100, 30)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "the key's partition is not re-placed")

	forwardsBefore := c.forwarded[silent]
	again := c.send(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: key, Payload: []byte("k2")}}})
	c.settle()
	answer, answered := c.replies[again]
	require.True(t, answered, "answered without waiting for a timeout")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(answer.Err))
	require.Equal(t, forwardsBefore, c.forwarded[silent], "nothing sent to the silent owner")

	keyless := c.do(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("any")}}})
	require.NoError(t, keyless.Err)
	require.NotEqual(t, silent, owners[keyless.Result.(msg.ProduceResult).Records[0].Partition])
}

// TestKeyedProduceToADeadOwnerIsAPrompt503: a record whose key hashes to a
// partition of an owner marked dead is refused at once, and one whose key
// hashes to a live owner's partition is written there.
func TestKeyedProduceToADeadOwnerIsAPrompt503(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	dead := c.otherThan(leader)
	c.cut[dead] = true
	for range 8 {
		c.tick(500) // past MemberDeadAfterMs
	}
	member, _ := c.nodes[leader].meta.State().Member(dead)
	require.False(t, member.Alive)
	at := c.otherThan(leader, dead)
	id := c.send(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyFor(t, 3, slices.Index(owners, dead)), Payload: []byte("k")}}})
	c.settle()
	reply, answered := c.replies[id]
	require.True(t, answered, "answered without a tick")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
	live := slices.Index(owners, at)
	written := c.do(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: keyFor(t, 3, live), Payload: []byte("k")}}})
	require.NoError(t, written.Err)
	require.Equal(t, live, written.Result.(msg.ProduceResult).Records[0].Partition)
}

// cutOwnerProduce is a keyed produce sent through node at towards a
// partition of node cut, which is cut off from the others.
type cutOwnerProduce struct {
	owners  []string
	cut, at string
	key     []byte
	id      msg.RequestID
}

// produceTowardsACutOwner sets up a three-node cluster with topic t, cuts
// a follower off and sends, through the other follower, a produce whose
// key hashes to a partition the cut node owns.
func produceTowardsACutOwner(t *testing.T) (*clusterHarness, cutOwnerProduce) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	p := cutOwnerProduce{owners: c.owners(leader, "t"), cut: c.otherThan(leader)}
	p.at = c.otherThan(leader, p.cut)
	c.cut[p.cut] = true
	p.key = keyFor(t, 3, slices.Index(p.owners, p.cut))
	p.id = c.send(p.at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: p.key, Payload: []byte("k")}}})
	return c, p
}

// keyFor finds a key that hashes to the partition.
func keyFor(t *testing.T, partitions, partition int) []byte {
	n := &Node{}
	for i := range 1000 {
		key := fmt.Appendf(nil, "key-%d", i)
		if n.choosePartition(&topic{info: msg.TopicInfo{Partitions: partitions}}, msg.ProduceRecord{Partition: msg.PartitionNone, Key: key}) == partition {
			return key
		}
	}
	t.Fatal("no key found")
	return nil
}

// join starts a node that joins the running cluster: it knows the peers
// (or only those named in via) and itself, and bootstraps nothing.
func (c *clusterHarness) join(id string, via ...string) {
	var peers []meta.Peer
	for _, existing := range c.ids {
		if len(via) > 0 && !slices.Contains(via, existing) {
			continue
		}
		peers = append(peers, c.nodes[existing].cfg.Meta.Peers[slices.IndexFunc(c.nodes[existing].cfg.Meta.Peers,
			func(p meta.Peer) bool { return p.ID == existing })])
	}
	peers = append(peers, meta.Peer{ID: id, RaftID: meta.RaftIDOf(id), ClusterAddr: fmt.Sprintf("127.0.0.%d:7943", len(peers)+1)})
	cfg := clusterConfig(id, len(peers)-1, peers)
	cfg.Meta.Join = true
	c.configs[id] = cfg
	c.disks[id] = storage.NewMemFS(rand.New(rand.NewPCG(9, 9)))
	c.metaPaths[id] = filepath.Join(c.t.TempDir(), id+".db")
	c.start(id)
	c.ids = append(c.ids, id)
}

// TestANodeJoinsARunningCluster: a node started with Join asks the
// members; the leader adds it as a voter, it heartbeats into membership,
// and a topic created afterwards places partitions on it.
func TestANodeJoinsARunningCluster(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	c.join("n4")
	for range 50 {
		c.tick(100)
		if _, voter := c.nodes[leader].meta.State().PeerByNodeID("n4"); voter && c.allAlive(leader) {
			break
		}
	}
	_, voter := c.nodes[leader].meta.State().PeerByNodeID("n4")
	require.True(t, voter, "the leader added the joiner as a voter")
	require.True(t, c.allAlive(leader), "the joiner heartbeats like every member")
	require.NoError(t, c.do("n4", msg.CreateTopic{Name: "t", Partitions: 8}).Err)
	require.Equal(t, 2, countOf(c.owners("n4", "t"), "n4"), "eight partitions over four live nodes")
	require.NoError(t, c.do("n4", producePinned("t", 0, "via the joiner")).Err)
}

// TestAJoinerThatKnowsOnlyAFollowerIsAdded: a node given only one member,
// not the leader, still joins: the follower relays its Join to the leader.
func TestAJoinerThatKnowsOnlyAFollowerIsAdded(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	c.join("n4", c.otherThan(leader))
	c.tickUntilServing("n4")
	_, voter := c.nodes[leader].meta.State().PeerByNodeID("n4")
	require.True(t, voter, "the leader added the joiner it heard of through a follower")
	require.NoError(t, c.nodes["n4"].Serving(), "the joiner serves")
}

// tickUntilServing ticks (up to 5 s) until the node serves.
func (c *clusterHarness) tickUntilServing(id string) {
	for range 50 {
		c.tick(100)
		if c.nodes[id].Serving() == nil {
			return
		}
	}
}

// TestARemovedJoinerAsksNoMore: a node that joined and was then removed
// from the voters (its replica applied the removal) sends no more Join:
// its raft id may not be reused, and the leader would refuse every one.
func TestARemovedJoinerAsksNoMore(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	c.join("n4")
	c.tickUntilServing("n4")
	require.NoError(t, c.nodes["n4"].Serving(), "n4 joined")
	_, err := c.nodes[leader].meta.ProposeConfChange(meta.ConfChange{Kind: meta.RemoveVoter, Peer: meta.Peer{ID: "n4"}})
	require.NoError(t, err)
	joins := 0
	c.drop = func(env msg.Envelope) bool {
		if _, isJoin := env.Message.(msg.Join); isJoin && env.From == "n4" {
			joins++
		}
		return false
	}
	for range 50 {
		c.tick(100)
	}
	state := c.nodes["n4"].meta.State()
	_, voter := state.PeerByNodeID("n4")
	require.False(t, voter, "n4's replica applied its removal")
	require.True(t, state.RaftIDUsed(meta.RaftIDOf("n4")))
	require.Zero(t, joins, "the removed node asked to join again")
}

// TestNoLeaderIsA503: a node cut off from both others loses its leader
// and answers a metadata write 503 (never 500), and says why it is not
// ready.
func TestNoLeaderIsA503(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	alone := c.otherThan(leader)
	for _, id := range c.ids {
		if id != alone {
			c.cut[id] = true
		}
	}
	for range 40 {
		c.tick(100) // past an election timeout: PreVote finds no quorum
	}
	require.Error(t, c.nodes[alone].Serving(), "no leader: not ready")
	reply := c.do(alone, msg.CreateTopic{Name: "t"})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
}

// TestPeerUnreachableFailsItsForwardsAtOnce: when the driver reports that
// a peer cannot be reached, the keyed produce waiting on it fails at once
// (retryable), without waiting out the forward timeout, and a keyless one
// avoids the peer.
func TestPeerUnreachableFailsItsForwardsAtOnce(t *testing.T) {
	c, towards := produceTowardsACutOwner(t)
	owners, gone, at, id := towards.owners, towards.cut, towards.at, towards.id
	c.settle()
	_, answered := c.replies[id]
	require.False(t, answered, "the forward waits for the cut node")
	c.nodes[at].PeerUnreachable(gone)
	c.settle()
	reply, answered := c.replies[id]
	require.True(t, answered, "answered without a tick")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "a keyed record stays on its key's partition")
	keyless := c.do(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("any")}}})
	require.NoError(t, keyless.Err)
	require.NotEqual(t, gone, owners[keyless.Result.(msg.ProduceResult).Records[0].Partition])
}

// TestARequestForATopicNotYetKnownHereWaitsForIt: a node whose replica
// has not applied a new topic yet holds a produce for it (the leader
// confirms the topic exists) and serves it once the topic arrives; a
// topic the leader does not know either is a 404 at once.
func TestARequestForATopicNotYetKnownHereWaitsForIt(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	behind := c.otherThan(leader)
	c.drop = func(env msg.Envelope) bool { // the leader's appends do not reach the lagging node
		raft, ok := env.Message.(msg.RaftMessage)
		return ok && env.To == behind && raft.Message.GetType() == raftpb.MsgApp
	}
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	id := c.send(behind, producePinned("t", 0, "early"))
	c.settle()
	_, answered := c.replies[id]
	require.False(t, answered, "held until the topic arrives")
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(c.do(behind, producePinned("nothing", 0, "x")).Err), "the leader does not know it either")

	c.drop = nil
	reply := c.await(id, 100, 20)
	require.NoError(t, reply.Err)
}

// TestKeylessProduceStaysOnTheReceivingNode: a keyless record sent to a
// node that owns a live, unfrozen partition of the topic is written there,
// with no forward, round after round.
func TestKeylessProduceStaysOnTheReceivingNode(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	forwardsBefore := c.forwarded[c.ids[0]] + c.forwarded[c.ids[1]] + c.forwarded[c.ids[2]]
	for i := range 12 {
		at := c.ids[i%3]
		reply := c.do(at, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: fmt.Appendf(nil, "r%d", i)}}})
		require.NoError(t, reply.Err)
		require.Equal(t, at, owners[reply.Result.(msg.ProduceResult).Records[0].Partition], "record %d", i)
	}
	require.Equal(t, forwardsBefore, c.forwarded[c.ids[0]]+c.forwarded[c.ids[1]]+c.forwarded[c.ids[2]], "no forward")
}

// TestPinnedProduceToAnUnreachableOwnerIsAPrompt503: once the transport
// reported the owner unreachable, a record pinned to its partition is
// refused at once, with no forward to wait on.
func TestPinnedProduceToAnUnreachableOwnerIsAPrompt503(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	unreachable := c.otherThan(leader)
	at := c.otherThan(leader, unreachable)
	c.nodes[at].PeerUnreachable(unreachable)
	forwardsBefore := c.forwarded[unreachable]
	id := c.send(at, producePinned("t", slices.Index(owners, unreachable), "x"))
	c.settle()
	reply, answered := c.replies[id]
	require.True(t, answered, "answered without a tick")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err))
	require.Equal(t, forwardsBefore, c.forwarded[unreachable])
}

// TestProducePartsToOneOwnerInOneRoundTravelAsOneMessage: produces that
// arrive at one node in one round, each with records for one other owner,
// reach that owner as one forward, and each client gets its own
// placements.
func TestProducePartsToOneOwnerInOneRoundTravelAsOneMessage(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	at := c.ids[0]
	remote := slices.IndexFunc(owners, func(o string) bool { return o != at })
	owner := owners[remote]
	forwardsBefore := c.forwarded[owner]
	var ids []msg.RequestID
	for i := range 5 {
		ids = append(ids, c.send(at, producePinned("t", remote, fmt.Sprintf("r%d", i))))
	}
	c.settle()
	require.Equal(t, forwardsBefore+1, c.forwarded[owner], "one message for the round")
	var offsets []uint64
	for i, id := range ids {
		reply, answered := c.replies[id]
		require.True(t, answered)
		require.NoError(t, reply.Err)
		placements := reply.Result.(msg.ProduceResult).Records
		require.Len(t, placements, 1)
		require.Equal(t, remote, placements[0].Partition)
		offsets = append(offsets, placements[0].Offset)
		got := c.do(owner, msg.Replay{Topic: "t", Partition: remote, Offset: placements[0].Offset})
		require.Equal(t, fmt.Sprintf("r%d", i), string(got.Result.(msg.ReplayResult).Message.Payload))
	}
	require.True(t, slices.IsSorted(offsets), "the batch keeps the arrival order: %v", offsets)
}

// TestAnUnansweredProduceForwardFailsEveryPart: when the owner does not
// answer the joined forward, every client whose records it carried gets
// the retryable error (pinned records cannot be re-placed).
func TestAnUnansweredProduceForwardFailsEveryPart(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	silent := c.otherThan(leader)
	at := c.otherThan(leader, silent)
	c.cut[silent] = true
	first := c.send(at, producePinned("t", slices.Index(owners, silent), "a"))
	second := c.send(at, producePinned("t", slices.Index(owners, silent), "b"))
	for _, id := range []msg.RequestID{first, second} {
		require.Equal(t, msg.CodeUnavailable, msg.CodeOf(c.await(id, 100, 30).Err))
	}
}

// TestALateForwardReplyOfAnEarlierIncarnationIsDropped: a reply to a
// forward made before a restart does not reach a forward of the new
// incarnation that happens to be pending (forward ids do not restart).
func TestALateForwardReplyOfAnEarlierIncarnationIsDropped(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	owners := c.owners(leader, "t")
	at := c.otherThan(leader)
	remote := slices.IndexFunc(owners, func(o string) bool { return o != at })
	require.NoError(t, c.do(at, producePinned("t", remote, "before")).Err)
	before := c.nodes[at].routing.forwards.LastID()
	require.NotZero(t, before, "the produce was forwarded")
	c.crash(at)
	c.elect()
	c.cut[owners[remote]] = true // the produce's forward stays pending
	id := c.send(at, producePinned("t", remote, "x"))
	c.settle()
	var pending uint64
	for _, forwardID := range c.nodes[at].routing.forwards.Pending() {
		pending = forwardID
	}
	require.NotZero(t, pending)
	require.Greater(t, pending, before, "ids of the new incarnation are above the old ones")
	stale := msg.ForwardReply{ID: before, Reply: msg.Reply{Result: msg.ConsumeResult{}}}
	require.NoError(t, c.nodes[at].Step(msg.Envelope{From: owners[remote], To: at, Message: stale}))
	_, answered := c.replies[id]
	require.False(t, answered, "the stale reply was not taken for the produce's")
}

// TestAVoterBehindANewLeaderItCannotAddressCatchesUp: a voter that was
// away while a node joined and came to lead has a replica that cannot map
// the new leader's raft id to an address (the entry adding it is among
// those it must catch up on), so raft's answers to the leader had nowhere
// to go. It asks its configured peers for the voters' addresses, as a
// joiner does, and catches up (sim seed 910268). Knowing the leader's
// node id from its messages would not do: a driver reaches a peer only at
// an address the node gave it (ClusterAddrs).
func TestAVoterBehindANewLeaderItCannotAddressCatchesUp(t *testing.T) {
	c, laggard := laggardBehindTheJoinerItCannotAddress(t)
	_, known := c.nodes[laggard].meta.PeerByRaftID(meta.RaftIDOf("n4"))
	require.False(t, known, "the laggard's replica does not know the new leader's address")

	c.drop = func(env msg.Envelope) bool { // the driver reaches only the addresses the node gave it
		_, addressed := c.nodes[env.From].ClusterAddrs()[env.To]
		return !addressed
	}
	c.cut[laggard] = false
	c.tickUntilCaughtUpWith(laggard, "n4")
	require.True(t, c.nodes["n4"].meta.IsLeader(), "the joiner still leads: the laggard caught up from it")
}

// laggardBehindTheJoinerItCannotAddress builds a three-node cluster in
// which n4 joined and came to lead while a voter, the laggard, was cut
// off and then restarted: the laggard's replica cannot map n4's raft id to
// an address. It returns the harness and the laggard, still cut off.
func laggardBehindTheJoinerItCannotAddress(t *testing.T) (*clusterHarness, string) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	laggard := c.otherThan(leader)
	c.cut[laggard] = true
	c.join("n4")
	c.tickUntil(100, 100, func() bool {
		_, voter := c.nodes[leader].meta.State().PeerByNodeID("n4")
		return voter
	})
	require.NoError(t, c.nodes[leader].meta.TransferLeadership("n4"))
	c.tickUntil(100, 100, func() bool { return c.nodes["n4"].meta.IsLeader() })
	c.crash(laggard)
	return c, laggard
}

// tickUntilCaughtUpWith ticks (up to 10 s) until the node's replica lists
// the leader as a voter and has applied as far as it.
func (c *clusterHarness) tickUntilCaughtUpWith(id, leader string) {
	c.tickUntil(100, 100, func() bool {
		_, voter := c.nodes[id].meta.State().PeerByNodeID(leader)
		return voter && c.nodes[id].meta.AppliedIndex() == c.nodes[leader].meta.AppliedIndex()
	})
}

// TestAVoterThatCannotAddressAPeerIsAnsweredByAFollower: a voter whose
// replica cannot address a newer voter asks its configured peers, and a
// follower answers with the voters it applied; no relay to the leader is
// needed, for the leader may be the very voter it cannot reach, or there
// may be no leader until it can (nightly seed 4601069: no metastore leader
// for 2.7 s, a late joiner served late).
func TestAVoterThatCannotAddressAPeerIsAnsweredByAFollower(t *testing.T) {
	c, laggard := laggardBehindTheJoinerItCannotAddress(t)

	relays, answers := 0, 0
	c.drop = func(env msg.Envelope) bool {
		switch env.Message.(type) {
		case msg.JoinRelay:
			relays++
			return true // the leader is out of reach of the relay
		case msg.JoinAccepted:
			if env.From != "n4" && env.To == laggard {
				answers++
			}
		}
		_, addressed := c.nodes[env.From].ClusterAddrs()[env.To]
		return !addressed
	}
	c.cut[laggard] = false
	c.tickUntilCaughtUpWith(laggard, "n4")
	_, voter := c.nodes[laggard].meta.State().PeerByNodeID("n4")
	require.True(t, voter, "the laggard caught up on the entry that added n4")
	require.Positive(t, answers, "a follower answered the laggard's Join")
	require.Zero(t, relays, "a voter's Join is not relayed")
}

// TestANodeCutFromTheMetastoreStopsWritingBeforeItCanBeDeclaredDead pins
// the write fence of writable: a node whose own heartbeat has not been
// applied for half of MemberDeadAfterMs refuses writes, while the leader
// still counts it alive, so no other node can take its partitions over
// while it still appends (docs/necessity.md).
func TestANodeCutFromTheMetastoreStopsWritingBeforeItCanBeDeclaredDead(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	cut := c.otherThan(leader)
	index := slices.Index(c.owners(leader, "t"), cut)
	require.GreaterOrEqual(t, index, 0, "the cut node owns a partition")
	require.NoError(t, c.do(cut, producePinned("t", index, "before")).Err)

	c.cut[cut] = true
	for range 4 {
		c.tick(500) // past half of MemberDeadAfterMs, not past it
	}
	member, _ := c.nodes[leader].meta.State().Member(cut)
	require.True(t, member.Alive, "the leader has not declared the cut node dead yet")
	refused := c.do(cut, producePinned("t", index, "after"))
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err), "the cut node refuses the write it would have taken")
}

// TestARestartedNodeNeverRepeatsAProposalID: a node restarted within one
// metastore term proposes with sequences above those of its earlier
// start, so a proposal of that start committing late (its MsgProp held up
// on the way) is never taken for one of this start's (nightly seed
// 4500542: a delete was answered with the outcome of a move's flip that
// an earlier start of the same node had proposed, 409).
func TestARestartedNodeNeverRepeatsAProposalID(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.elect()
	follower := c.otherThan(leader)
	before, err := c.nodes[follower].meta.Propose(meta.SetDraining{ID: follower, Draining: false})
	require.NoError(t, err)
	c.crash(follower)
	c.tickUntil(100, 50, func() bool { _, known := c.nodes[follower].meta.Leader(); return known })
	after, err := c.nodes[follower].meta.Propose(meta.SetDraining{ID: follower, Draining: false})
	require.NoError(t, err)
	require.Equal(t, before.Term, after.Term, "the restart stayed within the term")
	require.Greater(t, after.Sequence, before.Sequence, "no sequence of the earlier start again")
}

// A raft message is stepped only from the node its sender's raft id
// belongs to: a peer cannot speak for another member, and a message raft
// would panic on is refused, never stepped (meta.ErrBadPeerMessage).
func TestStepRefusesRaftMessagesForOtherSendersOrRaftWouldPanicOn(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.settle()
	target, impostor, claimed := c.nodes[c.ids[0]], c.ids[1], c.ids[2]
	peer, known := target.meta.PeerByRaftID(meta.RaftIDOf(claimed))
	require.True(t, known)
	heartbeat, term, to, from := raftpb.MsgHeartbeat, target.meta.Status().Term, meta.RaftIDOf(c.ids[0]), peer.RaftID
	forged := msg.Envelope{From: impostor, To: c.ids[0], Message: msg.RaftMessage{Message: &raftpb.Message{Type: &heartbeat, To: &to, From: &from, Term: &term}}}
	require.ErrorContains(t, target.Step(forged), "names "+claimed)

	far := uint64(1 << 40)
	own, ownPeer := c.ids[1], meta.RaftIDOf(c.ids[1])
	bad := msg.Envelope{From: own, To: c.ids[0], Message: msg.RaftMessage{Message: &raftpb.Message{Type: &heartbeat, To: &to, From: &ownPeer, Term: &term, Commit: &far}}}
	require.ErrorIs(t, target.Step(bad), meta.ErrBadPeerMessage)
	c.settle()
}

// TestAVoterAtANewAddressIsReachedThereUntilTheMetastoreRecordsIt: a voter
// whose cluster address is not the one the metastore records (restarted
// at a new address) tells its peers with a Join; they serve the new
// address from ClusterAddrs until its heartbeat records it, and the
// override then goes. A Join naming the recorded address changes nothing.
func TestAVoterAtANewAddressIsReachedThereUntilTheMetastoreRecordsIt(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	moved := c.otherThan(leader)
	recorded := c.nodes[leader].ClusterAddrs()[moved]
	require.NotEmpty(t, recorded)
	require.NoError(t, c.nodes[leader].Step(msg.Envelope{From: moved, To: leader, Message: msg.Join{RaftID: 99, ClusterAddr: recorded}}))
	require.Empty(t, c.nodes[leader].cluster.movedAddrs)

	const newAddr = "10.9.9.9:7943"
	c.nodes[moved].cfg.ClusterAddr = newAddr // as if restarted there
	require.True(t, c.nodes[moved].addressMoved())
	overridden := false
	c.tickUntil(100, 100, func() bool {
		overridden = overridden || c.nodes[leader].cluster.movedAddrs[moved].addr == newAddr
		member, _ := c.nodes[leader].meta.State().Member(moved)
		return member.ClusterAddr == newAddr
	})
	require.True(t, overridden, "the leader served the new address before the metastore recorded it")
	c.tick(100)
	require.Empty(t, c.nodes[leader].cluster.movedAddrs, "recorded: the override went")
	require.Equal(t, newAddr, c.nodes[leader].ClusterAddrs()[moved])
	require.False(t, c.nodes[moved].addressMoved())
}

// TestAMovedAddressThatIsNeverRecordedIsForgotten: a Join naming an
// address the voter does not listen on any more (it moved back, or the
// Join was stale) is served only until the voter's next heartbeat
// applies, which holds its address of that moment (self-review).
func TestAMovedAddressThatIsNeverRecordedIsForgotten(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	moved := c.otherThan(leader)
	recorded := c.nodes[leader].ClusterAddrs()[moved]
	require.NoError(t, c.nodes[leader].Step(msg.Envelope{From: moved, To: leader,
		Message: msg.Join{RaftID: 99, ClusterAddr: "10.9.9.9:7943"}}))
	require.Equal(t, "10.9.9.9:7943", c.nodes[leader].ClusterAddrs()[moved])
	c.tickUntil(100, 200, func() bool { return c.nodes[leader].ClusterAddrs()[moved] == recorded })
	require.Empty(t, c.nodes[leader].cluster.movedAddrs)
}
