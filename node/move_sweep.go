package node

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"narad/chaos"
	"narad/msg"
	"narad/storage"
)

// The stale-copy sweep. A node keeps the directory of a partition it no
// longer owns (the source of a completed move, a destination whose flip
// failed and left its install, a node that restarted and finds data it
// does not own) until three independent checks agree it is stale:
//
//  1. the metastore leader, past its barrier, says this node is neither
//     the partition's owner nor its target, at its applied index I;
//  2. this node's own replica has applied at least I and agrees;
//  3. at deletion, the node re-checks under its loop (the engine's lock):
//     the partition is not served here and no move into it is running.

// sweeper holds the partitions whose directories may be stale. Only the
// node's own methods change it.
type sweeper struct {
	// candidates are partitions with a directory here that this node did
	// not own when last looked at.
	candidates map[partitionKey]bool
	// asked are the candidates whose verdict request is in flight.
	asked map[partitionKey]bool
	// nextMs is when the next sweep pass runs; intervalMs its period.
	nextMs, intervalMs int64
}

func newSweeper(nowMs, intervalMs int64) sweeper {
	return sweeper{candidates: map[partitionKey]bool{}, asked: map[partitionKey]bool{}, nextMs: nowMs + intervalMs, intervalMs: intervalMs}
}

// findStaleCopies lists, at start, the partition directories of topics
// this node does not own, after repairing interrupted installs.
func (n *Node) findStaleCopies() error {
	for _, name := range n.meta.State().TopicNames() {
		entries, err := n.partitionEntries(name)
		if err != nil {
			return err
		}
		for _, entry := range entries {
			if err := n.repairInstall(name, entry); err != nil {
				return err
			}
			n.removeDeletingLeftover(name, entry)
		}
		if entries, err = n.partitionEntries(name); err != nil {
			return err
		}
		for _, entry := range entries {
			index, ok := partitionIndexOf(entry)
			if a, found := n.meta.State().Assignment(name, index); ok && found && a.Owner != n.cfg.NodeID {
				n.sweeper.candidates[partitionKey{name, index}] = true
			}
		}
	}
	return nil
}

// partitionEntries lists a topic's directory (nothing if it has none).
func (n *Node) partitionEntries(topicName string) ([]string, error) {
	entries, err := n.fs.List(topicsDir + "/" + topicName)
	if errors.Is(err, storage.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list partitions of %s: %w", topicName, err)
	}
	return entries, nil
}

// repairInstall finishes or undoes an install a crash interrupted (a
// partition directory renamed aside): see storage.RepairInstall.
func (n *Node) repairInstall(topicName, entry string) error {
	final, ok := storage.InstallLeftover(entry)
	if !ok {
		return nil
	}
	chaos.Reached(chaos.MarkNodeInstallRepaired)
	if err := storage.RepairInstall(n.fs, topicsDir+"/"+topicName+"/"+final); err != nil {
		return fmt.Errorf("repair install of %s/%s: %w", topicName, final, err)
	}
	return nil
}

// removeDeletingLeftover removes what a partition directory's removal
// that stopped partway left aside (storage.DeletePartition): never opened,
// it only holds disk. A failure is reported; the next start tries again.
func (n *Node) removeDeletingLeftover(topicName, entry string) {
	if !storage.DeletingLeftover(entry) {
		return
	}
	path := topicsDir + "/" + topicName + "/" + entry
	if err := n.fs.RemoveAll(path); err != nil {
		n.observer.Event("leftover-removal-failed", fmt.Sprintf("%s: %v", path, err))
	}
}

// partitionIndexOf parses a partition directory name ("p00003").
func partitionIndexOf(entry string) (int, bool) {
	digits, ok := strings.CutPrefix(entry, "p")
	if !ok || len(digits) != 5 {
		return 0, false
	}
	index, err := strconv.Atoi(digits)
	return index, err == nil
}

// sweepStaleCopies asks the leader about every candidate, once per pass.
func (n *Node) sweepStaleCopies() {
	if n.nowMs < n.sweeper.nextMs || len(n.sweeper.candidates) == 0 || n.knowsRetired() {
		return
	}
	n.sweeper.nextMs = n.nowMs + n.sweeper.intervalMs
	leader, ok := n.meta.Leader()
	if !ok {
		return
	}
	for _, key := range sortedKeySet(n.sweeper.candidates) {
		if n.sweeper.asked[key] || !n.mayBeStale(key) {
			continue
		}
		n.sweeper.asked[key] = true
		check := msg.MoveSweepCheck{Topic: key.topic, Partition: key.index}
		done := func(reply msg.Reply) { n.verdictArrived(key, reply) }
		if leader == n.cfg.NodeID {
			result, err := n.moveVerdict(check)
			done(msg.Reply{Result: result, Err: err})
			continue
		}
		n.forward(leader, check, n.cfg.ForwardTimeoutMs, done)
	}
}

// mayBeStale is the local check: the partition is not served here, no
// move into it runs here, and the local replica has this node neither as
// owner nor as target. A candidate that fails it for good is dropped.
func (n *Node) mayBeStale(key partitionKey) bool {
	a, ok := n.meta.State().Assignment(key.topic, key.index)
	if !ok || a.Owner == n.cfg.NodeID {
		delete(n.sweeper.candidates, key) // topic gone (dropTopicState purges it) or ours
		return false
	}
	_, served := n.partitions[key]
	return a.Target != n.cfg.NodeID && !served && !n.moveRunning(key)
}

// moveVerdict answers a sweep check on the leader.
func (n *Node) moveVerdict(r msg.MoveSweepCheck) (msg.Result, error) {
	if !n.meta.IsLeader() || !n.meta.Barrier() {
		return nil, msg.Unavailable("not the metadata leader past its barrier")
	}
	a, ok := n.meta.State().Assignment(r.Topic, r.Partition)
	if !ok {
		return nil, msg.NotFound("partition %d of %s not found", r.Partition, r.Topic)
	}
	return msg.MoveVerdict{Owner: a.Owner, Target: a.Target, AppliedIndex: n.meta.AppliedIndex()}, nil
}

// verdictArrived deletes the copy if the leader's verdict, this replica
// and the local state all agree it is stale.
func (n *Node) verdictArrived(key partitionKey, reply msg.Reply) {
	delete(n.sweeper.asked, key)
	verdict, ok := reply.Result.(msg.MoveVerdict)
	if reply.Err != nil || !ok || verdict.Owner == n.cfg.NodeID || verdict.Target == n.cfg.NodeID {
		return
	}
	if n.meta.AppliedIndex() < verdict.AppliedIndex || !n.mayBeStale(key) {
		return // the next pass asks again
	}
	dir := PartitionDir(key.topic, key.index)
	if err := storage.DeletePartition(n.fs, dir); err != nil {
		n.observer.Event("stale-copy-delete-failed", fmt.Sprintf("%s: %v", dir, err))
		return
	}
	chaos.Reached(chaos.MarkNodeStaleCopyDeleted)
	n.observer.Event("stale-copy-deleted", fmt.Sprintf("%s (owned by %s)", dir, verdict.Owner))
	delete(n.sweeper.candidates, key)
}

func sortedKeySet(set map[partitionKey]bool) []partitionKey {
	keys := make([]partitionKey, 0, len(set))
	for key := range set { //determinism:ok sorted below
		keys = append(keys, key)
	}
	sortKeys(keys)
	return keys
}
