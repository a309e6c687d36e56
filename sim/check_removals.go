package sim

import (
	"fmt"
	"strconv"
	"strings"

	"narad/meta"
	"narad/node"
	"narad/storage"
)

// removalChecker checks that no node deletes a partition directory the
// committed placement relies on it for (docs: sim/doc.go, "What it
// checks"). Every removal a node makes on its disk goes through its
// watchedFS; a removal of a topic's directory ("topics/T") or of one of its
// partition directories ("topics/T/p00003") is judged at that instant:
//
//   - it fails if the node's store holds the partition's log open;
//   - in a cluster, it fails if the committed placement names the node as
//     the partition's owner or its move's target, and the node had applied
//     the entry that began this holding before the input it is handling;
//     unless the directory is held by a move's finalize job whose session
//     ended (node.OrphanedJob), for a topic deleted since: the committed
//     topic of the name, if any, was created again (its identity, as
//     metaLog keeps it, differs from the job's topic). While the job was
//     out the node opened nothing in the directory, so it holds the old
//     topic's records only, and the job's return removes them (node:
//     jobLeftNothingNeeded; three-node moves seed 6306003); and unless
//     the partition directory's stamp names a creation of the topic that
//     is not the committed one (removesOtherCreation).
//
// The committed placement is metaLog's, at its highest committed index;
// when the node has applied past it (a leader applies before its messages
// announce the commit), the removal waits until metaLog reaches the
// node's applied index and is judged against the placement there.
type removalChecker struct {
	w *World
	// held maps a topic to, by partition, the nodes that hold the
	// partition in the committed placement (its owner and its target),
	// each with the index of the committed entry since which it has held
	// it without a break in the topic's current incarnation. Changed only
	// by placementChanged, after every committed entry that names the
	// topic; a deleted topic is absent.
	held map[string][]map[string]uint64
	// deferred are removals by a node that had applied past metaLog's
	// committed index, oldest first; judgeDeferred judges each once
	// metaLog reaches its index.
	deferred []removal
	// judged counts the removals judged against the placement; a test
	// checks that sweeps judge some.
	judged int
	// installed holds, by node id and partition directory, the
	// directories the node made by renaming a move's staged copy into
	// place (an install), has not removed since, and does not own in the
	// committed placement (placementChanged forgets them at the flip).
	installed map[string]map[string]bool
	// oldJobDrops counts the removals excused as a returning job dropping
	// its install of a deleted topic; a test checks the seed that makes one.
	oldJobDrops int
}

// dirSeen is what a removed partition directory held: the topic identity
// its stamp named (node.StampPath), nil when it had none or it did not
// parse; and whether it held a segment file (records).
type dirSeen struct {
	stamp   *meta.TopicIdentity
	records bool
}

// removal is one removal of partition directories, as the checker keeps
// it until it can judge it.
type removal struct {
	node *simNode
	path string
	// topic is the topic whose directory, or one of whose partition
	// directories (partition >= 0), was removed; partition is -1 for the
	// whole topic.
	topic     string
	partition int
	// appliedIndex is the node's applied index at the removal; knownIndex
	// its applied index before the input it was handling (what it had
	// learned before it decided).
	appliedIndex, knownIndex uint64
	// ownInstall is set when the directory is a copy the node installed
	// itself and had not removed since.
	ownInstall bool
	// jobTopic is the identity of the topic of the move whose orphaned
	// finalize job held the directory removed; nil for every other
	// removal.
	jobTopic *meta.TopicIdentity
	// dirs are, by partition, what the removed partition directories
	// held, read off the disk without faults just before the removal. A
	// partition absent here had no directory (a removal of the topic's
	// directory only).
	dirs map[int]dirSeen
}

func newRemovalChecker(w *World) *removalChecker {
	return &removalChecker{w: w, held: map[string][]map[string]uint64{}, installed: map[string]map[string]bool{}}
}

// removing judges a removal node n is about to make of path.
func (c *removalChecker) removing(n *simNode, path string) {
	topic, partition, ok := parsePartitionPath(path)
	if !ok || c.w.failure != nil || c.w.opts.BlackBox || n.node == nil {
		return // not a partition directory; or the node is starting, and judged by started
	}
	c.checkOpen(n, path)
	r := removal{node: n, path: path, topic: topic, partition: partition,
		appliedIndex: n.node.MetaAppliedIndex(), knownIndex: n.appliedKnown, ownInstall: c.installed[n.id][path]}
	if identity, orphaned := n.node.OrphanedJob(topic, partition); orphaned {
		r.jobTopic = &identity
	}
	r.dirs = dirsUnder(n, path, topic, partition)
	c.forgetInstalls(n, path)
	c.judgeOrDefer(r)
}

// forgetInstalls drops the installs recorded at path or under it (a
// topic's directory removed takes its partitions' along).
func (c *removalChecker) forgetInstalls(n *simNode, path string) {
	for dir := range c.installed[n.id] { //determinism:ok deletes from a set; no order reaches an output
		if dir == path || strings.HasPrefix(dir, path+"/") {
			delete(c.installed[n.id], dir)
		}
	}
}

// restarted forgets the installs of a node that starts again: a crash may
// have undone a rename that was not yet durable, and the node's sessions
// start over, so what it removes from now on it did not install in this
// incarnation.
func (c *removalChecker) restarted(n *simNode) {
	delete(c.installed, n.id)
}

// renamed notes an install: a move's staged copy renamed into place as a
// partition directory.
func (c *removalChecker) renamed(n *simNode, oldName, newName string) {
	if _, _, ok := parsePartitionPath(newName); !ok || !strings.HasPrefix(oldName, "moves/") {
		return
	}
	if c.installed[n.id] == nil {
		c.installed[n.id] = map[string]bool{}
	}
	c.installed[n.id][newName] = true
}

// checkOpen fails the run if the node's store holds a log open in the
// directory removed or renamed away: its writes would land in files no
// longer where its store reopens them. A node that drops a deleted
// topic's directory while a move into one of its partitions holds the
// copy it installed open, awaiting a flip that never committed, must
// close that log first (five-node moves seed 2034, seed 2700155).
func (c *removalChecker) checkOpen(n *simNode, path string) {
	for _, dir := range n.node.OpenLogDirs() {
		if dir == path || strings.HasPrefix(dir, path+"/") {
			c.w.fail("dir-removal", "%s removes %s while it holds the log of %s open", n.id, path, dir)
			return
		}
	}
}

// judgeOrDefer judges a removal now, or once metaLog has committed what
// the node applied.
func (c *removalChecker) judgeOrDefer(r removal) {
	if !c.w.clustered() {
		return
	}
	if r.appliedIndex > c.w.metaLog.applied.index {
		c.deferred = append(c.deferred, r)
		return
	}
	c.judge(r)
}

// judge fails the run if the committed placement has the node hold a
// removed partition, since an index the node knew.
func (c *removalChecker) judge(r removal) {
	c.judged++
	if c.jobDropsOldInstall(r) {
		c.oldJobDrops++
		return
	}
	partitions := c.held[r.topic]
	for index, holders := range partitions {
		if r.partition >= 0 && index != r.partition {
			continue
		}
		since, holds := holders[r.node.id]
		if holds && since <= r.knownIndex && c.removesOtherCreation(r, index) {
			continue
		}
		if holds && since <= r.knownIndex && !c.targetDropsItsInstall(r, index) {
			c.w.fail("dir-removal", "%s removes %s, but the committed placement has it own or target %s since index %d, which it had applied (%d)",
				r.node.id, r.path, partitionName(r.topic, index), since, r.knownIndex)
			return
		}
	}
}

// jobDropsOldInstall reports whether the removal is of a directory an
// orphaned move job held, for a topic that is no longer the committed
// topic of its name (a job can only be of the topic that was committed
// when its move began, so another identity means the name was created
// again).
func (c *removalChecker) jobDropsOldInstall(r removal) bool {
	identity, exists := c.w.metaLog.identities[r.topic]
	return r.jobTopic != nil && (!exists || identity != *r.jobTopic)
}

// removesOtherCreation reports whether the removal takes nothing of the
// committed creation of the topic from the partition: its directory held
// no segment, or was stamped with another creation (the files of a
// deleted topic that a failed or interrupted removal left, which the node
// removes before it opens the new topic's partition there, node:
// stampPartition, or with the whole topic's directory while it retries
// the delete's removal); or the removal is of the topic's directory, the
// partition has none there, and so it is for every partition directory
// there, if any (a delete's removal retried, by a node that held no
// directory of the partition: three-node moves seed 6365099). A stamp
// that named the committed creation excuses nothing; one the node wrote
// wrong would let a removal of live records pass here, and the no-loss
// accounting catches those.
func (c *removalChecker) removesOtherCreation(r removal, index int) bool {
	identity, exists := c.w.metaLog.identities[r.topic]
	harmless := func(seen dirSeen) bool {
		return !seen.records || seen.stamp != nil && (!exists || identity != *seen.stamp)
	}
	if seen, present := r.dirs[index]; present {
		return harmless(seen)
	}
	if r.partition >= 0 || r.dirs == nil {
		return false // the partition's own directory, gone already; or the disk was not read
	}
	for _, seen := range r.dirs { //determinism:ok a conjunction: order reaches nothing
		if !harmless(seen) {
			return false
		}
	}
	return true
}

// dirsUnder reads what the partition directories a removal of path takes
// held: path itself, or every partition directory of the topic's
// directory.
func dirsUnder(n *simNode, path, topic string, partition int) map[int]dirSeen {
	dirs := map[int]dirSeen{}
	indexes := []int{partition}
	if partition < 0 {
		indexes = indexes[:0]
		entries, _ := n.fs.List(path) // a missing directory lists nothing
		for _, entry := range entries {
			if _, index, ok := parsePartitionPath(path + "/" + entry); ok {
				indexes = append(indexes, index)
			}
		}
	}
	for _, index := range indexes {
		dir := node.PartitionDir(topic, index)
		if _, err := n.fs.Stat(dir); err != nil {
			continue
		}
		seen := dirSeen{records: len(segmentFiles(n.fs, dir)) > 0}
		if data, err := n.fs.Peek(node.StampPath(dir)); err == nil {
			if identity, err := node.ParseStamp(data); err == nil {
				seen.stamp = &identity
			}
		}
		dirs[index] = seen
	}
	return dirs
}

// targetDropsItsInstall reports whether the removal is a move target
// (not the owner) throwing away a copy it installed itself: its
// verification failed and the move starts its copy again. The flip of
// that copy was never proposed; a copy whose flip was proposed and that
// is then removed leaves the new owner without the records, which the
// state and no-loss checkers catch.
func (c *removalChecker) targetDropsItsInstall(r removal, index int) bool {
	a := c.w.metaLog.assignment(r.topic, index)
	return r.ownInstall && r.partition == index && a != nil && a.Owner != r.node.id && a.Target == r.node.id
}

// started judges the removals a node made while it started (node.New):
// against what its recovered metastore had applied.
func (c *removalChecker) started(n *simNode, paths []string) {
	for _, path := range paths {
		topic, partition, ok := parsePartitionPath(path)
		if !ok || c.w.failure != nil || c.w.opts.BlackBox {
			continue
		}
		applied := n.node.MetaAppliedIndex()
		c.judgeOrDefer(removal{node: n, path: path, topic: topic, partition: partition, appliedIndex: applied, knownIndex: applied})
	}
}

// placementChanged brings held in line with metaLog after it applied the
// committed entry at index.
func (c *removalChecker) placementChanged(index uint64, command meta.Command) {
	topic, ok := topicOfCommand(command)
	if !ok {
		return
	}
	assignments, exists := c.w.metaLog.topics[topic]
	if !exists {
		delete(c.held, topic)
		return
	}
	partitions := c.held[topic]
	for len(partitions) < len(assignments) {
		partitions = append(partitions, map[string]uint64{})
	}
	for i, a := range assignments {
		updateHolders(partitions[i], index, a.Owner, a.Target)
		delete(c.installed[a.Owner], fmt.Sprintf("topics/%s/p%05d", topic, i)) // flipped: the owner's log now
	}
	c.held[topic] = partitions
}

// updateHolders keeps the holders of one partition: owner and target stay
// or join (since index), everyone else leaves.
func updateHolders(holders map[string]uint64, index uint64, owner, target string) {
	for id := range holders { //determinism:ok deletes from a set; no order reaches an output
		if id != owner && id != target {
			delete(holders, id)
		}
	}
	for _, id := range []string{owner, target} {
		if _, holds := holders[id]; id != "" && !holds {
			holders[id] = index
		}
	}
}

// judgeDeferred judges the deferred removals metaLog has now reached.
func (c *removalChecker) judgeDeferred(index uint64) {
	kept := c.deferred[:0]
	for _, r := range c.deferred {
		if r.appliedIndex <= index {
			c.judge(r)
			continue
		}
		kept = append(kept, r)
	}
	c.deferred = kept
}

// topicOfCommand names the topic a committed command may change the
// placement of.
func topicOfCommand(command meta.Command) (string, bool) {
	switch c := command.(type) {
	case meta.CreateTopic:
		return c.Name, true
	case meta.DeleteTopic:
		return c.Name, true
	case meta.AlterTopic:
		return c.Name, true
	case meta.SetTarget:
		return c.Topic, true
	case meta.CompleteMove:
		return c.Topic, true
	case meta.ForcePromote:
		return c.Topic, true
	case meta.AbortMove:
		return c.Topic, true
	}
	return "", false
}

// parsePartitionPath parses "topics/T" (partition -1) and
// "topics/T/p00003". Other paths (a partition's files, a copy set aside by
// an install, a move's staged copy) are not partition directories.
func parsePartitionPath(path string) (topic string, partition int, ok bool) {
	parts := strings.Split(path, "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] != "topics" || parts[1] == "" {
		return "", 0, false
	}
	if len(parts) == 2 {
		return parts[1], -1, true
	}
	digits, isPartition := strings.CutPrefix(parts[2], "p")
	index, err := strconv.Atoi(digits)
	if !isPartition || len(digits) != 5 || err != nil {
		return "", 0, false
	}
	return parts[1], index, true
}

// watchedFS is a node's disk as the node sees it: the simulated disk, with
// every removal shown to the removal checker first. A new one is made at
// every start.
type watchedFS struct {
	*storage.MemFS
	n *simNode
	// starting holds the removals made while the node starts (before
	// node.New returns, when its applied index cannot be asked).
	starting *[]string
}

var _ storage.FS = watchedFS{}

// Remove implements storage.FS.
func (f watchedFS) Remove(name string) error {
	f.removing(name)
	err := f.MemFS.Remove(name)
	f.n.w.agedOut.removed(f.n, name, err)
	return err
}

// SyncDir implements storage.FS.
func (f watchedFS) SyncDir(dir string) error {
	err := f.MemFS.SyncDir(dir)
	f.n.w.agedOut.dirSynced(f.n, dir, err)
	return err
}

// SyncGroup implements storage.GroupSyncer: the files on the MemFS, the
// directories through SyncDir above, so the aged-out world sees them.
func (f watchedFS) SyncGroup(files []storage.File, dirs []string) error {
	if err := f.MemFS.SyncGroup(files, nil); err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := f.SyncDir(dir); err != nil {
			return err
		}
	}
	return nil
}

// Create implements storage.FS: the aged-out world's stall may fail it.
func (f watchedFS) Create(name string) (storage.File, error) {
	if f.n.w.agedOut == nil {
		return f.MemFS.Create(name)
	}
	return f.n.w.agedOut.openStalling(name, f.MemFS.Create)
}

// Open implements storage.FS: the aged-out world's stall may fail it.
func (f watchedFS) Open(name string) (storage.File, error) {
	if f.n.w.agedOut == nil {
		return f.MemFS.Open(name)
	}
	return f.n.w.agedOut.openStalling(name, f.MemFS.Open)
}

// RemoveAll implements storage.FS.
func (f watchedFS) RemoveAll(name string) error {
	f.removing(name)
	return f.MemFS.RemoveAll(name)
}

// Rename implements storage.FS. Renaming a partition directory away is
// judged as a removal of the logs open in it only: an install renames the
// copy it replaces aside, which it may, once that copy's log is closed.
// A rename aside to remove it (storage.DeletePartition) is judged as the
// removal it begins.
func (f watchedFS) Rename(oldName, newName string) error {
	_, _, partitionPath := parsePartitionPath(oldName)
	switch {
	case partitionPath && storage.DeletingLeftover(newName):
		f.removing(oldName)
	case partitionPath && f.n.node != nil && f.n.w.failure == nil && !f.n.w.opts.BlackBox:
		f.n.w.removals.checkOpen(f.n, oldName)
	}
	if err := f.MemFS.Rename(oldName, newName); err != nil {
		return err // nothing installed
	}
	f.n.w.removals.renamed(f.n, oldName, newName)
	return nil
}

func (f watchedFS) removing(name string) {
	if f.n.node == nil {
		*f.starting = append(*f.starting, name)
		return
	}
	f.n.w.removals.removing(f.n, name)
}
