package node

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
	"narad/msg"
)

// Retention that drops an in-flight reservation frees an in-flight slot
// of a partition held at max_in_flight_per_partition: a poll parked on
// that partition must be woken, since a record is deliverable now.
func TestRetentionFreeingASlotWakesAParkedPoll(t *testing.T) {
	h := newHarness(t)
	h.cfg.Log.SegmentBytes = 4096
	h.cfg.RetentionCheckIntervalMs = 1_000
	h.restart()
	h.createTopic("orders", func(c *msg.CreateTopic) {
		c.InFlightMax = 1
		c.RetentionMs = msg.RetentionMsMin
		c.VisibilityTimeoutMs = msg.VisibilityTimeoutMsMax
	})
	payload := string(make([]byte, 1000))
	for range 20 {
		h.produce("orders", 0, payload)
	}
	first := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult).Messages[0]
	require.Equal(t, uint64(0), first.Offset)
	h.tick(msg.RetentionMsMin - 500) // retention has not expired anything yet
	require.Zero(t, h.stats("orders", 0).OldestOffset)
	id := h.send(msg.Consume{Topic: "orders", Partition: 0, WaitMs: 10_000})
	require.NotContains(t, h.replies, id, "the partition is at its in-flight cap: the poll waits")
	h.tick(2_000) // retention deletes the sealed segments, the lease of offset 0 with them
	require.Positive(t, h.stats("orders", 0).OldestOffset)
	_, answered := h.replies[id]
	require.True(t, answered, "retention freed the in-flight slot: the parked poll must get a record")
}

// An alter that raises max_in_flight_per_partition makes the next record
// of a partition held at its cap available: a poll parked on another node
// must be woken with it (as an ack freeing the slot does), not answered
// empty when its wait ends.
func TestRaisingTheInFlightCapWakesARemotePoll(t *testing.T) {
	f := parkAtACappedPartition(t)
	two := 2
	require.NoError(t, f.c.do(f.leader, msg.AlterTopic{Name: "t", InFlightMax: &two}).Err)
	f.requireWokenWithTheSecond(t, "the raised cap made the next record available: the parked poll must get it, not an empty answer")
}

// A poll parked on one node is subscribed at the owners of the topic's
// partitions as they were when it parked. A partition added meanwhile
// (or moved to a node that owned none) is owned by a node the poll never
// subscribed at: a record produced there must still wake the poll
// (docs/api.md#consume: "woken when a record becomes available on any
// partition of the topic, wherever its owner is"): the node subscribes its
// parked polls at the new owners when the topic changes.
func TestARecordOnAPartitionAddedWhileParkedWakesThePoll(t *testing.T) {
	c := newClusterHarness(t, 4)
	leader := c.elect()
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "t", Partitions: 3}).Err)
	c.tick(100)
	owners := c.owners(leader, "t")
	idle := c.ownsNone(t, owners)
	poller := owners[0]

	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "the topic is empty: the poll waits")

	four := 4
	require.NoError(t, c.do(leader, msg.AlterTopic{Name: "t", Partitions: &four}).Err)
	c.tick(100)
	grown := c.owners(leader, "t")
	require.Len(t, grown, 4)
	require.Equal(t, idle, grown[3], "the new partition goes to the node that owned none")
	require.NoError(t, c.do(idle, producePinned("t", 3, "new")).Err)

	reply := c.await(poll, 100, 100) // the poll's wait ends within 8 s
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "a record became available on a partition of the topic: the parked poll must get it")
	require.Equal(t, "new", string(messages[0].Payload))
}

// ownsNone is a node of the cluster that is not among owners.
func (c *clusterHarness) ownsNone(t *testing.T, owners []string) string {
	for _, id := range c.ids {
		if !slices.Contains(owners, id) {
			return id
		}
	}
	require.Fail(t, "every node owns a partition")
	return ""
}

// TestAPollPinnedToAPartitionThatMovesAwayFollowsIt: a poll pinned to a
// partition parks at its owner; the partition moves away. Nothing at the
// old owner will wake it, while the record is deliverable at the new
// owner at once (a move carries no reservation): the old owner takes the
// poll off. A client's poll there goes on at the new owner with what is
// left of its wait and gets the record; one forwarded by another node is
// answered at once, so that its client polls again (consume review).
func TestAPollPinnedToAPartitionThatMovesAwayFollowsIt(t *testing.T) {
	c, leader, owners, idle := reservedBeforeAMove(t)
	source := owners[0]
	asker := c.otherThan(source, idle)

	local := c.send(source, msg.Consume{Topic: "t", Partition: 0, WaitMs: 10_000})
	forwarded := c.send(asker, msg.Consume{Topic: "t", Partition: 0, WaitMs: 10_000}) // parks at the source too
	c.tick(100)
	require.Equal(t, 2, c.nodes[source].waiters.parked(), "both polls wait at the owner")

	c.startMove(leader, "t", 0, idle)
	c.tickUntil(100, 60, func() bool { return c.owners(source, "t")[0] == idle })
	require.Zero(t, c.nodes[source].waiters.parked(), "the old owner keeps no poll of the partition")
	c.tick(100)
	reply, answered := c.replies[forwarded]
	require.True(t, answered, "the forwarded poll is answered at once")
	require.NoError(t, reply.Err)
	reply = c.await(local, 100, 20)
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the client's poll went on at the new owner, where the record is deliverable")
	require.Equal(t, "only", string(messages[0].Payload))
}

// pollSetup makes a 3-node cluster with topic "t" of 3 partitions and
// returns the poller (owner of partition 0) and a partition owned by
// another node, with that node.
func pollSetup(t *testing.T) (c *clusterHarness, poller string, remote int, remoteOwner string) {
	c = newClusterHarness(t, 3)
	leader := c.electWithTopic("t", 3)
	owners := c.owners(leader, "t")
	poller = owners[0]
	remote = slices.IndexFunc(owners, func(o string) bool { return o != poller })
	require.GreaterOrEqual(t, remote, 0)
	return c, poller, remote, owners[remote]
}

// requireWokenBy produces a record at the owner of partition and
// requires the parked poll to get it at once, not at its deadline.
func requireWokenBy(t *testing.T, c *clusterHarness, poll msg.RequestID, owner string, partition int) {
	t.Helper()
	require.NoError(t, c.do(owner, producePinned("t", partition, "woken")).Err)
	c.tick(100)
	reply, answered := c.replies[poll]
	require.True(t, answered, "a record became visible at an owner within the poll's wait: the poll is woken")
	require.NoError(t, reply.Err)
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
}

// TestAPollIsWokenByAnOwnerThatRestartedSinceItsSubscription: an owner
// keeps its subscribers in memory only; after it restarts, a poller that
// believes its subscription there still lasts sends no Subscribe when a
// new poll parks. The poll's probe of the owner registers it again, so a
// record produced there wakes the poll (consume review).
func TestAPollIsWokenByAnOwnerThatRestartedSinceItsSubscription(t *testing.T) {
	c, poller, remote, remoteOwner := pollSetup(t)
	first := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 500})
	c.settle()
	c.await(first, 100, 20) // subscribed at remoteOwner for ConsumeWaitMaxMs + ForwardTimeoutMs

	c.crash(remoteOwner) // forgets its subscribers
	c.tick(100)
	c.tick(100)
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 5_000})
	c.settle()
	c.tick(100)
	_, answered := c.replies[poll]
	require.False(t, answered, "nothing to consume yet: the poll waits")
	requireWokenBy(t, c, poll, remoteOwner, remote)
}

// TestAPollLongerThanAMinuteIsWokenAfterAMinute: a node whose longest
// wait is 90 s keeps a peer's subscription that long; capped at 60 s, a
// record that came after a minute did not wake a 90 s poll (consume
// review).
func TestAPollLongerThanAMinuteIsWokenAfterAMinute(t *testing.T) {
	c, poller, remote, remoteOwner := pollSetup(t)
	for _, n := range c.nodes {
		n.cfg.ConsumeWaitMaxMs = 90_000
	}
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 90_000})
	c.settle()
	for range 650 { // 65 s
		c.tick(100)
	}
	_, answered := c.replies[poll]
	require.False(t, answered, "nothing to consume yet: the poll waits")
	requireWokenBy(t, c, poll, remoteOwner, remote)
}

// TestAnOwnerDownWhenAPollParksWakesItOnceBack: an owner marked down (a
// failed dial) when a poll parks is not probed, but the poll subscribes
// there all the same: a record there once it is back wakes the poll
// (consume review).
func TestAnOwnerDownWhenAPollParksWakesItOnceBack(t *testing.T) {
	c, poller, remote, remoteOwner := pollSetup(t)
	c.nodes[poller].PeerUnreachable(remoteOwner) // avoided for PeerDownMs (2 s)
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.settle()
	for range 25 { // 2.5 s: it is reachable again
		c.tick(100)
	}
	_, answered := c.replies[poll]
	require.False(t, answered)
	require.True(t, c.nodes[poller].peerReachable(remoteOwner))
	requireWokenBy(t, c, poll, remoteOwner, remote)
}

// TestARemotePartitionIsNotStarvedByALocalBacklog: a consumer connected
// to one node is served that node's partitions first, but every fourth
// consume asks the other owners first: a record on another node's
// partition is delivered while the node's own partition keeps a backlog
// (consume review: it never was, and retention would have deleted it
// unread).
func TestARemotePartitionIsNotStarvedByALocalBacklog(t *testing.T) {
	c, consumer, remote, remoteOwner := pollSetup(t)
	require.NoError(t, c.do(remoteOwner, producePinned("t", remote, "remote")).Err)
	for i := range 5 {
		require.NoError(t, c.do(consumer, producePinned("t", 0, "local")).Err, "backlog %d", i)
	}
	for round := range remoteFirstEvery {
		require.NoError(t, c.do(consumer, producePinned("t", 0, "local")).Err) // the producer keeps pace
		got := c.do(consumer, msg.Consume{Topic: "t", Partition: msg.PartitionNone})
		require.NoError(t, got.Err)
		messages := got.Result.(msg.ConsumeResult).Messages
		require.Len(t, messages, 1)
		if string(messages[0].Payload) == "remote" {
			return
		}
		require.NoError(t, c.do(consumer, msg.Ack{Topic: "t", Handles: []string{messages[0].ReceiptHandle}, Action: msg.AckCommit}).Err, "round %d", round)
	}
	t.Fatalf("%d consumes at the node served only its own partition", remoteFirstEvery)
}

// TestANodeWhoseRecordsAreAllItsOwnAsksTheOthersFirstRarely: every fourth
// consume asks the other owners first, but after such a round found
// nothing there it waits (50 ms, doubling up to a second) before asking
// first again: a node whose records are all its own paid a round trip
// every fourth consume (a quarter of the consume rate through one node).
func TestANodeWhoseRecordsAreAllItsOwnAsksTheOthersFirstRarely(t *testing.T) {
	c, consumer, _, remoteOwner := pollSetup(t)
	for i := range 40 {
		require.NoError(t, c.do(consumer, producePinned("t", 0, fmt.Sprintf("local-%d", i))).Err)
	}
	probes := 0
	c.drop = func(env msg.Envelope) bool {
		if forward, ok := env.Message.(msg.ForwardRequest); ok && env.To == remoteOwner {
			if _, consume := forward.Request.(msg.Consume); consume {
				probes++
			}
		}
		return false
	}
	for range 40 { // within one millisecond of the harness's clock
		got := c.do(consumer, msg.Consume{Topic: "t", Partition: msg.PartitionNone})
		require.NoError(t, got.Err)
		require.Len(t, got.Result.(msg.ConsumeResult).Messages, 1, "served from its own partition")
	}
	require.Equal(t, 1, probes, "one round asked the other owners first; the rest waited out its back-off")
}

// A wake asks each partition once for the polls pinned to it, however
// many wait there: a poll that found nothing tells that the next one
// pinned to the same partition would find nothing either. Asking for
// every poll let 4,000 polls parked on a topic's empty partitions take
// two thirds of a host loop's time while clients produced to another of
// its partitions. Counted here by the looks at the pinned partitions,
// whose logs were evicted (room for two open logs): each look that finds
// nothing to reserve leaves its log closed and says so
// (MarkNodeClosedLogLeftClosed). The wakes counted are the alters' of the
// topic's in-flight cap (a change that may serve any partition wakes the
// polls of them all).
func TestAWakeAsksEachPartitionOnceForItsPinnedPolls(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	countLooks(t)
	const wakes = 10
	for i := range wakes {
		inFlight := h.cfg.DefaultInFlightMax + 1 + i // raised each time: a lowered cap wakes nothing
		h.ok(msg.AlterTopic{Name: "orders", InFlightMax: &inFlight})
	}
	looks := closedLogLooks()
	require.Positive(t, looks, "the pinned partitions' logs were closed when the wakes looked at them")
	require.LessOrEqual(t, looks, wakes*(pinnedPartitions-1),
		"%d wakes of %d polls pinned to %d empty partitions look at each partition at most once per wake", wakes, len(parked), pinnedPartitions-1)
	for _, id := range parked {
		require.NotContains(t, h.replies, id, "the polls pinned to empty partitions still wait")
	}
}

// Records made visible on one partition, and acks of its records, wake
// the unpinned polls and the polls pinned to it, and look at no other
// partition: with 4,000 polls pinned to a topic's empty partitions,
// walking them at each round that made another partition's records
// visible was a tenth of the node's time. Counted as in
// TestAWakeAsksEachPartitionOnceForItsPinnedPolls, and the wake of an alter
// that raises the in-flight cap, which asks every partition, shows the
// count works.
func TestRecordsOnOnePartitionLookAtNoOtherPinnedPartition(t *testing.T) {
	h, parked := parkPinnedPolls(t)
	countLooks(t)
	var handles []string
	for i := range 10 {
		h.produce("orders", 0, fmt.Sprint("y", i))
		taken := h.ok(msg.Consume{Topic: "orders", Partition: 0}).(msg.ConsumeResult)
		require.Len(t, taken.Messages, 1)
		handles = append(handles, taken.Messages[0].ReceiptHandle)
	}
	require.Zero(t, closedLogLooks(), "records on partition 0 look at none of the partitions the polls are pinned to")
	require.NoError(t, h.ackHandle("orders", handles[0], msg.AckCommit))
	require.NoError(t, h.do(msg.Ack{Topic: "orders", Handles: handles[1:], Action: msg.AckCommit, Batch: true}).Err)
	require.Zero(t, closedLogLooks(), "acks of partition 0 look at none of the partitions the polls are pinned to")
	inFlight := h.cfg.DefaultInFlightMax + 1 // raised: a lowered cap wakes nothing
	h.ok(msg.AlterTopic{Name: "orders", InFlightMax: &inFlight})
	require.Positive(t, closedLogLooks(), "an alter's wake looks at the pinned partitions (the count is not blind)")
	for _, id := range parked {
		require.NotContains(t, h.replies, id, "the polls pinned to empty partitions still wait")
	}
}

// pinnedPartitions is the count of partitions of the topic of
// parkPinnedPolls.
const pinnedPartitions = 6

// parkPinnedPolls makes a node with room for two open logs, a topic
// "orders" of pinnedPartitions partitions, and 60 polls parked pinned to
// its partitions but the first.
func parkPinnedPolls(t *testing.T) (*harness, []msg.RequestID) {
	return parkPinnedPollsWith(t, func(*Config) {}, func(*msg.CreateTopic) {})
}

// parkPinnedPollsWith is parkPinnedPolls with the node's config and the
// topic's creation changed first (configure, create).
func parkPinnedPollsWith(t *testing.T, configure func(*Config), create func(*msg.CreateTopic)) (*harness, []msg.RequestID) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	configure(&h.cfg)
	h.restart()
	h.createTopic("orders", create, func(r *msg.CreateTopic) { r.Partitions = pinnedPartitions })
	for i := 1; i < pinnedPartitions; i++ {
		// Directories of their own, as partitions written to before have:
		// a look at a partition with no files makes none (logAbsent), and
		// leaves no log to evict.
		require.NoError(t, h.fs.MkdirAll(PartitionDir("orders", i)))
	}
	return h, parkOnTheOtherPartitions(h)
}

// parkOnTheOtherPartitions parks 60 polls pinned to the partitions of
// "orders" but the first.
func parkOnTheOtherPartitions(h *harness) []msg.RequestID {
	var parked []msg.RequestID
	for i := range 60 {
		parked = append(parked, h.send(msg.Consume{Topic: "orders", Partition: 1 + i%(pinnedPartitions-1), WaitMs: 60_000}))
	}
	for _, id := range parked {
		require.NotContains(h.t, h.replies, id, "the partitions the polls are pinned to are empty")
	}
	return parked
}

// countLooks starts counting the looks at closed logs (closedLogLooks)
// for the rest of the test.
func countLooks(t *testing.T) {
	chaos.Record(nil, 0)
	t.Cleanup(chaos.Reset)
}

// closedLogLooks counts the looks since chaos.Record that found a closed
// log with nothing to reserve.
func closedLogLooks() int {
	for _, mark := range chaos.Marks() {
		if mark.Name == string(chaos.MarkNodeClosedLogLeftClosed) {
			return mark.Count
		}
	}
	return 0
}

// The order of serving (waiterSet): the polls a wake may serve are served
// in the order they parked, an unpinned poll and a poll pinned to the
// partition that got a record alike; a poll pinned to another partition
// neither takes the record nor holds the others back.
func TestAWakeServesTheEarliestParkedPollThatCanTakeTheRecord(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = 3 })
	polls := map[string]msg.RequestID{}
	for _, poll := range []struct {
		name      string
		partition int
	}{{"pinned0-first", 0}, {"unpinned-first", msg.PartitionNone}, {"pinned0-second", 0}, {"pinned1", 1}, {"unpinned-second", msg.PartitionNone}} {
		polls[poll.name] = h.send(msg.Consume{Topic: "orders", Partition: poll.partition, WaitMs: 60_000})
	}
	for _, step := range []struct {
		partition int
		served    string
	}{{0, "pinned0-first"}, {0, "unpinned-first"}, {1, "pinned1"}, {0, "pinned0-second"}, {1, "unpinned-second"}} {
		answered := len(h.replies)
		placement := h.produce("orders", step.partition, "x")
		reply, ok := h.replies[polls[step.served]]
		require.True(t, ok, "a record on partition %d serves %s, the earliest parked poll that can take it", step.partition, step.served)
		require.Equal(t, answered+2, len(h.replies), "the produce and one poll are answered")
		messages := reply.Result.(msg.ConsumeResult).Messages
		require.Len(t, messages, 1)
		require.Equal(t, placement.Offset, messages[0].Offset)
		require.Equal(t, step.partition, messages[0].Partition)
	}
}

// A consume that asks the other owners first (every remoteFirstEvery-th)
// parks while its probes are out and looks at this node's partitions only
// when its round ends. Records already here when it parked wake nobody,
// so a wait shorter than the round was answered empty with them
// deliverable (a wake of any cause used to rescue some, among them the
// wake of every topic at each applied heartbeat round). Its wait ending
// mid-round, it looks here first.
func TestAPollAskingTheOthersFirstLooksHereWhenItsWaitEnds(t *testing.T) {
	c, poller, _, _ := pollSetup(t)
	for i := range remoteFirstEvery {
		require.NoError(t, c.do(poller, producePinned("t", 0, fmt.Sprintf("local-%d", i))).Err)
	}
	for i := range remoteFirstEvery - 1 {
		got := c.do(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone})
		require.NoError(t, got.Err)
		require.Len(t, got.Result.(msg.ConsumeResult).Messages, 1, "consume %d is served from the poller's own partition", i)
	}
	c.drop = func(env msg.Envelope) bool { // the probes of the other owners go unanswered
		forward, ok := env.Message.(msg.ForwardRequest)
		_, consume := forward.Request.(msg.Consume)
		return ok && consume && env.From == poller
	}
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 500})
	c.tick(100)
	require.NotContains(t, c.replies, poll, "the poll asks the other owners first, and waits for their answer")
	reply := c.await(poll, 100, 10)
	require.NoError(t, reply.Err)
	messages := reply.Result.(msg.ConsumeResult).Messages
	require.Len(t, messages, 1, "the record deliverable here all along is served when the wait ends, not an empty answer")
	require.Equal(t, fmt.Sprintf("local-%d", remoteFirstEvery-1), string(messages[0].Payload))
}
