package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// The cursor file of one child in a parent partition's directory
// (docs/architecture.md#fan-out): "fanout-<child>.offset", holding the
// attach epoch and the next parent offset to copy. It is replaced
// atomically, and only after the records before next are durable at the
// child's owners (commit before advance: a crash repeats a batch, never
// skips one). Because it lives in the partition's directory, a move
// carries it to the new owner.
const (
	cursorFilePrefix = "fanout-"
	cursorFileSuffix = ".offset"
)

// cursorFile is the JSON content of a cursor file.
type cursorFile struct {
	// Epoch is the attach epoch in 16 hex digits.
	Epoch string `json:"epoch"`
	// NextOffset is the first parent offset not yet copied.
	NextOffset uint64 `json:"next_offset"`
}

// fanoutCursor is the copy of one parent partition into one child, on
// the parent partition's owner.
type fanoutCursor struct {
	child string
	epoch uint64
	// next is the first parent offset not yet durable in the child: it
	// advances only once a batch is durable there.
	next uint64
	// persisted is the cursor file's next offset; at most next (the file
	// is written from next, every CursorPersistIntervalMs).
	persisted uint64
	// sentTo is the end of the batch in flight; 0 when none is.
	sentTo uint64
	// pendingSinceMs is the commit time of the first record waiting to be
	// copied (the linger runs from it); 0 until it was read.
	pendingSinceMs int64
	// retryAtMs holds the cursor back after a failed batch.
	retryAtMs int64
	// heldUntilMs is when the record at next falls due (a delay child),
	// so that the cursor does not read it again before.
	heldUntilMs int64
	// stalledLogMs is when the last stall was logged (rate limit).
	stalledLogMs int64
	// copied counts the records this cursor made durable in the child
	// since it was loaded here.
	copied uint64
}

// cursorPath is the cursor file of child in a partition directory.
func cursorPath(dir, child string) string {
	return dir + "/" + cursorFilePrefix + child + cursorFileSuffix
}

// cursorLag is how far the cursor of a child lags behind parent
// partition index (owned here), and whether the cursor is known.
func (n *Node) cursorLag(t *topic, index int, link meta.ChildLink) (uint64, bool) {
	p, ok := n.partitions[partitionKey{t.info.Name, index}]
	if !ok || p.log == nil {
		return 0, false
	}
	c := p.fanout[link.Name]
	if c == nil || c.epoch != link.Epoch {
		return 0, false
	}
	return p.log.HWM() - min(c.next, p.log.HWM()), true
}

// loadCursor reads a child's cursor from the partition directory. A
// missing file, or one of another epoch, starts the attach's epoch at the
// first record committed at or after the attach (epochStart: no backfill)
// and is written at once, so a crash keeps the starting point. A file
// that does not decode starts at the oldest retained record: copies may
// repeat, none is skipped.
func (n *Node) loadCursor(p *partition, log *storage.Log, link meta.ChildLink) (*fanoutCursor, error) {
	c := &fanoutCursor{child: link.Name, epoch: link.Epoch}
	data, err := storage.ReadFile(n.fs, cursorPath(p.dir, link.Name))
	switch {
	case errors.Is(err, storage.ErrNotExist):
		chaos.Reached(chaos.MarkFanoutCursorStarted)
		c.next = epochStart(log, link.AttachedAtMs)
		return c, n.writeCursor(p, c, c.next)
	case err != nil:
		return nil, err
	}
	var file cursorFile
	epoch, parseErr := decodeCursorFile(data, &file)
	switch {
	case parseErr != nil:
		n.observer.Event("fanout-cursor-unreadable", fmt.Sprintf("%s: %v; copying again from the oldest record", cursorPath(p.dir, link.Name), parseErr))
		c.next = log.Oldest()
		return c, n.writeCursor(p, c, c.next)
	case epoch != link.Epoch:
		chaos.Reached(chaos.MarkFanoutCursorStarted)
		c.next = epochStart(log, link.AttachedAtMs)
		return c, n.writeCursor(p, c, c.next)
	}
	chaos.Reached(chaos.MarkFanoutCursorResumed)
	c.next = min(file.NextOffset, log.HWM())
	c.persisted = file.NextOffset
	return c, nil
}

// epochStart is the first offset committed at or after attachedAtMs,
// the attach's time on the clock of the node that proposed it: the owner
// may apply the attach after records acknowledged after it, and those
// belong to the child. Commit times grow with offsets (one owner's
// clock), so a binary search reads a few records only; a record that
// cannot be read counts as late, so the start errs towards copying more.
func epochStart(log *storage.Log, attachedAtMs int64) uint64 {
	low, high := log.Oldest(), log.HWM()
	for low < high {
		middle := low + (high-low)/2
		if record, err := log.Read(middle); err != nil || record.TimeMs >= attachedAtMs {
			high = middle
		} else {
			low = middle + 1
		}
	}
	return low
}

// decodeCursorFile parses a cursor file and its epoch.
func decodeCursorFile(data []byte, file *cursorFile) (uint64, error) {
	if err := json.Unmarshal(data, file); err != nil {
		return 0, err
	}
	epoch, err := strconv.ParseUint(file.Epoch, 16, 64)
	if err != nil || len(file.Epoch) != 16 {
		return 0, fmt.Errorf("epoch %q is not 16 hex digits", file.Epoch)
	}
	return epoch, nil
}

// writeCursor replaces the cursor file with next, which is at most c.next.
func (n *Node) writeCursor(p *partition, c *fanoutCursor, next uint64) error {
	data, err := json.Marshal(cursorFile{Epoch: attachEpochText(c.epoch), NextOffset: next})
	if err != nil {
		return err
	}
	if err := storage.WriteFileAtomic(n.fs, cursorPath(p.dir, c.child), data); err != nil {
		return err
	}
	c.persisted = next
	return nil
}

// removeStaleCursors deletes the cursor files of children no longer linked
// to the partition's topic (detached, deleted, or the parent deleted), and
// forgets their cursors.
func (n *Node) removeStaleCursors(p *partition, links []meta.ChildLink) {
	names, err := n.fs.List(p.dir)
	if err != nil {
		return // no directory yet: nothing to remove
	}
	for _, name := range names {
		child, isCursor := cursorChild(name)
		if !isCursor || linked(links, child) {
			continue
		}
		if err := n.fs.Remove(p.dir + "/" + name); err != nil {
			n.observer.Event("fanout-cursor-remove-failed", fmt.Sprintf("%s/%s: %v", p.dir, name, err))
		}
		delete(p.fanout, child)
	}
}

// cursorChild returns the child a cursor file name is for.
func cursorChild(name string) (string, bool) {
	trimmed, hasPrefix := strings.CutPrefix(name, cursorFilePrefix)
	child, hasSuffix := strings.CutSuffix(trimmed, cursorFileSuffix)
	return child, hasPrefix && hasSuffix && child != ""
}

// linked reports whether child is among links.
func linked(links []meta.ChildLink, child string) bool {
	for _, link := range links {
		if link.Name == child {
			return true
		}
	}
	return false
}

// cursorsOnDisk reads every cursor file of a partition directory, for a
// move: the new owner carries on from them. Files that do not decode are
// left out (the new owner then starts that child at its tail).
func (n *Node) cursorsOnDisk(dir string) []msg.FanoutCursor {
	names, err := n.fs.List(dir)
	if err != nil {
		return nil
	}
	var cursors []msg.FanoutCursor
	for _, name := range names {
		child, isCursor := cursorChild(name)
		if !isCursor || validTopicName(child) != nil {
			continue
		}
		data, err := storage.ReadFile(n.fs, dir+"/"+name)
		var file cursorFile
		epoch, parseErr := decodeCursorFile(data, &file)
		if err == nil && parseErr == nil && len(cursors) < msg.FanoutChildrenMax {
			cursors = append(cursors, msg.FanoutCursor{Child: child, Epoch: epoch, NextOffset: file.NextOffset})
		}
	}
	return cursors
}

// writeStagedCursors writes the cursors a move's source reported into the
// staged copy, so that they are installed with it.
func (n *Node) writeStagedCursors(stagedDir string, cursors []msg.FanoutCursor) error {
	for _, cursor := range cursors {
		data, err := json.Marshal(cursorFile{Epoch: attachEpochText(cursor.Epoch), NextOffset: cursor.NextOffset})
		if err == nil {
			err = storage.WriteFileAtomic(n.fs, cursorPath(stagedDir, cursor.Child), data)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// installCursors writes the fan-out cursors of a move's source into the
// staged copy (whose final HWM is hwm) before it is installed.
func (n *Node) installCursors(s *moveSession, hwm uint64) error {
	if len(s.cursors) == 0 {
		return nil
	}
	chaos.Reached(chaos.MarkFanoutCursorMoved)
	cursors := s.cursors
	if chaos.Planted(chaos.BugForgetFanoutCursor) {
		cursors = slices.Clone(cursors)
		for i := range cursors {
			cursors[i].NextOffset = hwm
		}
	}
	return n.writeStagedCursors(s.stagedDir, cursors)
}

// FanoutLag is how far one cursor of this node lags: the parent
// partition's high watermark minus the cursor.
type FanoutLag struct {
	Parent    string
	Child     string
	Partition int
	Messages  uint64
}

// FanoutLags lists the lag of every loaded cursor of the parent
// partitions this node owns, sorted by parent, partition and child.
func (n *Node) FanoutLags() []FanoutLag {
	var lags []FanoutLag
	for _, p := range n.sortedPartitions() {
		if p.log == nil {
			continue
		}
		for _, child := range slices.Sorted(maps.Keys(p.fanout)) {
			c := p.fanout[child]
			lags = append(lags, FanoutLag{Parent: p.key.topic, Child: child, Partition: p.key.index,
				Messages: p.log.HWM() - min(c.next, p.log.HWM())})
		}
	}
	return lags
}
