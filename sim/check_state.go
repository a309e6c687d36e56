package sim

import (
	"slices"

	"narad/meta"
	"narad/msg"
	"narad/node"
	"narad/storage"
)

// stateChecker is the omniscient checker that runs after every step: it
// reads the nodes' partition state (never the clients' view) and compares
// it with what the sync rounds made durable.
type stateChecker struct {
	// open lists, by node index, the partitions open at the checker's
	// last look at the node, in OpenPartitions order; grown as nodes are
	// added.
	open [][]node.PartitionState
	// scratch is afterStep's buffer for a node's open partitions, reused
	// from step to step; open keeps copies, never scratch itself.
	scratch []node.PartitionState
	// records are the records of the open partitions
	// checkOpenedServeDurable last looked at, in their order (that node's
	// openRecords): afterStep checks them without looking them up again.
	records []*partitionRecord
	// recoveryWindow is the read window checkServedDurable's recoveries
	// reuse (storage.OpenLogReusing); nothing it recovers points into it.
	recoveryWindow []byte
}

// partitionRecord is what the state checker knows of one partition
// directory of one node (simNode.stateRecords), kept across the node's
// restarts; at most one per directory the node ever opened.
type partitionRecord struct {
	// key names the directory in failures: "id:dir".
	key string
	// dir is the directory: the key stateRecords holds the record under.
	dir string
	// durableHWM and durableCommitted are the high-watermark and committed
	// offset that completed sync rounds (or a recovery, or a graceful
	// stop) made durable.
	durableHWM, durableCommitted uint64
	// identity is the creation of the topic the durable values are of,
	// as the node last reported the partition open: a partition of a
	// topic created again under its name starts empty (recovered).
	identity meta.TopicIdentity
	// The rest is of the node's current incarnation, cleared at a start
	// and when the partition closes:
	// seen marks a partition already checked: the first sighting after a
	// start is the recovered state.
	seen bool
	// lastCommitted is the committed offset at the previous step.
	lastCommitted uint64
	// servedDurable marks a partition whose recovered state was checked
	// against the disk's durable bytes.
	servedDurable bool
	// openIdentity is the creation the open partition was of at the
	// checker's last look: another one at the next look means the node
	// deleted the directory and made it again in between (a delete and a
	// create of the topic applied in one step), a new partition checked
	// as a recovery.
	openIdentity meta.TopicIdentity
}

// forget clears what the record knows of the current incarnation.
func (r *partitionRecord) forget() {
	r.seen, r.lastCommitted, r.servedDurable, r.openIdentity = false, 0, false, meta.TopicIdentity{}
}

func newStateChecker() *stateChecker {
	return &stateChecker{}
}

// record is the checker's record of a partition directory of n, made at
// the first ask: one map lookup per ask after every step.
func record(n *simNode, dir string) *partitionRecord {
	r, ok := n.stateRecords[dir]
	if !ok {
		r = &partitionRecord{key: n.id + ":" + dir, dir: dir}
		n.stateRecords[dir] = r
	}
	return r
}

// nodeStarted forgets what was seen in the previous incarnation, and
// checks that the partitions recovered by the start serve only durable
// records: before any later sync round can make them durable by chance.
func (s *stateChecker) nodeStarted(n *simNode) {
	*s.lastOpen(n) = nil
	for _, r := range n.stateRecords { //determinism:ok only clears
		r.forget()
	}
	if open := n.node.OpenPartitions(); len(open) > 0 {
		durable := n.fs.DurableClone()
		for _, state := range open {
			s.checkServedDurable(n, durable, state)
		}
	}
}

// synced records what a completed sync round made durable.
// It takes the values the round covered, not the node's current ones:
// appends and acks handled while the round was in flight are not durable.
func (s *stateChecker) synced(n *simNode, rd node.Ready) {
	for _, sync := range rd.Syncs {
		r := record(n, sync.Dir)
		if sync.Data() {
			r.durableHWM = max(r.durableHWM, sync.DurableHWM())
		}
		if sync.CommittedSync() {
			r.durableCommitted = max(r.durableCommitted, sync.DurableCommitted())
		}
	}
}

// stopped records what a graceful stop made durable: every committed
// offset of the partitions open when it began (states).
func (s *stateChecker) stopped(n *simNode, states map[string]node.PartitionState) {
	for dir, state := range states { //determinism:ok only records
		r := record(n, dir)
		r.durableCommitted = max(r.durableCommitted, state.Committed)
	}
}

// replied checks that a produce's records are durable when its 202 leaves.
// In a cluster the node that answers may have forwarded the records: they
// must be durable at the node that appended them (the single-owner checker
// makes sure only one node appends to a partition).
func (s *stateChecker) replied(n *simNode, c *call, reply msg.Reply) {
	produce, ok := c.request.(msg.Produce)
	if !ok || reply.Err != nil {
		return
	}
	for _, placement := range reply.Result.(msg.ProduceResult).Records {
		dir := node.PartitionDir(produce.Topic, placement.Partition)
		if durable := s.durableAnywhere(n.w, dir); placement.Offset >= durable {
			n.w.fail("durable-before-ack", "%s answered 202 for %s@%d but only %d records are durable at any node",
				n.id, dir, placement.Offset, durable)
			return
		}
	}
}

// durableAnywhere is the highest durable high-watermark of a partition
// directory over every node.
func (s *stateChecker) durableAnywhere(w *World, dir string) uint64 {
	var hwm uint64
	for _, n := range w.nodes {
		hwm = max(hwm, record(n, dir).durableHWM)
	}
	return hwm
}

// afterStep checks every open partition of every running node that the
// step touched (a node the simulator did not call into did not change).
func (s *stateChecker) afterStep(w *World, touched []*simNode) {
	for _, n := range touched {
		if !n.up() {
			continue
		}
		open := n.node.AppendOpenPartitions(s.scratch[:0])
		s.scratch = open
		s.checkOpenedServeDurable(n, open)
		if n.holding {
			continue // the metastore's round may be applying a topic change
		}
		for i, state := range open {
			s.checkPartitionRecord(w, s.records[i], state)
		}
		s.forgetClosed(w, n, open)
	}
}

// beforeSyncs checks, just before a sync round's fsyncs run, that the
// partitions n opened (and so recovered) since the checker's last look
// serve only durable records. A produce that opens a log appends to it in
// the same step, and the round that step starts syncs the whole file:
// checked only after the step, unsynced frames that recovery served
// without syncing them were durable by then, and the check passed.
func (s *stateChecker) beforeSyncs(n *simNode) {
	open := n.node.AppendOpenPartitions(s.scratch[:0])
	s.scratch = open
	s.checkOpenedServeDurable(n, open)
}

// checkOpenedServeDurable runs checkServedDurable on the partitions that
// opened (and so recovered) since the checker's last look at n, even while
// a sync round is in flight: that round could otherwise make the records
// durable by chance before the check. A directory open at both looks but
// of another creation of its topic now was removed and made again
// between them: it is forgotten first, so that checkPartition takes its
// state as a recovery. open is n's OpenPartitions now.
func (s *stateChecker) checkOpenedServeDurable(n *simNode, open []node.PartitionState) {
	s.records = openRecords(n, open)
	for i, state := range open {
		r := s.records[i]
		if r.servedDurable && r.openIdentity != state.Identity {
			r.forget()
		}
		if !r.servedDurable {
			s.checkServedDurable(n, n.fs.DurableCloneDirView(state.Dir), state) // used up within this call
			r.openIdentity = state.Identity
		}
	}
}

// openRecords returns the records of open's partitions, in its order, and
// keeps them as n.openRecords. A node's open partitions seldom change from
// one step to the next, and a directory's record is made once and kept: a
// record of the last look at the same position and of the same directory
// is the one a lookup by name would find, without hashing the name.
func openRecords(n *simNode, open []node.PartitionState) []*partitionRecord {
	previous := n.openRecords
	records := previous[:0] // in place: position i is read before it is written
	for i, state := range open {
		if i < len(previous) && previous[i].dir == state.Dir {
			records = append(records, previous[i])
		} else {
			records = append(records, record(n, state.Dir))
		}
	}
	n.openRecords = records
	return records
}

// forgetClosed forgets the partitions of n that were open at its previous
// look and are not open now: when one opens again (a later move brought
// it back, or its log failed, was evicted or closed as idle, and
// reopened), it is checked as a recovery: never below the durable
// high-watermark, and serving only what is durable. A reopen may expose
// frames that reached the disk unacknowledged (an append written while
// the log's sync round was in flight, say, before a later write failed
// the log): recovery fsyncs them before it serves them.
func (s *stateChecker) forgetClosed(w *World, n *simNode, open []node.PartitionState) {
	last := s.lastOpen(n)
	previous := *last
	if samePartitions(previous, open) {
		return
	}
	current := map[string]bool{}
	for _, state := range open {
		current[state.Dir] = true
	}
	*last = slices.Clone(open)
	for _, state := range previous {
		if !current[state.Dir] {
			record(n, state.Dir).forget()
		}
	}
}

// lastOpen is where the partitions open at the last look at n are kept.
func (s *stateChecker) lastOpen(n *simNode) *[]node.PartitionState {
	for len(s.open) <= n.index {
		s.open = append(s.open, nil)
	}
	return &s.open[n.index]
}

func samePartitions(previous, open []node.PartitionState) bool {
	if len(previous) != len(open) {
		return false
	}
	for i, state := range open {
		if previous[i].Dir != state.Dir {
			return false
		}
	}
	return true
}

func (s *stateChecker) checkPartition(w *World, n *simNode, state node.PartitionState) {
	s.checkPartitionRecord(w, record(n, state.Dir), state)
}

// checkPartitionRecord is checkPartition given the partition's record.
func (s *stateChecker) checkPartitionRecord(w *World, r *partitionRecord, state node.PartitionState) {
	if !r.seen {
		s.recovered(w, r, state)
		return
	}
	switch {
	case state.HWM > r.durableHWM:
		w.fail("visible-is-durable", "%s: high-watermark %d is visible but only %d is durable", r.key, state.HWM, r.durableHWM)
	case state.HWM < r.durableHWM:
		w.fail("visible-is-durable", "%s: high-watermark %d fell below the durable %d", r.key, state.HWM, r.durableHWM)
	case state.Committed > state.HWM:
		w.fail("committed-below-hwm", "%s: committed %d above high-watermark %d", r.key, state.Committed, state.HWM)
	case state.Committed < r.lastCommitted:
		w.fail("committed-monotonic", "%s: committed went back from %d to %d", r.key, r.lastCommitted, state.Committed)
	}
	r.lastCommitted = state.Committed
}

// recovered checks a partition's first state after a start: recovery may
// expose records that reached the disk without an acknowledgement, but
// never hides durable (so every acknowledged) ones or forgets a persisted
// committed offset, and what it serves is durable: recovering again from
// only the durable bytes of the disk reaches at least the same
// high-watermark (the records past the lazily persisted one that a
// process crash left in the page cache were synced before serving).
func (s *stateChecker) recovered(w *World, r *partitionRecord, state node.PartitionState) {
	r.seen = true
	if r.identity != state.Identity {
		r.durableHWM, r.durableCommitted, r.identity = 0, 0, state.Identity
	}
	switch {
	case state.HWM < r.durableHWM:
		w.fail("recovery", "%s recovered high-watermark %d below the durable %d", r.key, state.HWM, r.durableHWM)
	case state.Committed < r.durableCommitted:
		w.fail("recovery", "%s recovered committed offset %d below the persisted %d", r.key, state.Committed, r.durableCommitted)
	}

	r.durableHWM = state.HWM
	r.lastCommitted = state.Committed
}

// checkServedDurable recovers a partition again from durable, a copy (or
// a view, valid within this call) of the durable bytes of n's disk, and
// fails the run if that reaches a lower
// high-watermark than the node serves: a crash now would take back
// records it may already have delivered.
func (s *stateChecker) checkServedDurable(n *simNode, durable *storage.MemFS, state node.PartitionState) {
	r := record(n, state.Dir)
	r.servedDurable = true
	log, recovery, err := storage.OpenLogReusing(durable, state.Dir, n.logConfigOf(), &s.recoveryWindow)
	if err == nil {
		err = log.Close()
	}
	switch {
	case err != nil:
		n.w.fail("recovery", "%s: recovering from its durable bytes alone failed: %v", r.key, err)
	case recovery.HWM < state.HWM:
		n.w.fail("recovery-serves-durable", "%s serves up to %d after recovery, but only %d would survive a crash now",
			r.key, state.HWM, recovery.HWM)
	}
}

func partitionStates(n *simNode) map[string]node.PartitionState {
	states := map[string]node.PartitionState{}
	if n.up() {
		for _, state := range n.node.OpenPartitions() {
			states[state.Dir] = state
		}
	}
	return states
}
