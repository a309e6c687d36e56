package node

import (
	"fmt"

	"narad/msg"
)

// The disk reserve. A node whose data directory's file system runs out of
// room fails at its next metastore write (the node stops, and restarts
// from its disk, which cannot take the restart's own writes either), so
// it stops taking writes into its partitions while its free space is
// under Config.DiskReserveBytes: a produce to one of its partitions is
// 503 with Retry-After (writable), and a keyless record goes to another
// owner's partition. The driver reports the free space (SetDiskFree, from
// statfs, about once a second); between two reports the node counts what
// it appended itself, so a burst cannot overrun the reserve while the
// next report is due. A node never told has no reserve (the simulator
// tells its nodes in the worlds with disk pressure).
//
// Each heartbeat carries whether the node is under its reserve, and the
// metastore keeps it (meta.Member.DiskLow): the other nodes then send it
// no keyless record (diskLowElsewhere), the planner treats it as resting
// (markResting: it takes no partition and keeps its own) and new topics
// are placed on the members with room while there are any (placePartitions).
// The view is up to a heartbeat interval old, so a record pinned to one
// of its partitions, by number or key, still goes to it first and gets
// its own answer.

// recordOverheadBytes is what one record costs on disk beyond its key and
// payload (its frame and index entry), for the estimate between reports.
const recordOverheadBytes = 64

// diskSpace is what this node knows of its disk's free space. Only
// SetDiskFree and append change it.
type diskSpace struct {
	// reported is set once the driver reported the free space.
	reported bool
	// freeBytes is the free space at the last report; writtenSince the
	// bytes this node appended to its partition logs since.
	freeBytes, writtenSince int64
	// refusal is the answer to a write refused for the reserve, built at
	// the first refusal since the estimate last changed (diskLow); nil
	// otherwise. A refusal site knows its error is this one by identity
	// (refusedForDisk).
	refusal *msg.Error
	// refused counts the clients' produces refused for the reserve since
	// the start (Stats.DiskReserveRefusals); only refusedForDisk adds to
	// it.
	refused uint64
}

// SetDiskFree tells the node how many bytes its data directory's file
// system has free for it now. The first report under the reserve, and
// the first back above it, are said as events (disk-low, a warning;
// disk-low-ended): a node started with a reserve larger than its free
// space refused every write and logged nothing (first-day operator
// audit).
func (n *Node) SetDiskFree(freeBytes int64) {
	n.disk = diskSpace{reported: true, freeBytes: freeBytes, refused: n.disk.refused}
	switch low := n.underReserve(); {
	case low && !n.diskLowSaid:
		n.observer.Event("disk-low", fmt.Sprintf("node %s has %d bytes of disk free, under its reserve of %d (storage.disk_reserve_bytes): "+
			"it refuses writes into its partitions until space is freed", n.cfg.NodeID, max(freeBytes, 0), n.cfg.DiskReserveBytes))
	case !low && n.diskLowSaid:
		n.observer.Event("disk-low-ended", fmt.Sprintf("node %s has %d bytes of disk free, above its reserve of %d: it takes writes again",
			n.cfg.NodeID, freeBytes, n.cfg.DiskReserveBytes))
	default:
		return
	}
	n.diskLowSaid = !n.diskLowSaid
}

// ForgetDiskFree tells the node its free space is no longer known (the
// driver could not read it): it keeps no reserve until the next report,
// rather than refusing every write on an estimate that only goes down.
func (n *Node) ForgetDiskFree() { n.disk = diskSpace{refused: n.disk.refused} }

// diskFree is the free space as the node estimates it now: the last
// report less what the node appended since; ok is false before a report.
func (n *Node) diskFree() (bytes int64, ok bool) {
	return n.disk.freeBytes - n.disk.writtenSince, n.disk.reported
}

// underReserve reports whether the estimated free space is under the
// reserve (never before a report, nor with no reserve).
func (n *Node) underReserve() bool {
	free, ok := n.diskFree()
	return ok && n.cfg.DiskReserveBytes > 0 && free < n.cfg.DiskReserveBytes
}

// diskLow refuses writes while the estimated free space is under the
// reserve, with the same answer until the estimate changes.
func (n *Node) diskLow() error {
	if !n.underReserve() {
		return nil
	}
	if n.disk.refusal == nil {
		n.disk.refusal = n.diskRefusal()
	}
	return n.disk.refusal
}

// refusedForDisk counts err when it is the refusal of a write for the
// reserve (diskLow's, known by identity: no other error is counted),
// where a client's produce gets its answer (produce); the checks that
// only ask whether a write may go, and the node's own writes between
// topics, do not count.
func (n *Node) refusedForDisk(err error) {
	if refusal, ok := err.(*msg.Error); ok && refusal == n.disk.refusal {
		n.disk.refused++
	}
}

// diskRefusal builds the answer to a write refused for the reserve.
func (n *Node) diskRefusal() *msg.Error {
	free, _ := n.diskFree()
	advice := "free some space on its data directory's file system" // a single node has no other to send to (disk-full audit)
	if n.memberWithRoom() {
		advice = "retry on another node, or free some space"
	}
	return msg.Unavailable("node %s has %d bytes of disk free, under its reserve of %d (storage.disk_reserve_bytes): %s",
		n.cfg.NodeID, max(free, 0), n.cfg.DiskReserveBytes, advice)
}

// memberWithRoom reports whether another alive member's last heartbeat
// said it has room: with none, "retry on another node" sends a client
// nowhere useful (second disk-full audit: every node of a cluster on one
// full file system said it).
func (n *Node) memberWithRoom() bool {
	for _, member := range n.meta.State().Members() {
		if member.ID != n.cfg.NodeID && member.Receiving() && !member.DiskLow {
			return true
		}
	}
	return false
}

// noteAppended counts a record appended since the last report.
func (n *Node) noteAppended(rec msg.ProduceRecord) {
	n.disk.writtenSince += int64(len(rec.Key)+len(rec.Payload)) + recordOverheadBytes
	n.disk.refusal = nil // its free space is stale
}
