package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
)

// replayAll returns the payloads of a partition, in offset order.
func (h *harness) replayAll(topicName string, partition int) []string {
	h.t.Helper()
	var payloads []string
	for offset := uint64(0); ; offset++ {
		result := h.ok(msg.Replay{Topic: topicName, Partition: partition, Offset: offset}).(msg.ReplayResult)
		if result.Message == nil {
			return payloads
		}
		payloads = append(payloads, string(result.Message.Payload))
	}
}

// fanoutHarness: a parent "orders" (kept a day) and a child "audit"
// attached to it.
func fanoutHarness(t *testing.T) *harness {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	return h
}

// observedFanoutHarness: a node whose events observer receives, with a
// parent "orders" and a child "audit" attached, and their cursors
// started.
func observedFanoutHarness(t *testing.T, observer Observer) *harness {
	h := newHarness(t)
	h.observer = observer
	h.restart()
	h.createTopic("orders")
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	return h
}

// refuseCursorFiles makes the next count creations of cursor files'
// temporaries fail as on a full disk.
func refuseCursorFiles(h *harness, count int) {
	h.fs.FailNextMatching(storage.FaultCreate, storage.ErrNoSpace, count, func(name string) bool {
		return strings.HasSuffix(name, cursorFileSuffix+storage.TemporarySuffix)
	})
}

func (h *harness) lagOf(parent, child string) msg.ChildLag {
	h.t.Helper()
	result := h.ok(msg.ListChildren{Parent: parent}).(msg.ChildrenResult)
	for _, lag := range result.Children {
		if lag.Name == child {
			return lag
		}
	}
	h.t.Fatalf("%s is not a child of %s: %+v", child, parent, result)
	return msg.ChildLag{}
}

// Property: records produced to a parent after the attach reach the
// child's partition of the same index, keys kept, once the linger passed;
// the cursor file says how far, and the lag drops to zero.
func TestFanoutCopiesNewRecords(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1) // the cursors start at the parent's tail
	h.ok(msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: 1, Payload: []byte("a")}}})
	h.produce("orders", 1, "b")
	require.Equal(t, msg.ChildLag{Name: "audit", LagMessages: 2, LagComplete: true}, h.lagOf("orders", "audit"))
	h.tick(1)
	require.Empty(t, h.replayAll("audit", 1), "the batch waits for its linger")
	h.tick(h.cfg.Fanout.LingerMs)
	require.Equal(t, []string{"a", "b"}, h.replayAll("audit", 1))
	copied := h.ok(msg.Replay{Topic: "audit", Partition: 1, Offset: 0}).(msg.ReplayResult)
	require.Equal(t, "k", string(copied.Message.Key), "keys are kept")
	require.Equal(t, msg.ChildLag{Name: "audit", LagComplete: true}, h.lagOf("orders", "audit"))
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, uint64(2), cursorFileOf(t, h.fs, "orders", 1, "audit").NextOffset, "the file follows within its interval")
}

func cursorFileOf(t *testing.T, fs storage.FS, topicName string, partition int, child string) cursorFile {
	t.Helper()
	data, err := storage.ReadFile(fs, cursorPath(PartitionDir(topicName, partition), child))
	require.NoError(t, err)
	var file cursorFile
	require.NoError(t, json.Unmarshal(data, &file))
	return file
}

// Property: the parent's backlog at the attach is not copied (a new epoch
// starts with the records committed at or after the attach), and a
// detach and a re-attach start again at the tail; the detached cursor's
// file is removed.
func TestFanoutStartsAtTheTailOfEachEpoch(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	h.produce("orders", 0, "before")
	h.tick(h.cfg.Fanout.AttachClockSkewMs + 1) // older than the clocks may disagree by
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.produce("orders", 0, "after")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"after"}, h.replayAll("audit", 0), "no backfill")

	h.ok(msg.DetachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	_, err := h.fs.Stat(cursorPath(PartitionDir("orders", 0), "audit"))
	require.ErrorIs(t, err, storage.ErrNotExist, "a detached child's cursor file is removed")
	h.produce("orders", 0, "detached")
	h.tick(h.cfg.Fanout.AttachClockSkewMs + 1)
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.produce("orders", 0, "again")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"after", "again"}, h.replayAll("audit", 0), "a re-attach is a fresh tail")
}

// Property: a crash loses no copy: after it the cursor carries on from
// its file, so the records copied since the file was last written are
// copied again (at least once), and none is skipped.
func TestFanoutCursorSurvivesACrash(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1)
	for i := range 3 {
		h.produce("orders", 2, fmt.Sprint(i))
	}
	h.tick(h.cfg.Fanout.LingerMs + 1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the file says 3
	h.produce("orders", 2, "3")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied, the file not yet written
	require.Equal(t, []string{"0", "1", "2", "3"}, h.replayAll("audit", 2))
	h.crash()
	h.produce("orders", 2, "4")
	h.tick(1)
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"0", "1", "2", "3", "3", "4"}, h.replayAll("audit", 2), "the batch after the file's position is copied again")
}

// Property: a full batch goes without waiting for the linger, and a batch
// holds at most BatchRecordsMax records.
func TestFanoutBatchBounds(t *testing.T) {
	h := newHarness(t)
	h.cfg.Fanout.BatchRecordsMax = 2
	h.restart()
	h.createTopic("orders")
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	for i := range 5 {
		h.produce("orders", 0, fmt.Sprint(i))
	}
	h.tick(1)
	require.Equal(t, []string{"0", "1"}, h.replayAll("audit", 0), "one full batch of two, at once")
	h.tick(1)
	require.Equal(t, []string{"0", "1", "2", "3"}, h.replayAll("audit", 0))
	h.tick(h.cfg.Fanout.LingerMs)
	require.Equal(t, []string{"0", "1", "2", "3", "4"}, h.replayAll("audit", 0), "the partial batch after its linger")
}

// Property: a delay child gets a record no earlier than its commit time
// plus the delay, and clients cannot produce to it.
func TestFanoutDelayChildIsNeverEarly(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	const delayMs = 60_000
	h.createTopic("later", func(r *msg.CreateTopic) { r.Parent, r.FanoutDelayMs = "orders", delayMs })
	h.fail(msg.Produce{Topic: "later", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("x")}}}, msg.CodeConflict)
	h.tick(1)
	committedMs := h.nowMs
	h.produce("orders", 0, "due")
	for h.nowMs+1_000 < committedMs+delayMs {
		h.tick(1_000)
		require.Empty(t, h.replayAll("later", 0), "not before its commit time plus the delay (now %d)", h.nowMs-committedMs)
	}
	h.tick(committedMs + delayMs - 1 - h.nowMs)
	require.Empty(t, h.replayAll("later", 0), "not 1 ms early")
	require.LessOrEqual(t, h.node.NextDeadlineMs(), committedMs+delayMs, "the node asks for a tick by the time the record falls due")
	h.tick(1)
	require.Equal(t, []string{"due"}, h.replayAll("later", 0), "delivered at the first tick it is due")
	copied := h.ok(msg.Replay{Topic: "later", Partition: 0, Offset: 0}).(msg.ReplayResult)
	require.GreaterOrEqual(t, copied.Message.TimestampMs, committedMs+delayMs)
}

// Property: a produce part forwarded to the owner of a delay child is
// refused unless it carries the child's attach epoch, as a fan-out
// cursor's copy does: a client's produce that a node forwarded before it
// applied the attach (and saw the child as a plain topic) must not enter
// the child at once (meta and fan-out review, medium).
func TestAForwardedPartEntersADelayChildOnlyAtItsEpoch(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	h.createTopic("later", func(r *msg.CreateTopic) { r.Parent, r.FanoutDelayMs = "orders", 60_000 })
	later, _ := h.node.lookupTopic("later")
	require.NotZero(t, later.attachEpoch)
	forward := func(id uint64, epoch uint64, payload string) msg.ForwardReply {
		require.NoError(t, h.node.Step(msg.Envelope{From: "n9", To: h.cfg.NodeID, Message: msg.ForwardRequest{ID: id,
			Request: msg.Produce{Topic: "later", Batch: true, FanoutEpoch: epoch, Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte(payload)}}}}}))
		h.flush()
		for _, env := range h.messages {
			if reply, ok := env.Message.(msg.ForwardReply); ok && reply.ID == id {
				return reply
			}
		}
		t.Fatalf("no answer to forward %d", id)
		return msg.ForwardReply{}
	}
	refused := forward(1, 0, "early")
	require.Equal(t, msg.CodeConflict, msg.CodeOf(refused.Reply.Err), "a client's part")
	stale := forward(2, later.attachEpoch+1, "stale")
	require.Equal(t, msg.CodeConflict, msg.CodeOf(stale.Reply.Err), "a copy for another attach")
	require.Empty(t, h.replayAll("later", 0))
	copied := forward(3, later.attachEpoch, "due")
	require.NoError(t, copied.Reply.Err, "a cursor's copy at the child's epoch")
	require.Equal(t, []string{"due"}, h.replayAll("later", 0))
}

// Property: a cursor's copy made for a link that ended at the child's
// owner (the child detached, or deleted and created again) is refused
// there, until the parent's node applies the end and stops the cursor: a
// topic that is no longer the child gets no parent records.
func TestACopyForAnEndedLinkIsRefused(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit", func(r *msg.CreateTopic) { r.Parent = "orders" })
	audit, _ := h.node.lookupTopic("audit")
	epoch := audit.attachEpoch
	require.NotZero(t, epoch)
	h.ok(msg.DeleteTopic{Name: "audit"})
	h.createTopic("audit")
	require.NoError(t, h.node.Step(msg.Envelope{From: "n9", To: h.cfg.NodeID, Message: msg.ForwardRequest{ID: 7,
		Request: msg.Produce{Topic: "audit", Batch: true, FanoutEpoch: epoch, Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("late")}}}}}))
	h.flush()
	var answered bool
	for _, env := range h.messages {
		if reply, ok := env.Message.(msg.ForwardReply); ok && reply.ID == 7 {
			answered = true
			require.Equal(t, msg.CodeConflict, msg.CodeOf(reply.Reply.Err))
		}
	}
	require.True(t, answered)
	require.Empty(t, h.replayAll("audit", 0), "the re-created topic holds nothing of the old parent")
	h.produce("audit", 0, "own")
	require.Equal(t, []string{"own"}, h.replayAll("audit", 0), "a client's produce (no epoch) is served as ever")
}

// Property: a child that cannot take writes (deleted here) stalls only its
// own cursor: the parent takes produces, and another child still gets
// every record.
func TestFanoutStalledChildDoesNotStopTheParent(t *testing.T) {
	h := fanoutHarness(t)
	h.createTopic("other")
	h.ok(msg.AttachChild{Parent: "orders", Child: "other"})
	h.tick(1)
	other, _ := h.node.lookupTopic("other")
	h.node.beginFreeze(h.node.partitionOf(other, 0), "elsewhere", 1) // it takes no writes while frozen
	h.produce("orders", 0, "x")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Greater(t, h.node.partitions[partitionKey{"orders", 0}].fanout["other"].retryAtMs, h.nowMs, "the failed batch holds its cursor back")
	h.produce("orders", 0, "y")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"x", "y"}, h.replayAll("audit", 0))
	require.Zero(t, h.stats("other", 0).HighWatermark, "the stalled cursor copied nothing")
	require.Equal(t, uint64(2), h.lagOf("orders", "other").LagMessages)
	h.node.endFreeze(h.node.partitionOf(other, 0))
	h.tick(h.cfg.Fanout.RetryMs)
	require.Equal(t, []string{"x", "y"}, h.replayAll("other", 0), "the stalled cursor catches up after its retry")
}

// Property: a move of a parent partition carries its cursors, so the new
// owner copies exactly the backlog the old one had not copied yet: a
// cursor left behind would start again at the attach (copying the first
// records twice), one placed at the copy's end would lose the backlog.
// The child is a delay child, so that a backlog is still there at the
// flip.
func TestFanoutCursorTravelsWithAMove(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("orders", 3)
	const delayMs = 60_000
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "audit", Parent: "orders", FanoutDelayMs: delayMs}).Err)
	c.tick(100)
	source, childOwner := c.owners(leader, "orders")[0], c.owners(leader, "audit")[0]
	require.NotEqual(t, source, childOwner, "child partition 0 is placed apart from parent partition 0")
	childHWM := func() uint64 {
		detail, ok := c.do(childOwner, msg.GetTopic{Name: "audit", Partition: 0}).Result.(msg.TopicDetail)
		require.True(t, ok)
		return detail.PartitionStats[0].HighWatermark
	}
	for i := range 5 {
		require.NoError(t, c.do(source, producePinned("orders", 0, fmt.Sprint(i))).Err)
	}
	c.tickUntil(1_000, 2*delayMs/1_000, func() bool { return childHWM() == 5 })
	for i := 5; i < 10; i++ {
		require.NoError(t, c.do(source, producePinned("orders", 0, fmt.Sprint(i))).Err)
	}
	target := c.otherThan(source, childOwner)
	c.startMove(leader, "orders", 0, target)
	c.tickUntil(100, 100, func() bool { return c.owners(leader, "orders")[0] == target })
	require.Equal(t, uint64(5), childHWM(), "the second five were not due before the flip")
	c.tickUntil(1_000, 2*delayMs/1_000, func() bool { return childHWM() >= 10 })
	c.tick(5_000)
	require.Equal(t, uint64(10), childHWM(), "no record copied twice")
	for i := range 10 {
		replayed := c.do(childOwner, msg.Replay{Topic: "audit", Partition: 0, Offset: uint64(i)})
		require.NoError(t, replayed.Err)
		require.Equal(t, fmt.Sprint(i), string(replayed.Result.(msg.ReplayResult).Message.Payload), "the new owner copied the backlog in order")
	}
	owner := c.owners(leader, "orders")[0] // the planner may have moved it on since
	require.Equal(t, uint64(10), cursorFileOf(t, c.nodes[owner].fs, "orders", 0, "audit").NextOffset, "the owner's cursor carried on")
}

// Property: records committed after the attach but before the owner first
// ran the cursor (it applied the attach late) still reach the child.
func TestFanoutEpochStartsAtTheAttachTime(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	for i := range 5 {
		h.produce("orders", 1, fmt.Sprint("old", i))
		h.tick(1)
	}
	h.tick(h.cfg.Fanout.AttachClockSkewMs)
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.produce("orders", 1, "new0") // before any tick ran the cursor
	h.produce("orders", 1, "new1")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"new0", "new1"}, h.replayAll("audit", 1))
}

// Property: an attach's time is its proposer's clock and a record's its
// owner's, which may be behind: a record committed before the attach's
// time by less than FanoutConfig.AttachClockSkewMs reaches the child
// (it may have been committed after the attach), an older one does not.
// Without the allowance, a cluster whose clocks disagreed by a few
// hundred ms dropped the records produced right after an attach (the
// simulator's skewed clocks).
func TestAnAttachFromAClockAheadMissesNoRecordCommittedAfterIt(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	h.createTopic("audit")
	h.produce("orders", 2, "long before")
	h.tick(h.cfg.Fanout.AttachClockSkewMs + 400)
	h.produce("orders", 2, "just before") // as an owner whose clock is 300 ms behind the proposer's stamps one after
	h.tick(300)
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.produce("orders", 2, "after")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"just before", "after"}, h.replayAll("audit", 2))
}

// Property: the lag of a child sums the cursors of every owner of the
// parent's partitions, gathered over the peers.
func TestFanoutLagIsGatheredFromEveryOwner(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("orders", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "later", Parent: "orders", FanoutDelayMs: 60_000}).Err)
	c.tick(100)
	owners := c.owners(leader, "orders")
	require.Len(t, slices.Compact(slices.Sorted(slices.Values(owners))), 3, "one parent partition per node")
	for partition := range 3 {
		for i := range partition + 1 {
			require.NoError(t, c.do(owners[partition], producePinned("orders", partition, fmt.Sprint(i))).Err)
		}
	}
	c.tick(100)
	for _, at := range owners {
		result := c.do(at, msg.ListChildren{Parent: "orders"}).Result.(msg.ChildrenResult)
		require.Equal(t, []msg.ChildLag{{Name: "later", DelayMs: 60_000, LagMessages: 6, LagComplete: true}}, result.Children,
			"asked at %s: 1 + 2 + 3 records wait on three owners", at)
	}
}

// Property: a cursor's file is written by its partition's sync round,
// never on the loop: the Tick that finds it due leaves the file as it
// was, the Ready then taken carries the write in the parent partition's
// Sync, and the file holds the new offset only once that Sync ran. A
// crash before the round ran copies the batch again; a graceful close
// writes what lags.
func TestFanoutCursorFileRidesTheSyncRound(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the fresh cursors' files say 0
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset)
	h.produce("orders", 2, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied; the file's interval has not ended
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset)

	h.nowMs += h.cfg.Fanout.CursorPersistIntervalMs
	h.node.Tick(h.nowMs)
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "nothing is written on the loop")
	rd := h.node.Ready()
	writes := 0
	for _, s := range rd.Syncs {
		if s.Dir == PartitionDir("orders", 2) {
			writes += s.CursorWrites()
		}
	}
	require.Equal(t, 1, writes, "the parent partition's round writes its cursor")
	for _, s := range rd.Syncs {
		require.NoError(t, s.Run())
	}
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "the round wrote it")
	h.node.Advance(rd)
	h.flush()

	h.produce("orders", 2, "b")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	h.restart()
	require.Equal(t, uint64(2), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "a graceful close writes what lags")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"a", "b"}, h.replayAll("audit", 2), "nothing copied twice after a graceful close")
}

// Property: a cursor write whose round never came (the parent's log
// failed after the write was scheduled, which drops the partition from
// the next Ready) is scheduled again: the file still follows the cursor.
func TestFanoutCursorWriteOutlivesAFailedLog(t *testing.T) {
	h := fanoutHarness(t)
	h.cfg.Log.WriteBufferBytesMax = 1 // an append writes at once: a write fault fails the produce's log
	h.restart()
	h.tick(1)
	h.produce("orders", 2, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied; the file says 0
	h.nowMs += h.cfg.Fanout.CursorPersistIntervalMs
	h.node.Tick(h.nowMs) // the write is due with the partition's next round
	h.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1)
	h.nextID++
	h.node.Handle(h.nextID, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 2, Payload: []byte("b")}}})
	h.flush()
	require.Error(t, h.replies[h.nextID].Err, "the append failed the log")
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "the round that was to write it left the partition out")
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "written by a later round")
}

// fanoutEventLog records the fan-out reports and topic drops a node makes.
type fanoutEventLog struct {
	NopObserver
	events []string
}

func (o *fanoutEventLog) FanoutCopied(parent, child string, _, _ int) {
	o.events = append(o.events, "copied:"+parent+"->"+child)
}

func (o *fanoutEventLog) FanoutStalled(parent, child string, _ int) {
	o.events = append(o.events, "stalled:"+parent+"->"+child)
}

func (o *fanoutEventLog) FanoutDropped(parent, child string, _ int, _ uint64) {
	o.events = append(o.events, "dropped-records:"+parent+"->"+child)
}

func (o *fanoutEventLog) TopicDropped(topic string) { o.events = append(o.events, "dropped:"+topic) }

// Property: once a child's deletion is applied, no fan-out report names
// it, even for a copy batch that was in flight then (the host dropped the
// child's metric series at the deletion; a report would bring one back
// for as long as the parent lives).
func TestADeletedChildIsNotReportedAfterItsDrop(t *testing.T) {
	log := &fanoutEventLog{}
	h := newHarness(t)
	h.observer = log
	h.restart()
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1) // the cursors start at the parent's tail
	h.produce("orders", 1, "a")

	h.nextID++
	h.node.Handle(h.nextID, msg.DeleteTopic{Name: "audit"})
	h.advanceOnce() // the deletion is persisted; it applies at the next Ready's Advance
	h.nowMs += h.cfg.Fanout.LingerMs
	h.node.Tick(h.nowMs) // the batch leaves, answered in that same Advance, after the drop
	h.flush()
	h.tick(h.cfg.Fanout.RetryMs)

	dropped := slices.Index(log.events, "dropped:audit")
	require.GreaterOrEqual(t, dropped, 0, "events: %v", log.events)
	for _, event := range log.events[dropped+1:] {
		require.NotContains(t, event, "audit", "events: %v", log.events)
	}
}

// evictingFanoutHarness is a node that keeps two logs open, with a
// parent "orders" and its child "audit" and a third topic "other" (three
// partitions each), whose cursors are loaded and their files written (the
// write interval, cursorPersistIntervalMs, starts then).
func evictingFanoutHarness(t *testing.T, cursorPersistIntervalMs int64) *harness {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.cfg.Fanout.CursorPersistIntervalMs = cursorPersistIntervalMs
	h.restart()
	three := func(r *msg.CreateTopic) { r.Partitions = 3 }
	h.createTopic("orders", three)
	h.createTopic("audit", three)
	h.createTopic("other", three)
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	h.tick(1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	return h
}

// TestAParentRecordIsCopiedAfterItsLogIsEvicted: a parent's cursors that
// caught up ask for no wake; a record made durable then makes them due,
// so that when the parent's log is closed before the next tick (evicted
// under OpenLogsMax here) the driver reopens it and copies the record,
// instead of leaving it uncopied until something else opens the log.
func TestAParentRecordIsCopiedAfterItsLogIsEvicted(t *testing.T) {
	h := evictingFanoutHarness(t, DefaultFanoutConfig().CursorPersistIntervalMs)
	h.produce("orders", 0, "x")
	h.produce("other", 0, "a") // two other logs open: the parent's is evicted
	h.produce("other", 1, "b")
	require.False(t, h.node.store.IsOpen(PartitionDir("orders", 0)), "the parent's log was evicted")
	for range 10 {
		h.tick(1_000)
	}
	require.Equal(t, []string{"x"}, h.replayAll("audit", 0), "an acknowledged parent record reaches its child")
}

// TestAnEvictedParentLogWaitsClosedForItsCursorFiles: a cursor that
// advanced while its file may not yet be written (CursorPersistIntervalMs)
// leaves its evicted parent log closed until the interval ends, instead of
// reopening (and recovering) it at every tick to learn that; the file is
// written once the interval ends.
func TestAnEvictedParentLogWaitsClosedForItsCursorFiles(t *testing.T) {
	h := evictingFanoutHarness(t, 1_000) // far past the linger
	h.produce("orders", 0, "x")
	h.tick(h.cfg.Fanout.LingerMs) // the record is copied: the cursor advances, its file lags
	h.tick(1)
	cursor := h.node.partitions[partitionKey{"orders", 0}].fanout["audit"]
	require.Equal(t, uint64(1), cursor.next, "the record was copied")
	require.NotEqual(t, cursor.next, cursor.persisted, "its file waits for the interval")
	h.produce("other", 0, "a") // two other logs open: the parent's is evicted
	h.produce("other", 1, "b")
	parent := PartitionDir("orders", 0)
	require.False(t, h.node.store.IsOpen(parent), "the parent's log was evicted")
	persistAtMs := h.node.partitions[partitionKey{"orders", 0}].cursorFiles.persistAtMs
	for h.nowMs+1 < persistAtMs {
		h.tick(1)
		require.False(t, h.node.store.IsOpen(parent), "the parent's log was reopened %d ms before its cursor file may be written", persistAtMs-h.nowMs)
	}
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	h.tick(1)
	require.Equal(t, cursor.next, cursor.persisted, "the cursor's file is written once the interval ended")
}

// TestADetachedChildsUnwrittenCursorIsForgotten: a child attached and
// detached before its cursors' files were first written leaves no cursor
// in memory and no file behind: the detach forgets the cursors, not only
// the files already on disk.
func TestADetachedChildsUnwrittenCursorIsForgotten(t *testing.T) {
	h := fanoutHarness(t)
	h.createTopic("audit2")
	h.tick(1) // audit's cursors load and their files are written: the interval starts
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit2"})
	h.tick(1) // audit2's cursors load; their files wait for the interval
	h.ok(msg.DetachChild{Parent: "orders", Child: "audit2"})
	h.tick(1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the next round writes what lags
	h.tick(60_000)
	for partition := range 3 {
		p := h.node.partitions[partitionKey{"orders", partition}]
		_, inMemory := p.fanout["audit2"]
		require.False(t, inMemory, "partition %d: the detached child's cursor is forgotten", partition)
		_, err := h.fs.Stat(cursorPath(PartitionDir("orders", partition), "audit2"))
		require.ErrorIs(t, err, storage.ErrNotExist, "partition %d: no cursor file of a detached child", partition)
		_, kept := p.fanout["audit"]
		require.True(t, kept, "partition %d: the attached child's cursor stays", partition)
	}
}

// Once a batch is durable in the child the cursor is due again: a driver
// that sleeps until NextDeadlineMs copied an idle parent's backlog one
// batch per unrelated tick (ten full batches took 499 ms; review
// finding).
func TestABacklogIsCopiedWithoutWaitingForUnrelatedTicks(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1)
	const batches = 10
	for b := range batches {
		records := make([]msg.ProduceRecord, h.cfg.Fanout.BatchRecordsMax)
		for i := range records {
			records[i] = msg.ProduceRecord{Partition: 0, Payload: []byte(fmt.Sprint(b, "-", i))}
		}
		h.ok(msg.Produce{Topic: "orders", Records: records, Batch: true})
	}
	start := h.nowMs
	want := uint64(batches * h.cfg.Fanout.BatchRecordsMax)
	for h.stats("audit", 0).HighWatermark < want && h.nowMs-start < 10_000 {
		next := max(h.node.NextDeadlineMs(), h.nowMs+1) // a driver sleeps until the node's next deadline
		h.tick(next - h.nowMs)
	}
	require.Equal(t, want, h.stats("audit", 0).HighWatermark)
	require.Less(t, h.nowMs-start, int64(100), "an idle parent's backlog of %d full batches is copied without waiting for unrelated ticks", batches)
}

// At the relay cap every cursor gets its turn: stepped always in the same
// order, the first cursors took every relay slot each time while the
// last ones, backed off after a refusal, never copied anything as long as
// the parent was busy (review finding).
func TestAtTheRelayCapEveryChildGetsCopies(t *testing.T) {
	h := newHarness(t)
	h.cfg.RelaysInFlightMax = 1
	h.restart()
	h.createTopic("orders", func(r *msg.CreateTopic) { r.RetentionMs = 24 * 3_600_000 })
	h.createTopic("a-audit")
	h.createTopic("b-audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "a-audit"})
	h.ok(msg.AttachChild{Parent: "orders", Child: "b-audit"})
	h.tick(1)
	produced := 0
	for range 400 { // 20 s of a steady parent: one record every 50 ms
		h.produce("orders", 0, fmt.Sprint(produced))
		produced++
		h.tick(50)
	}
	a, b := len(h.replayAll("a-audit", 0)), len(h.replayAll("b-audit", 0))
	t.Logf("produced %d; a-audit has %d, b-audit has %d", produced, a, b)
	require.Greater(t, b, 0, "after 20 s of produce the second child got something (a-audit got %d)", a)
}

// A fan-out child's name is short enough for its cursor files: a longer
// one (topic names go to 255 bytes) failed every sync round that wrote
// the cursor on a real file system, or never loaded it (review finding).
// Both an attach and a create with a parent refuse it, and change nothing.
func TestAFanoutChildsNameFitsItsCursorFile(t *testing.T) {
	h := newHarness(t)
	h.createTopic("orders")
	longest, tooLong := strings.Repeat("c", fanoutChildNameBytesMax), strings.Repeat("c", fanoutChildNameBytesMax+1)
	require.Equal(t, storage.FileNameBytesMax, len(cursorFilePrefix+longest+cursorFileSuffix+storage.TemporarySuffix))
	h.createTopic(tooLong)
	h.fail(msg.AttachChild{Parent: "orders", Child: tooLong}, msg.CodeInvalid)
	h.fail(msg.CreateTopic{Name: tooLong + "d", Parent: "orders", Partitions: 1}, msg.CodeInvalid)
	h.createTopic(longest, func(r *msg.CreateTopic) { r.Parent = "orders" })
	var names []string
	for _, lag := range h.ok(msg.ListChildren{Parent: "orders"}).(msg.ChildrenResult).Children {
		names = append(names, lag.Name)
	}
	require.Equal(t, []string{longest}, names, "only the child whose name fits was linked")
}

// The owner of a parent partition whose log was evicted still knows its
// cursors' lag: it was reported unknown (0, lag_complete false), so a
// delay child's backlog of five records looked empty (review finding).
func TestTheLagOfAnEvictedParentPartitionIsKnown(t *testing.T) {
	h := newHarness(t)
	h.cfg.OpenLogsMax = 2
	h.restart()
	three := func(r *msg.CreateTopic) { r.Partitions = 3; r.RetentionMs = 24 * 3_600_000 }
	h.createTopic("orders", three)
	h.createTopic("other", three)
	h.createTopic("later", func(r *msg.CreateTopic) { r.Parent, r.FanoutDelayMs = "orders", 60_000 })
	h.tick(1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	for i := range 5 {
		h.produce("orders", 0, fmt.Sprint(i))
	}
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, uint64(5), h.lagOf("orders", "later").LagMessages, "five records wait for their delay")
	h.produce("other", 0, "a") // two other logs open: the parent's is evicted
	h.produce("other", 1, "b")
	require.False(t, h.node.store.IsOpen(PartitionDir("orders", 0)), "the parent's log was evicted")
	h.tick(1_000)
	require.Equal(t, msg.ChildLag{Name: "later", DelayMs: 60_000, LagMessages: 5, LagComplete: true}, h.lagOf("orders", "later"),
		"five records still wait for the delay child on this node, which answered")
}

// A delay out of range is refused naming the field the request used:
// delay_ms in an attach, fanout_delay_ms in a create with a parent.
func TestAFanoutDelayOutOfRangeNamesItsField(t *testing.T) {
	h := fanoutHarness(t)
	tooLong := int64(msg.FanoutDelayMsMax + 1)
	created := h.fail(msg.CreateTopic{Name: "late", Parent: "orders", FanoutDelayMs: tooLong}, msg.CodeInvalid)
	require.Contains(t, created.Message, "fanout_delay_ms must be between 0 and")
	h.createTopic("standalone")
	attached := h.fail(msg.AttachChild{Parent: "orders", Child: "standalone", DelayMs: tooLong}, msg.CodeInvalid)
	require.Contains(t, attached.Message, "delay_ms must be between 0 and")
	require.NotContains(t, attached.Message, "fanout_delay_ms")
}

// Idle cursors cost a tick nothing: once every child has copied a
// parent's records (and the cursor files are written), no tick steps the
// cursors again until something gives them work, although the parent's
// logs stay open. Stepping every cursor of every open parent log at every
// tick made three idle parents of 108 partitions with 108 children each
// take most of a host loop's time (the loop ticks once per round), and
// slowed every client's produce twentyfold. A record still wakes them.
func TestIdleFanoutCursorsAreNotSteppedAtEveryTick(t *testing.T) {
	const partitions, children = 8, 8
	h := newHarness(t)
	h.createTopic("orders", func(r *msg.CreateTopic) { r.Partitions = partitions; r.RetentionMs = 24 * 3_600_000 })
	for i := range children {
		h.createTopic(fmt.Sprint("audit", i), func(r *msg.CreateTopic) { r.Partitions = partitions })
		h.ok(msg.AttachChild{Parent: "orders", Child: fmt.Sprint("audit", i)})
	}
	h.tick(1)
	for partition := range partitions {
		h.produce("orders", partition, "x")
	}
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, partitions*children, h.node.Stats().FanoutCursors)
	for i := range children {
		require.Equal(t, []string{"x"}, h.replayAll(fmt.Sprint("audit", i), 5), "audit%d got the record", i)
	}
	const ticks = 1_000
	before := h.node.Stats().FanoutCursorSteps
	for range ticks {
		h.tick(1)
	}
	require.True(t, h.node.store.IsOpen(PartitionDir("orders", 0)), "the parent's logs stay open")
	steps := h.node.Stats().FanoutCursorSteps - before
	require.Zero(t, steps, "%d idle cursors were stepped %d times in %d ticks", partitions*children, steps, ticks)
	h.produce("orders", 3, "y")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(1)
	for i := range children {
		require.Equal(t, []string{"x", "y"}, h.replayAll(fmt.Sprint("audit", i), 3), "a record made durable wakes the cursors: audit%d", i)
	}
}

// A tick before any cursor's wake, with the topics unchanged, makes no
// pass at all: a pass looks at every parent partition this node owns,
// tens of nanoseconds each even when all wait, which came to a
// millisecond per tick (and the loop ticks once per round) on a node of
// 20,000 parent partitions. A produce, a link attached and a cursor's
// timer still bring passes.
func TestAFanoutPassWaitsForAWake(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1)
	h.produce("orders", 0, "x")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, []string{"x"}, h.replayAll("audit", 0))
	passes := h.node.fanout.turn
	for range 1_000 {
		h.tick(1)
	}
	require.Equal(t, passes, h.node.fanout.turn, "1,000 ticks with every cursor waiting made no fan-out pass")
	h.produce("orders", 0, "y")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(1)
	require.Equal(t, []string{"x", "y"}, h.replayAll("audit", 0), "a record made durable brings a pass")
	h.createTopic("audit2")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit2"})
	h.tick(1)
	h.produce("orders", 1, "z")
	h.tick(h.cfg.Fanout.LingerMs)
	h.tick(1)
	require.Equal(t, []string{"z"}, h.replayAll("audit2", 1), "a child attached while every cursor waited gets its copies")
}

// Property: a round whose cursor files the disk has no room for does not
// fail: the node goes on (a full disk stopped it there, at a write it can
// do without), the file keeps its earlier offset, the refusal is said
// once, and a later round writes the file once the disk has room.
func TestACursorWriteOnAFullDiskWaitsForRoom(t *testing.T) {
	events := &eventRecorder{}
	h := observedFanoutHarness(t, events)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the fresh cursors' files say 0
	h.produce("orders", 2, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied; the file says 0

	for range 3 { // three intervals on a full disk: each round's cursor write is refused
		refuseCursorFiles(h, 1)
		h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
		require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "the file keeps its earlier offset")
	}
	require.Equal(t, 1, countOf(events.events, "fanout-cursor-write-refused"), "said once, not at each retry: %v", events.events)

	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // room again
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "written once the disk has room")
	h.produce("orders", 2, "b")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"a", "b"}, h.replayAll("audit", 2), "the node went on copying")
}

// Property: the same holds for rounds run together (group sync): a
// cursor write the disk has no room for leaves every round's files as
// they were, and the rounds' records are durable and answered.
func TestCursorWritesOnAFullDiskRunTogetherWaitForRoom(t *testing.T) {
	events := &eventRecorder{}
	h := observedFanoutHarness(t, events)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	h.produce("orders", 1, "a")
	h.produce("orders", 2, "b")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied; the files say 0

	h.nowMs += h.cfg.Fanout.CursorPersistIntervalMs
	h.node.Tick(h.nowMs)
	h.nextID++
	h.node.Handle(h.nextID, msg.Produce{Topic: "orders", Records: []msg.ProduceRecord{{Partition: 0, Payload: []byte("c")}}})
	rd := h.node.Ready()
	writes := 0
	for _, s := range rd.Syncs {
		writes += s.CursorWrites()
	}
	require.Equal(t, 2, writes, "both parent partitions' rounds write their cursor")
	refuseCursorFiles(h, 1)
	require.NoError(t, RunTogether(h.fs, rd.Syncs), "the rounds do not fail for their cursor files")
	h.takeReplies(rd.Replies)
	h.node.Advance(rd)
	h.flush()
	require.NoError(t, h.replies[h.nextID].Err, "the round's produce is answered")
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 1, "audit").NextOffset)
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset)
	require.Equal(t, 2, countOf(events.events, "fanout-cursor-write-refused"), "said once per partition: %v", events.events)

	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 1, "audit").NextOffset, "written once the disk has room")
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset)
}

// Property: a parent partition whose log cannot open (a full disk: its
// files cannot be created) is retried at once, then after twice as long
// each time up to Fanout.RetryMs, not every millisecond: the cursors'
// retries logged hundreds of log-open-failed warnings a second
// (full-disk audit). Once it opens, the copy goes.
func TestAParentLogThatCannotOpenIsRetriedLessAndLessOften(t *testing.T) {
	events := &eventRecorder{}
	h := newHarness(t)
	h.observer = events
	h.restart()
	h.fs.FailNextMatching(storage.FaultCreate, storage.ErrNoSpace, 1_000_000, func(name string) bool {
		return strings.HasPrefix(name, "topics/orders/")
	})
	h.createTopic("orders")
	h.createTopic("audit")
	h.ok(msg.AttachChild{Parent: "orders", Child: "audit"})
	for range 2_000 {
		h.tick(1)
	}
	failures := countOf(events.events, "log-open-failed")
	require.Positive(t, failures, "the opens failed")
	require.LessOrEqual(t, failures, 3*(10+2), "about ten tries per partition to reach the 1 s step, then one a second: %d", failures)

	h.fs.FailNextMatching(storage.FaultCreate, nil, 0, nil)
	h.tick(h.cfg.Fanout.RetryMs)
	h.produce("orders", 1, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"a"}, h.replayAll("audit", 1), "copies go once the log opens")
}

// Property: a graceful close whose cursor files find the disk full
// closes without an error (the stop stays graceful: it exited 1), the
// files keep their earlier offsets, and it says so.
func TestAGracefulCloseOnAFullDiskLeavesTheCursorFilesLagging(t *testing.T) {
	events := &eventRecorder{}
	h := observedFanoutHarness(t, events)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs) // the fresh cursors' files say 0
	h.produce("orders", 2, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1) // copied; the file's interval has not ended
	refuseCursorFiles(h, 1_000)
	require.NoError(t, h.node.Close())
	h.fs.FailNextMatching(storage.FaultCreate, nil, 0, nil)
	require.Equal(t, uint64(0), cursorFileOf(t, h.fs, "orders", 2, "audit").NextOffset, "the file keeps its earlier offset")
	require.Contains(t, events.events, "fanout-cursor-write-refused")
	h.node = nil
	h.start()
	h.tick(h.cfg.Fanout.LingerMs + 1)
	require.Equal(t, []string{"a", "a"}, h.replayAll("audit", 2), "copied again from the earlier offset: a duplicate, never a gap")
}

// Property: an open whose settling of the cursors keeps failing (a
// cursor file above the recovered high watermark, whose clamp finds the
// disk full) backs off like any failed open: the settling made the
// cursors due, which reset the backoff, and the clamp was retried every
// millisecond, each a close and a recovery of the log (review).
func TestAClampThatKeepsFailingBacksOff(t *testing.T) {
	events := &eventRecorder{}
	h := observedFanoutHarness(t, events)
	h.produce("orders", 1, "a")
	h.tick(h.cfg.Fanout.LingerMs + 1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	require.Equal(t, uint64(1), cursorFileOf(t, h.fs, "orders", 1, "audit").NextOffset)
	h.crash()
	path := cursorPath(PartitionDir("orders", 1), "audit")
	data, err := storage.ReadFile(h.fs, path)
	require.NoError(t, err)
	var file cursorFile
	epoch, err := decodeCursorFile(data, &file)
	require.NoError(t, err)
	data, err = encodeCursorFile(epoch, 5) // above the recovered hwm 1: as after a damaged tail
	require.NoError(t, err)
	require.NoError(t, storage.WriteFileAtomic(h.fs, path, data))
	refuseCursorFiles(h, 1_000_000)
	events.events = nil
	for range 2_000 {
		h.tick(1)
	}
	failures := countOf(events.events, "fanout-cursor-clamp-failed")
	require.Positive(t, failures)
	require.LessOrEqual(t, failures, 12, "about ten tries to reach the 1 s step, then one a second: %d", failures)
}
