package node

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// Property: under the disk reserve a node refuses writes into its
// partitions with a 503 that names the reserve, and appends nothing; it
// counts what it appended since the last report, so a burst stops at the
// reserve before the next report; a report above the reserve lets writes
// in again. A node never told of its disk keeps no reserve.
func TestWritesStopAtTheDiskReserve(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	payload := strings.Repeat("x", 1_000)
	produce := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte(payload)}}}
	h.ok(produce) // never told: no reserve

	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1_500)
	h.ok(produce) // 1,064 bytes counted: 436 left above the reserve
	h.ok(produce) // taken while above it; now under
	refused := h.fail(produce, msg.CodeUnavailable)
	require.Contains(t, refused.Message, "storage.disk_reserve_bytes")
	require.Contains(t, refused.Message, "free some space on its data directory's file system")
	require.NotContains(t, refused.Message, "another node", "a single node has no other")
	require.True(t, h.node.Stats().DiskLow)
	require.NoError(t, h.do(msg.Replay{Topic: "t", Partition: 0, Offset: 2}).Err)
	require.Nil(t, h.ok(msg.Replay{Topic: "t", Partition: 0, Offset: 3}).(msg.ReplayResult).Message, "the refused record was not appended")

	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1<<20)
	require.False(t, h.node.Stats().DiskLow)
	h.ok(produce)
}

// Property: the writes a node answers 503 for its disk reserve are
// counted (Stats.DiskReserveRefusals, narad_disk_reserve_refusals_total),
// a produce pinned to a partition, a keyless one and a batch alike, and
// across reports; a write that goes through is not, nor is the check of
// whether one may (a keyless record placed: every partition here).
func TestWritesRefusedForTheDiskReserveAreCounted(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1<<20)
	h.ok(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("kept")}}})
	require.Zero(t, h.node.Stats().DiskReserveRefusals)

	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1)
	h.fail(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 1, Payload: []byte("pinned")}}}, msg.CodeUnavailable)
	h.fail(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("keyless")}}}, msg.CodeUnavailable)
	h.fail(msg.Produce{Topic: "t", Batch: true, Records: []msg.ProduceRecord{
		{Partition: msg.PartitionNone, Payload: []byte("a")}, {Partition: msg.PartitionNone, Payload: []byte("b")}}}, msg.CodeUnavailable)
	refused := h.node.Stats().DiskReserveRefusals
	require.Equal(t, uint64(3), refused, "each refused produce counted once")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 2) // a new report: the count goes on
	h.fail(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 2, Payload: []byte("again")}}}, msg.CodeUnavailable)
	require.Equal(t, refused+1, h.node.Stats().DiskReserveRefusals)
	require.False(t, h.node.AcceptsWrites("t", 0), "a check does not count")
	h.fail(msg.Produce{Topic: "missing", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("x")}}}, msg.CodeNotFound)
	require.Equal(t, refused+1, h.node.Stats().DiskReserveRefusals, "nor does another refusal")
}

// Property: the node's own writes between topics refused for the reserve
// (fan-out copies, which retry every second while it lasts) are not
// counted as refusals: no client was refused (review: ten copies' retries
// counted ten).
func TestCopiesRefusedForTheDiskReserveAreNotCounted(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.produce("orders", 1, "a")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1) // before the copy goes
	for range 10 {
		h.tick(h.cfg.Fanout.RetryMs)
	}
	require.Empty(t, h.replayAll("audit", 1), "the copy was refused")
	require.Zero(t, h.node.Stats().DiskReserveRefusals)
}

// Property: once the driver says the free space is no longer known
// (ForgetDiskFree), the node keeps no reserve: its own count of appends
// since the last report would only go down.
func TestAnUnknownFreeSpaceKeepsNoReserve(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t")
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1)
	h.fail(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeUnavailable)
	h.node.ForgetDiskFree()
	require.False(t, h.node.Stats().DiskLow)
	h.ok(msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}})
}

// TestTheClusterRoutesAroundANodeShortOfDisk: a node under its disk
// reserve says so in its next heartbeat; every replica then lists it as
// short of disk, keyless records produced elsewhere skip its partitions
// without asking it, and once it has room again its next heartbeat says
// that too.
func TestTheClusterRoutesAroundANodeShortOfDisk(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	short := c.otherThan(leader)
	via := c.otherThan(leader, short) // short of disk too: it owns no partition it may write
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	for _, id := range []string{short, via} {
		c.nodes[id].SetDiskFree(0)
	}
	c.tickUntil(100, int(2*interval/100), func() bool { return c.diskLowAtEveryReplica(short, true) && c.diskLowAtEveryReplica(via, true) })
	require.True(t, c.diskLowAtEveryReplica(short, true), "every replica learns of the short disk from its heartbeat")
	for _, listed := range c.do(leader, msg.ListMembers{}).Result.(msg.MembersResult).Members {
		require.Equal(t, listed.ID != leader, listed.DiskLow, "the members list says whose disk is short: %+v", listed)
	}

	owners := c.owners(via, "t")
	clear(c.forwarded)
	for i := range 20 {
		reply := c.do(via, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: fmt.Appendf(nil, "r%d", i)}}})
		require.NoError(t, reply.Err)
		placed := reply.Result.(msg.ProduceResult).Records[0]
		require.Equal(t, leader, owners[placed.Partition], "record %d went to the only owner with room", i)
	}
	require.Zero(t, c.forwarded[short], "no record was sent to the node short of disk to be refused there")
	key := keyFor(t, 6, slices.Index(owners, short))
	keyed := c.do(via, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Key: key, Payload: []byte("k")}}})
	require.NoError(t, keyed.Err)
	require.Equal(t, 1, c.forwarded[short], "a keyed record is sent to its owner, which answers for itself")
	require.Equal(t, uint64(1), c.nodes[short].Stats().DiskReserveRefusals, "and counts its refusal of a client's record")

	c.nodes[short].SetDiskFree(1 << 40)
	own := c.do(short, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("own")}}})
	require.NoError(t, own.Err)
	require.Equal(t, short, owners[own.Result.(msg.ProduceResult).Records[0].Partition],
		"with room again, a node writes its own partitions before its heartbeat says so")
	c.tickUntil(100, int(2*interval/100), func() bool { return c.diskLowAtEveryReplica(short, false) })
	require.True(t, c.diskLowAtEveryReplica(short, false), "its next heartbeat says it has room")
}

// TestAJoinerShortOfDiskGetsNoPartitionUntilItHasRoom: the planner moves
// nothing to a member whose disk is under its reserve, and a topic
// created meanwhile places nothing on it; once it has room, it receives
// its share.
func TestAJoinerShortOfDiskGetsNoPartitionUntilItHasRoom(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 8)
	c.join("n4")
	c.nodes["n4"].SetDiskFree(0)
	c.tickUntilServing("n4")
	for range 100 { // ten seconds: many plan intervals
		c.tick(100)
		for _, move := range c.nodes[leader].meta.State().Moves() {
			require.NotEqual(t, "n4", move.Target, "a move was planned to the joiner short of disk")
		}
		require.Zero(t, c.holding(leader, "t", "n4"), "a partition moved to the joiner short of disk")
	}
	member, _ := c.nodes[leader].meta.State().Member("n4")
	require.True(t, member.Alive && member.DiskLow, "the joiner is a member, short of disk: %+v", member)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "u", Partitions: 8}).Err)
	require.Zero(t, countOf(c.owners(leader, "u"), "n4"), "a new topic is placed on the members with room")
	for range 30 { // the planner reads the new topic: nothing else changes until the joiner has room
		c.tick(100)
	}
	require.Zero(t, c.holding(leader, "t", "n4"))

	c.nodes["n4"].SetDiskFree(1 << 40)
	c.tickUntil(100, 300, func() bool {
		return c.holding(leader, "t", "n4") == 2 && len(c.nodes[leader].meta.State().Moves()) == 0
	})
	require.Equal(t, 2, c.holding(leader, "t", "n4"), "with room, the joiner receives its share")
}

// A node that cannot reach any owner says when it is itself not serving
// (a restart before it found the leader), so that the operator does not
// go after owners that are up.
func TestANodeNotServingSaysSoWhenNoOwnerIsReachable(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	restarted := c.otherThan(leader)
	c.cut[restarted] = true
	c.crash(restarted) // back with no leader known, and its peers out of reach
	for range 20 {
		c.tick(100) // its own partitions fence themselves: no heartbeat of it applies
	}
	for _, id := range c.ids {
		c.nodes[restarted].PeerUnreachable(id)
	}
	require.Error(t, c.nodes[restarted].Serving())
	keyless := c.do(restarted, msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: msg.PartitionNone, Payload: []byte("x")}}})
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(keyless.Err), "%v", keyless.Err)
	require.Contains(t, keyless.Err.Error(), "this node is not serving yet: no metadata leader known")
}

// A fan-out child's partition p stays off the node of its parent's
// partition p even when only one member has room: it goes to a member
// short of disk rather than beside the parent's copy.
func TestAChildStaysApartFromItsParentWhenOneMemberHasRoom(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("orders", 3)
	for _, id := range c.ids {
		if id != leader {
			c.nodes[id].SetDiskFree(0)
		}
	}
	interval := c.configs[leader].MemberHeartbeatIntervalMs
	c.tickUntil(100, int(2*interval/100), func() bool {
		roomy, _ := c.nodes[leader].receiversByRoom()
		return len(roomy) == 1
	})
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "audit", Parent: "orders"}).Err)
	parents, children := c.owners(leader, "orders"), c.owners(leader, "audit")
	for p := range children {
		require.NotEqual(t, parents[p], children[p], "child partition %d beside its parent's: parents %v, children %v", p, parents, children)
	}
}

// Property: the node says when it goes under its reserve (disk-low, once,
// with the figures) and when it is back above it (disk-low-ended, once):
// a node started with a reserve above its free space refused every write
// and said nothing (first-day operator audit).
func TestGoingUnderTheDiskReserveIsSaidOnce(t *testing.T) {
	h := newHarness(t)
	recorder := &eventRecorder{}
	h.observer = recorder
	h.restart()
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 1)
	h.node.SetDiskFree(h.cfg.DiskReserveBytes - 2)
	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 1)
	h.node.SetDiskFree(h.cfg.DiskReserveBytes + 2)
	h.node.SetDiskFree(0)
	require.Equal(t, []string{"disk-low", "disk-low-ended", "disk-low"}, recorder.events)
}

// Property: a node under its reserve tells a refused client to retry on
// another node only while another member has room; when every member's
// heartbeat says it is short, it says to free space (second disk-full
// audit: a cluster on one full file system sent its clients from node
// to node).
func TestTheReserveRefusalSendsClientsElsewhereOnlyWhereThereIsRoom(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 6)
	short := c.otherThan(leader)
	pinned := msg.Produce{Topic: "t", Records: []msg.ProduceRecord{{Partition: slices.Index(c.owners(short, "t"), short), Payload: []byte("x")}}}
	c.nodes[short].SetDiskFree(0)
	refused := c.do(short, pinned)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err))
	require.Contains(t, refused.Err.Error(), "retry on another node", "the others have room")

	interval := c.configs[leader].MemberHeartbeatIntervalMs
	allShort := func() bool {
		return !slices.ContainsFunc(c.ids, func(id string) bool { return !c.diskLowAtEveryReplica(id, true) })
	}
	for _, id := range c.ids {
		c.nodes[id].SetDiskFree(0)
	}
	c.tickUntil(100, int(2*interval/100), allShort)
	require.True(t, allShort(), "every heartbeat says its node is short")
	c.nodes[short].SetDiskFree(0) // a new estimate: the answer is built again
	refused = c.do(short, pinned)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(refused.Err))
	require.NotContains(t, refused.Err.Error(), "another node", "no member has room")
	require.Contains(t, refused.Err.Error(), "free some space")
}

// diskLowAtEveryReplica reports whether every replica holds low as member
// id's DiskLow.
func (c *clusterHarness) diskLowAtEveryReplica(id string, low bool) bool {
	for _, replica := range c.ids {
		if member, _ := c.nodes[replica].meta.State().Member(id); member.DiskLow != low {
			return false
		}
	}
	return true
}
