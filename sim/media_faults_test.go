package sim

import (
	"testing"

	"narad/chaos"
	"narad/msg"

	"github.com/stretchr/testify/require"
)

// TestMediaFaultExcusesOnlyTheRecordItHit: a record a media fault
// destroyed is excused from the no-loss accounting and from the drain,
// while an acknowledged record next to it that no consumer got is still
// lost; and only the offset hit may be answered 410 by a replay.
func TestMediaFaultExcusesOnlyTheRecordItHit(t *testing.T) {
	h := newHistory()
	ids := []string{"m0000001", "m0000002", "m0000003"}
	h.produceCalled(ids, 0)
	h.produceAcked(ids, placementsAt(0, 0, 1, 2), 0, 1)
	h.delivered("m0000003", 0, 2, 2, 3)
	h.excuseCorrupt("m0000001", msg.Placement{Partition: 0, Offset: 0})
	h.excuseCorrupt("m0000001", msg.Placement{Partition: 0, Offset: 0}) // twice: counted once
	a := h.account()
	require.Equal(t, 1, a.Lost)
	require.Equal(t, []string{"m0000002"}, a.LostIDs)
	require.Equal(t, 1, a.Excused)
	require.False(t, h.allAckedDelivered(), "m0000002 is still owed")
	h.delivered("m0000002", 0, 1, 4, 5)
	require.True(t, h.allAckedDelivered())
	require.Zero(t, h.account().Lost)

	media := &mediaFaults{hit: map[int]map[uint64]bool{0: {0: true}}}
	require.True(t, media.unreadable(0, 0))
	require.False(t, media.unreadable(0, 1))
	require.False(t, media.unreadable(1, 0))
	var none *mediaFaults
	require.False(t, none.unreadable(0, 0), "a world whose node never started has no media fault")

	t.Run("a retried copy elsewhere", excusesOnlyThePlacementItHit)
}

// excusesOnlyThePlacementItHit: a record whose produce was retried has two
// acknowledged copies; the fault destroying one of them excuses nothing,
// since the broker still owes the other.
func excusesOnlyThePlacementItHit(t *testing.T) {
	h := newHistory()
	id := []string{"m0000001"}
	h.produceCalled(id, 0)
	h.produceAcked(id, placementsAt(2, 5), 0, 1)
	h.produceAcked(id, placementsAt(2, 12), 2, 3) // the retry after a lost answer
	h.excuseCorrupt("m0000001", msg.Placement{Partition: 2, Offset: 5})
	a := h.account()
	require.Equal(t, 1, a.Lost, "the copy at p2/12 was not hit")
	require.Zero(t, a.Excused)
	require.False(t, h.allAckedDelivered(), "the copy at p2/12 is still owed")

	h.excuseCorrupt("m0000001", msg.Placement{Partition: 2, Offset: 12})
	require.Zero(t, h.account().Lost, "every acknowledged copy was hit")
	require.True(t, h.allAckedDelivered())

	h.produceAcked(id, placementsAt(2, 20), 4, 5) // a third copy, acknowledged after the hits
	require.Equal(t, 1, h.account().Lost)
	require.False(t, h.allAckedDelivered())
	h.delivered("m0000001", 2, 20, 6, 7)
	require.True(t, h.allAckedDelivered())
	require.Zero(t, h.account().Lost)
}

// placementsAt places records in one partition at the offsets given.
func placementsAt(partition int, offsets ...uint64) []msg.Placement {
	placements := make([]msg.Placement, len(offsets))
	for i, offset := range offsets {
		placements[i] = msg.Placement{Partition: partition, Offset: offset}
	}
	return placements
}

// TestOnlySweepsWithMediaFaultsExpectTheirMark: a sweep expects the mark of
// a skipped corrupt record exactly when its runs may draw media corruption;
// a fan-out sweep never can.
func TestOnlySweepsWithMediaFaultsExpectTheirMark(t *testing.T) {
	skipped := chaos.MarkNodeCorruptRecordSkipped
	opts := DefaultOptions(1)
	require.True(t, mediaFaultsApply(opts))
	require.Contains(t, sweepExpectedMarks(opts), skipped)
	for _, other := range []struct {
		name   string
		change func(*Options)
		draws  bool
	}{
		{"fan-out", func(o *Options) { o.Fanout = true }, true},
		{"three nodes with moves", func(o *Options) { o.Nodes, o.Moves, o.MediaInClusters = 3, true, true }, true},
		{"three nodes with moves, by default", func(o *Options) { o.Nodes, o.Moves = 3, true }, true},
		{"three nodes with moves, turned off", func(o *Options) { o.Nodes, o.Moves, o.MediaInClusters = 3, true, false }, false},
		{"three nodes without moves", func(o *Options) { o.Nodes = 3 }, false},
		{"network", func(o *Options) { o.Faults = ProfileNetwork }, false},
	} {
		opts := DefaultOptions(1)
		other.change(&opts)
		require.Equal(t, other.draws, mediaFaultsApply(opts), other.name)
		require.NotContains(t, sweepExpectedMarks(opts), skipped, other.name)
	}
}

// mediaFaultSeed is a single-node seed whose media fault lands and whose
// consumers meet the corrupt record.
const mediaFaultSeed = 3

// TestASingleNodeSeedSkipsACorruptRecord: the media fault builds the one
// path of the core that skips a record recovery found corrupt, and every
// checker passes with exactly the records it destroyed excused.
func TestASingleNodeSeedSkipsACorruptRecord(t *testing.T) {
	report := Run(DefaultOptions(mediaFaultSeed))
	require.Nil(t, report.Failure, "seed %d must pass", mediaFaultSeed)
	faults := map[string]int{}
	for _, fault := range report.Faults {
		faults[fault.Name] = fault.Count
	}
	require.Positive(t, faults["media-corrupt"], "seed %d no longer corrupts a frame", mediaFaultSeed)
	reached := map[string]int{}
	for _, mark := range report.Marks {
		reached[mark.Name] += mark.Count
	}
	require.Positive(t, reached[string(chaos.MarkNodeCorruptRecordSkipped)], "seed %d no longer skips a corrupt record", mediaFaultSeed)
}

// zeroedEndSeed is a single-node seed (disk faults) whose media fault
// zeroes the last frames of a segment below its persisted high-watermark.
// Recovery once took those zeros for the zero tail it writes ahead,
// lowered the high-watermark below acknowledged records and handed their
// offsets out again ("recovered high-watermark 32 below the durable 33",
// seed 6100003; the control plane's writes changed that seed's draws,
// and 6100004's went when recovery came to raise the high-watermark in
// place).
const zeroedEndSeed = 6100032

// TestAZeroedSegmentEndIsKeptAsCorrupt: the zeroed frames are kept as
// corrupt (skipped, their records excused), and every checker passes.
func TestAZeroedSegmentEndIsKeptAsCorrupt(t *testing.T) {
	opts := DefaultOptions(zeroedEndSeed)
	opts.Faults = ProfileDisk
	report := Run(opts)
	require.Nil(t, report.Failure, "seed %d must pass: %s", zeroedEndSeed, report.FailureText())
	faults := map[string]int{}
	for _, fault := range report.Faults {
		faults[fault.Name] = fault.Count
	}
	require.Positive(t, faults["media-zeroed"], "seed %d no longer zeroes the end of a segment", zeroedEndSeed)
}
