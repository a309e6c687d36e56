package node

import (
	"errors"
	"fmt"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/node/movedest"
	"narad/storage"
)

// The destination side of a move (docs/architecture.md#moves): a node that
// sees itself as a partition's Target runs a session that copies the source's
// log (CatchUp, pass after pass while produce flows), asks the source to
// freeze (PrepareHandoff), copies the now fixed tail and verifies and
// installs the copy (Finalize), and proposes the guarded flip (CompleteMove,
// or ForcePromote when the source died). Every step is one request to the
// source or one job in a Ready: nothing stalls the loop beyond a chunk copy.
// Package movedest decides the steps; this file turns its actions into
// requests, jobs and proposals, and the answers back into its inputs.

// movesDir holds staged copies; a start discards it (sessions restart).
const movesDir = "moves"

// moveSession is one move into this node: the protocol's state machine and
// the staged copy it fills. Only the move_*.go files of the node change
// it.
type moveSession struct {
	key partitionKey
	// topic is the identity of the topic the move is of: a job that
	// returns after the topic was deleted and created again under its
	// name finds another (discardJob).
	topic   meta.TopicIdentity
	machine *movedest.Session
	// staged is the copy being built in stagedDir; nil once the finalize
	// job closed it.
	staged    *storage.StagedCopy
	stagedDir string
	// jobOut is set from the start of the finalize job until its JobDone:
	// meanwhile the job, which may run on another goroutine, owns staged,
	// stagedDir and the partition directory it installs into.
	jobOut bool
	// leases is the queue state of the source's last frozen answer
	// (valid by lease.Snapshot.Validate); nil before one, or when it did
	// not validate. The new owner's lease table starts from it.
	leases *lease.Snapshot
	// cursors are the fan-out cursors of the source's last state; the
	// finalize installs them with the copy.
	cursors []msg.FanoutCursor
}

// moveOf names s's move in its requests to the source.
func (s *moveSession) moveOf() msg.MoveOf {
	move := s.machine.Move()
	return msg.MoveOf{Topic: move.Topic, Partition: move.Partition, Target: move.Target, MoveStartedAtMs: move.StartedAtMs,
		TopicIncarnation: s.topic.Incarnation, TopicCreatedAtMs: s.topic.CreatedAtMs}
}

// moveJob is the Finalize work that touches the disk at length: sync the
// staged copy, install it, and open it, which verifies that it recovers
// to the final HWM with nothing lost and nothing corrupt but what the
// source's log lost already (the open log is then
// adopted by the node's store, so the copy is read once). Its error is
// the session's, never the node's; a copy that fails verification is
// deleted again. The flip is proposed only after a verified install.
type moveJob struct {
	fs        storage.FS
	cfg       storage.LogConfig
	staged    *storage.StagedCopy
	stagedDir string
	finalDir  string
	minHWM    uint64
	// allowedCorrupt is the source's corruption in its final state: the
	// verification accepts exactly it in the copy (the records are lost
	// already), and refuses any other.
	allowedCorrupt storage.Corruption
	// request is the session's number for the job.
	request uint64
	// log is the verified, open copy; err the failure; corruptCount the
	// corrupt offsets its recovery skipped (the source's). Set by run.
	log          *storage.Log
	err          error
	corruptCount uint64
	// asideKept is why the directory the install set aside could not be
	// removed (nil when it was): reported, never the job's failure.
	asideKept error
}

func (j *moveJob) run() {
	if err := j.staged.Sync(); err != nil {
		j.err = fmt.Errorf("sync staged copy: %w", err)
		return
	}
	if err := j.staged.Close(); err != nil {
		j.err = fmt.Errorf("close staged copy: %w", err)
		return
	}
	if err := storage.InstallStaged(j.fs, j.stagedDir, j.finalDir); err != nil {
		j.err = fmt.Errorf("install staged copy: %w", err) // nothing installed; the partition directory is as it was
		return
	}
	log, recovery, err := storage.OpenVerified(j.fs, j.finalDir, j.cfg, j.minHWM, j.allowedCorrupt)
	if err != nil {
		j.err = errors.Join(fmt.Errorf("verify installed copy: %w", err), storage.UndoInstall(j.fs, j.finalDir))
		return
	}
	if err := storage.CommitInstall(j.fs, j.finalDir); err != nil { // not recorded as verified: a crash would undo it
		j.err = errors.Join(fmt.Errorf("commit installed copy: %w", err), log.Close(), storage.UndoInstall(j.fs, j.finalDir))
		return
	}
	// A replaced directory left behind goes at the node's next start
	// (RepairInstall); the copy itself is good.
	j.asideKept = storage.DropReplaced(j.fs, j.finalDir)
	j.log, j.corruptCount = log, recovery.CorruptCount
}

// moveRunning reports whether a session into the partition runs here.
func (n *Node) moveRunning(key partitionKey) bool {
	_, ok := n.moves[key]
	_, orphaned := n.jobsOrphaned[key]
	return ok || orphaned
}

// driveMoves starts a session for every partition targeting this node,
// ends the sessions whose move ended, and steps the idle ones. A node
// whose member the metastore knows by another data directory runs none
// (datadir.go): its copy would land in the wrong directory, and its flip
// would leave the partition's records there alone (the source lets its
// copy go), so that the member's own directory serves it empty. The
// move waits, and is aborted once the member is marked dead.
func (n *Node) driveMoves() {
	if n.otherDataDirError() != nil {
		return
	}
	n.movesScratch = n.meta.State().AppendMoves(n.movesScratch[:0])
	for _, m := range n.movesScratch {
		if m.Target != n.cfg.NodeID {
			continue
		}
		key := partitionKey{m.Topic, m.Partition}
		if _, orphaned := n.jobsOrphaned[key]; n.moves[key] == nil && !orphaned && n.mayStartSession(key, m.StartedAtMs) {
			n.startSession(key, m.Owner, m.StartedAtMs)
		}
	}
	n.forgetEndedRestarts()
	for _, key := range n.sessionKeys() {
		s := n.moves[key]
		if n.sessionEnded(s) {
			continue
		}
		n.applyMoveOutput(s, s.machine.Tick(n.seenBy(s)), nil)
	}
}

// sessionKeys returns the keys of the moves into this node, sorted. The
// list is kept until a session starts or ends (Node.moveKeys): every
// tick drives the sessions. The caller must not change it.
func (n *Node) sessionKeys() []partitionKey {
	if n.moveKeys == nil && len(n.moves) > 0 {
		n.moveKeys = make([]partitionKey, 0, len(n.moves))
		for key := range n.moves { //determinism:ok sorted below
			n.moveKeys = append(n.moveKeys, key)
		}
		sortKeys(n.moveKeys)
	}
	return n.moveKeys
}

// endTopicSessions ends, as aborted, the moves into this node of a topic
// that is gone or was re-created. Left to the next drive of the moves, a
// session of a re-created topic whose partition the new topic placed here
// judged the placement as its own flip (the target owns the partition)
// and handed the new, empty partition the old one's queue state. The
// topic's directories, an installed copy's included, go with the topic.
func (n *Node) endTopicSessions(name string) {
	for _, key := range n.sessionKeys() {
		if key.topic != name {
			continue
		}
		s := n.moves[key]
		progress := s.machine.Progress()
		chaos.Reached(chaos.MarkNodeMoveAborted)
		n.observer.Event("move-aborted", fmt.Sprintf("%s/%d from %s in %s: the topic is gone", key.topic, key.index, s.machine.Move().Source, progress.Phase))
		n.moveObserver.MoveEnded("aborted", n.nowMs-progress.StartedAtMs, progress.BytesCopied)
		n.endSession(s, false)
	}
}

// moveRestartCount is how many sessions of the move that started at
// moveStartedAtMs ended in a restart on this node.
type moveRestartCount struct {
	moveStartedAtMs int64
	count           int
	// retryAtMs, after a failure to stage the copy, is when the next
	// session may start: a failure lasting a moment (descriptors run out)
	// must not use up the restarts in as many ticks.
	retryAtMs int64
}

// stageRetryMs spaces the attempts to stage a move's copy after one
// failed.
const stageRetryMs = 1_000

// startSession begins a move into this node. A move restarted
// MoveConfig.RestartsMax times gets a session that only proposes its
// abort, without a staged copy (it copies nothing); so does one whose
// copy cannot be staged that often.
func (n *Node) startSession(key partitionKey, source string, moveStartedAtMs int64) {
	dir := movesDir + "/" + key.topic + "/" + partitionEntry(key.index)
	restarts := n.restartsOf(key, moveStartedAtMs)
	var staged *storage.StagedCopy
	if restarts < n.cfg.Moves.RestartsMax {
		var err error
		if staged, err = storage.CreateStaged(n.fs, dir, n.cfg.Log); err != nil {
			n.observer.Event("move-stage-failed", fmt.Sprintf("%s: %v", dir, err))
			n.countRestart(key, moveStartedAtMs, n.nowMs+stageRetryMs)
			return
		}
	}
	chaos.Reached(chaos.MarkNodeMoveStarted)
	n.observer.Event("move-started", fmt.Sprintf("%s/%d from %s", key.topic, key.index, source))
	move := movedest.Move{Topic: key.topic, Partition: key.index, Source: source, Target: n.cfg.NodeID, StartedAtMs: moveStartedAtMs}
	machine := movedest.New(move, n.sessionConfig(), n.nowMs)
	machine.Restarted(restarts)
	n.moves[key] = &moveSession{key: key, topic: n.creationOf(key.topic), machine: machine, staged: staged, stagedDir: dir}
	n.moveKeys = nil
}

// mayStartSession reports whether a session of the move may start now:
// not before the retry time a failure to stage its copy set, nor while
// the files of a deleted topic of the name are still to be removed.
func (n *Node) mayStartSession(key partitionKey, moveStartedAtMs int64) bool {
	if n.purgesPending[key.topic] {
		return false
	}
	r, ok := n.moveRestarts[key]
	return !ok || r.moveStartedAtMs != moveStartedAtMs || n.nowMs >= r.retryAtMs
}

// forgetEndedRestarts drops the restart counts of moves that no longer
// target this node (ended, or re-targeted) and run no session here.
func (n *Node) forgetEndedRestarts() {
	if len(n.moveRestarts) == 0 {
		return
	}
	targeted := map[partitionKey]int64{}
	for _, m := range n.movesScratch {
		if m.Target == n.cfg.NodeID {
			targeted[partitionKey{m.Topic, m.Partition}] = m.StartedAtMs
		}
	}
	for key, r := range n.moveRestarts { //determinism:ok only deletes
		if startedAtMs, ok := targeted[key]; (!ok || startedAtMs != r.moveStartedAtMs) && n.moves[key] == nil {
			delete(n.moveRestarts, key)
		}
	}
}

// restartsOf is how many sessions of the move restarted here so far.
func (n *Node) restartsOf(key partitionKey, moveStartedAtMs int64) int {
	if r, ok := n.moveRestarts[key]; ok && r.moveStartedAtMs == moveStartedAtMs {
		return r.count
	}
	return 0
}

// countRestart counts one more restart of the move (or failure to stage
// its copy), whose next session may start at retryAtMs.
func (n *Node) countRestart(key partitionKey, moveStartedAtMs, retryAtMs int64) {
	n.moveRestarts[key] = moveRestartCount{moveStartedAtMs: moveStartedAtMs, count: n.restartsOf(key, moveStartedAtMs) + 1, retryAtMs: retryAtMs}
}

// sessionConfig is the part of the node's configuration a session uses.
func (n *Node) sessionConfig() movedest.Config {
	return movedest.Config{LagBytes: n.cfg.Moves.LagBytes, CatchUpPassesMax: n.cfg.Moves.CatchUpPassesMax,
		StallTimeoutMs: n.cfg.Moves.StallTimeoutMs, ForcePromoteAfterMs: n.cfg.Moves.ForcePromoteAfterMs,
		ProposalTimeoutMs: n.cfg.ProposalTimeoutMs, RestartsMax: n.cfg.Moves.RestartsMax}
}

// seenBy is what a session's input comes with: the clock, and whether its
// source is a member the cluster declared dead.
func (n *Node) seenBy(s *moveSession) movedest.Seen {
	member, known := n.meta.State().Member(s.machine.Move().Source)
	return movedest.Seen{NowMs: n.nowMs, SourceDead: known && !member.Alive}
}

// sessionEnded ends a session whose move is over in the applied state: it
// completed (this node owns the partition), or was aborted or re-targeted
// (then an installed copy is rolled back). It reports whether it ended.
func (n *Node) sessionEnded(s *moveSession) bool {
	move := s.machine.Move()
	if move.Topic != s.key.topic || move.Partition != s.key.index || move.Target != n.cfg.NodeID { // guarded: the arguments would allocate on every call
		invariant.Broken("node: the session of %s/%d runs the move of %s/%d to %s", s.key.topic, s.key.index, move.Topic, move.Partition, move.Target)
	}
	a, ok := n.meta.State().Assignment(s.key.topic, s.key.index)
	source, progress := move.Source, s.machine.Progress()
	switch s.machine.Placement(movedest.Placement{Assigned: ok, Owner: a.Owner, Target: a.Target, StartedAtMs: a.MoveStartedAtMs}) {
	case movedest.EndCompleted:
		n.observer.Event("move-completed", fmt.Sprintf("%s/%d from %s, %d bytes copied, forced %t", s.key.topic, s.key.index, source, progress.BytesCopied, progress.Forced))
		n.adoptMovedLeases(s)
		n.moveObserver.MoveEnded(outcomeOfSession(progress), n.nowMs-progress.StartedAtMs, progress.BytesCopied)
		n.endSession(s, false)
		n.takeOver(s.key)
		return true
	case movedest.EndAborted:
		chaos.Reached(chaos.MarkNodeMoveAborted)
		n.observer.Event("move-aborted", fmt.Sprintf("%s/%d from %s in %s", s.key.topic, s.key.index, source, progress.Phase))
		n.moveObserver.MoveEnded("aborted", n.nowMs-progress.StartedAtMs, progress.BytesCopied)
		n.endSession(s, s.machine.RollsBack())
		return true
	}
	return false
}

// takeOver gives the copy adopted into the store a completed move left
// open to its partition, as a first request would: every log open in the
// store then belongs to a partition or to a session before its flip, so a
// deleted topic or a move away closes it (five-node moves seed 2: a
// deleted topic's moved-in log stayed open, and the re-created topic's
// partition could never be installed on that node again).
func (n *Node) takeOver(key partitionKey) {
	t, known := n.lookupTopic(key.topic)
	if !known || !n.store.IsOpen(PartitionDir(key.topic, key.index)) {
		return // nothing adopted: a restart since closed it; it opens on demand
	}
	if _, err := n.openLog(t, n.partitionOf(t, key.index)); err != nil {
		n.observer.Event("move-take-over-failed", fmt.Sprintf("%s/%d: %v", key.topic, key.index, err))
	}
}

func outcomeOfSession(progress movedest.Progress) string {
	if progress.Forced {
		return "force_promoted"
	}
	return "completed"
}

// endSession drops a session's files: the staged copy, and the installed
// one when rollBack is set (the flip did not happen). A session whose
// finalize job is out leaves them to the job's return (discardJob): the
// job may be writing them on another goroutine.
func (n *Node) endSession(s *moveSession, rollBack bool) {
	delete(n.moves, s.key)
	n.moveKeys = nil
	if s.jobOut {
		chaos.Reached(chaos.MarkNodeMoveJobOrphaned)
		n.jobsOrphaned[s.key] = s.topic
		return
	}
	if s.staged != nil {
		_ = s.staged.Close() // a failed copy's close error adds nothing
	}
	if err := n.fs.RemoveAll(s.stagedDir); err != nil {
		n.observer.Event("move-cleanup-failed", fmt.Sprintf("%s: %v", s.stagedDir, err))
	}
	if !rollBack {
		return
	}
	chaos.Reached(chaos.MarkNodeMoveRolledBack)
	dir := PartitionDir(s.key.topic, s.key.index)
	if err := n.store.Close(dir); err != nil && !isClosed(err) {
		n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", dir, err))
	}
	if err := storage.DeletePartition(n.fs, dir); err != nil {
		n.observer.Event("move-rollback-failed", fmt.Sprintf("%s/%d: %v", s.key.topic, s.key.index, err))
	}
}

// restartSession throws the copy away; the next tick starts again (the
// move is still targeted here).
func (n *Node) restartSession(s *moveSession, cause error) {
	chaos.Reached(chaos.MarkNodeMoveRestarted)
	n.observer.Event("move-restarted", fmt.Sprintf("%s/%d in %s: %v", s.key.topic, s.key.index, s.machine.Phase(), cause))
	n.endSession(s, false)
	n.countRestart(s.key, s.machine.Move().StartedAtMs, n.nowMs)
}

// leaseSnapshotOf turns a frozen source's queue state into a lease
// snapshot; one that does not validate is dropped (the new owner then
// starts its counts over, as a restart does).
func (n *Node) leaseSnapshotOf(s *moveSession, state msg.MoveSourceState) *lease.Snapshot {
	snapshot := lease.Snapshot{Committed: state.Committed, NextUndelivered: max(state.NextUndelivered, state.Committed)}
	for _, entry := range state.Leases {
		kind := lease.EntryReleased
		if entry.DeliveryCount == 0 {
			kind = lease.EntryAcked
		}
		snapshot.Entries = append(snapshot.Entries, lease.SnapshotEntry{Offset: entry.Offset, State: kind, DeliveryCount: entry.DeliveryCount,
			ReturnedUnseen: entry.ReturnedUnseen})
	}
	if err := snapshot.Validate(); err != nil || snapshot.NextUndelivered > state.HWM {
		n.observer.Event("move-leases-dropped", fmt.Sprintf("%s/%d: the source's queue state does not fit (%v); delivery counts start over", s.key.topic, s.key.index, err))
		return nil
	}
	return &snapshot
}

// adoptMovedLeases starts the lease table of a partition that just moved
// here from its source's queue state as of the freeze: delivery counts
// carry on and acks made ahead of the committed offset stay made. A table
// that exists already (the partition was served here meanwhile) is kept.
func (n *Node) adoptMovedLeases(s *moveSession) {
	t, ok := n.lookupTopic(s.key.topic)
	if s.leases == nil || !ok || !n.ownedHere(t, s.key.index) {
		return
	}
	p := n.partitionOf(t, s.key.index)
	if p.leases != nil {
		return
	}
	p.leases = lease.RestoreTable(*s.leases, n.nonceFloor, n.leaseConfig(t))
	n.countLeasesOf(p)
	n.noteLeaseDeadlines(p)
	n.watchExhausted(p)
	chaos.Reached(chaos.MarkNodeMoveCarriedLeases)
}
