package sim

import (
	"fmt"
	"path"
	"strconv"
	"strings"

	"narad/msg"
	"narad/storage"
)

// The aged-out fan-out world (Options.FanoutAgedOut, with Options.Fanout):
// the topic keeps its records for the shortest retention the API allows
// it (an hour, plus the delay child's delay), and the disk under the
// copy child's segments fails for longer than that while the topic holds
// records its cursors have not copied: retention deletes them first, and
// the cursors skip them (chaos.MarkFanoutRecordsAgedOut).
//
// The simulator watches every segment removal of the topic's partitions
// (watchedFS) and keeps, per partition, the offset ranges whose removal
// was made durable: a segment file removed while it was its directory's
// oldest, with a later segment left after it, takes the offsets from its
// base to that segment's base (the node's own report of what retention
// deleted is not used). Those offsets, and no others, excuse:
//
//   - a replay of the topic answered 410 Gone at such an offset (the
//     reader moves on to the range's end);
//   - a record answered 202 missing from a child at the end, if every
//     offset it was acknowledged at lies in such a range.
//
// A record retention took before the copy reached it is never in the
// child; every other record answered 202 must be.
const (
	// agedOutRetentionMs is the topic's retention: the least the API
	// accepts for a parent whose delay child delays fanoutDelayMs.
	agedOutRetentionMs = msg.RetentionMsMin + fanoutDelayMs
	// agedOutRetentionCheckMs is the nodes' retention check interval in
	// the world: the default (a minute) passes without a check when the
	// faults restart a node every few seconds, as they do for the hour.
	agedOutRetentionCheckMs = 1_000
	// The world's timeline, from the start of the safety phase: the copy
	// child's disk fails from agedOutStallFromMs (its cursors copied for
	// a while); the producers pause at agedOutPauseMs (the records since
	// the stall wait in the topic, uncopied), and produce again at
	// agedOutResumeMs, half a minute after every record produced before
	// the pause expired, so that the segment they were writing then
	// fills and goes too; the disk heals at agedOutHealMs, half a minute
	// later, once every segment that holds only records produced before
	// the pause is gone. The cursors then find the oldest record left
	// one retention will not take in the run: a cursor that skipped it
	// would leave a gap no removal excuses.
	agedOutStallFromMs = 10_000
	agedOutPauseMs     = 40_000
	agedOutResumeMs    = agedOutPauseMs + agedOutRetentionMs + 30_000
	agedOutHealMs      = agedOutResumeMs + 30_000
	// AgedOutSafetyMs is the safety phase of the world: the stall, then
	// half a minute of copies and records.
	AgedOutSafetyMs = agedOutHealMs + 30_000
)

// errAgedOutStall is the copy child's failing disk.
var errAgedOutStall = fmt.Errorf("%w: the copy child's disk fails (aged-out stall)", storage.ErrIO)

// fanoutAgedOut is the world's state.
type fanoutAgedOut struct {
	w *World
	// childDir is the copy child's topic directory ("topics/sim-copy/").
	childDir string
	// stallFromMs and stallUntilMs bound the copy child's failing disk,
	// pauseFromMs and resumeAtMs the producers' pause; 0 until the
	// safety phase starts.
	stallFromMs, stallUntilMs, pauseFromMs, resumeAtMs int64
	// pending is the removal of a topic's segment last seen, until the
	// node makes its directory durable (confirmed into taken), fails
	// to, or removes another file first (forgotten: a crash may undo it).
	pending *removedRange
	// taken holds, by partition of the topic, the offset ranges
	// retention took, as their durable removals showed them, in the
	// order they happened (ascending: retention removes oldest first).
	taken map[int][]removedRange
	// lastRemovalMs is when the latest range was added to taken.
	lastRemovalMs int64
	// excusedIDs counts the acknowledged records a child lacked at the
	// end, excused because retention took them before their copy.
	excusedIDs int
}

// removedRange is the offsets [from, to) of one segment of partition
// that a node removed, in directory dir.
type removedRange struct {
	node      *simNode
	dir       string
	partition int
	from, to  uint64
}

// newFanoutAgedOut returns the world's state; nil unless the options ask
// for it in a single-node world (a cluster's probes and moves read the
// topic from offset 0 and copy the child's segments: they would need
// excuses of their own).
func newFanoutAgedOut(w *World) *fanoutAgedOut {
	if !w.opts.FanoutAgedOut || !w.opts.Fanout || w.opts.Nodes != 1 {
		return nil
	}
	return &fanoutAgedOut{w: w, childDir: "topics/" + w.fanoutChildren()[0].name + "/", taken: map[int][]removedRange{}}
}

// createTopicFields is the part of the topic's create body that sets its
// retention; "" without the world.
func (a *fanoutAgedOut) createTopicFields() string {
	if a == nil {
		return ""
	}
	return fmt.Sprintf(`,"retention_ms":%d`, agedOutRetentionMs)
}

// start schedules the stall from the start of the safety phase.
func (a *fanoutAgedOut) start() {
	if a == nil {
		return
	}
	a.stallFromMs, a.stallUntilMs = a.w.nowMs+agedOutStallFromMs, a.w.nowMs+agedOutHealMs
	a.pauseFromMs, a.resumeAtMs = a.w.nowMs+agedOutPauseMs, a.w.nowMs+agedOutResumeMs
	a.w.at(agedOutStallFromMs, func() { a.w.tracef("aged-out: %s fails until %d ms", a.childDir, a.stallUntilMs) })
	a.w.at(agedOutHealMs, func() { a.w.tracef("aged-out: %s heals", a.childDir) })
}

// producersPausedFor returns how long the producers still pause; 0 when
// they produce.
func (a *fanoutAgedOut) producersPausedFor() int64 {
	if a == nil || a.w.nowMs < a.pauseFromMs || a.w.nowMs >= a.resumeAtMs {
		return 0
	}
	return a.resumeAtMs - a.w.nowMs
}

// stalls reports whether a write to the file name fails now: a segment of
// the copy child during the stall.
func (a *fanoutAgedOut) stalls(name string) bool {
	return a != nil && a.w.nowMs >= a.stallFromMs && a.w.nowMs < a.stallUntilMs && a.stallFromMs > 0 &&
		strings.HasPrefix(name, a.childDir) && strings.HasSuffix(name, ".log")
}

// watches reports whether the file name is one the stall may fail later.
func (a *fanoutAgedOut) watches(name string) bool {
	return a != nil && strings.HasPrefix(name, a.childDir) && strings.HasSuffix(name, ".log")
}

// removed notes a removal by n of the file name that err says succeeded:
// a segment of the topic older than every segment left in its directory,
// of which one is left, is pending until its directory is made durable.
func (a *fanoutAgedOut) removed(n *simNode, name string, err error) {
	if a == nil {
		return
	}
	a.pending = nil
	dir, file := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	topic, partition, ok := parsePartitionPath(dir)
	base, isSegment := segmentBase(file)
	if err != nil || !ok || topic != a.w.topic || partition < 0 || !isSegment {
		return
	}
	names, err := n.fs.List(dir)
	if err != nil {
		return
	}
	next, found := uint64(0), false
	for _, other := range names {
		otherBase, isSegment := segmentBase(other)
		switch {
		case !isSegment:
		case otherBase <= base:
			return // not the oldest: not retention's removal
		case !found || otherBase < next:
			next, found = otherBase, true
		}
	}
	if found {
		a.pending = &removedRange{node: n, dir: dir, partition: partition, from: base, to: next}
	}
}

// dirSynced confirms the pending removal when the node that removed it
// synced its directory. A sync that failed confirms it too: the removal
// is not durable, but the node fails the log and its recovery finds the
// file gone, so it answers 410 for those offsets; only a crash of the
// machine may bring the file back, and its records are then read again
// as any record is (a namespace fault aimed at a partition directory's
// sync found this, seed 6298730).
func (a *fanoutAgedOut) dirSynced(n *simNode, dir string, _ error) {
	if a == nil || a.pending == nil || a.pending.node != n || a.pending.dir != dir {
		return
	}
	r := *a.pending
	a.pending = nil
	a.taken[r.partition] = append(a.taken[r.partition], r)
	a.lastRemovalMs = a.w.nowMs
	a.w.tracef("aged-out: %s removed offsets %d to %d of %s", n.id, r.from, r.to-1, dir)
}

// removedEnd reports whether offset of partition lies in a range
// retention took, and the end of that range.
func (a *fanoutAgedOut) removedEnd(partition int, offset uint64) (uint64, bool) {
	if a == nil {
		return 0, false
	}
	for _, r := range a.taken[partition] {
		if offset >= r.from && offset < r.to {
			return r.to, true
		}
	}
	return 0, false
}

// skipTaken moves a reader's cursor of partition past the range
// retention took when the cursor lies in one, and reports whether it
// did: a replay answered 410 there is excused.
func (a *fanoutAgedOut) skipTaken(partition int, cursor *uint64) bool {
	end, taken := a.removedEnd(partition, *cursor)
	if taken {
		*cursor = end
	}
	return taken
}

// excused reports whether every offset the record id was acknowledged at
// lies in a range retention took.
func (a *fanoutAgedOut) excused(id string) bool {
	if a == nil {
		return false
	}
	placements := a.w.history.ackedAt[id]
	for _, p := range placements {
		if _, taken := a.removedEnd(p.Partition, p.Offset); !taken {
			return false
		}
	}
	return len(placements) > 0
}

// mayHaveTaken reports whether retention may have taken a copy of the
// record id from the topic: it was first produced before a removal.
func (a *fanoutAgedOut) mayHaveTaken(id string) bool {
	if a == nil || a.lastRemovalMs == 0 {
		return false
	}
	callMs, attempted := a.w.history.firstCallMs[id]
	return attempted && callMs <= a.lastRemovalMs
}

// excusedCount is the report's count; 0 without the world.
func (a *fanoutAgedOut) excusedCount() int {
	if a == nil {
		return 0
	}
	return a.excusedIDs
}

// rangesRemoved counts the ranges retention took; 0 without the world.
func (a *fanoutAgedOut) rangesRemoved() int {
	if a == nil {
		return 0
	}
	count := 0
	for _, ranges := range a.taken { //determinism:ok a sum
		count += len(ranges)
	}
	return count
}

// segmentBase parses a segment file's name (its base offset, then .log).
func segmentBase(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, ".log")
	if !ok || digits == "" {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil
}

// stallingFile is a segment file of the copy child: its writes fail while
// the stall lasts.
type stallingFile struct {
	storage.File
	a    *fanoutAgedOut
	name string
}

func (f stallingFile) Write(p []byte) (int, error) {
	if f.a.stalls(f.name) {
		return 0, errAgedOutStall
	}
	return f.File.Write(p)
}

func (f stallingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.a.stalls(f.name) {
		return 0, errAgedOutStall
	}
	return f.File.WriteAt(p, off)
}

func (f stallingFile) Truncate(size int64) error {
	if f.a.stalls(f.name) {
		return errAgedOutStall
	}
	return f.File.Truncate(size)
}

// openStalling opens (or creates) a file through open, failing it during
// the stall and wrapping a segment of the copy child.
func (a *fanoutAgedOut) openStalling(name string, open func(string) (storage.File, error)) (storage.File, error) {
	if a.stalls(name) {
		return nil, errAgedOutStall
	}
	file, err := open(name)
	if err != nil || !a.watches(name) {
		return file, err
	}
	return stallingFile{File: file, a: a, name: name}, nil
}
