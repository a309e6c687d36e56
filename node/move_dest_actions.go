package node

import (
	"errors"
	"fmt"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/movedest"
	"narad/storage"
)

// applyMoveOutput reports a session's notes and carries out its action;
// cause is the error of the input that produced it (a restart's reason).
func (n *Node) applyMoveOutput(s *moveSession, out movedest.Output, cause error) {
	for _, note := range out.Notes {
		n.noteMove(s, note)
	}
	move, action := s.machine.Move(), out.Action
	switch action.Kind {
	case movedest.ActionNone:
	case movedest.ActionStatus:
		n.requestFromSource(s, action, msg.MoveStatus{MoveOf: s.moveOf()})
	case movedest.ActionRead:
		n.requestFromSource(s, action, msg.MoveRead{MoveOf: s.moveOf(), Base: action.Base, Position: action.Position})
	case movedest.ActionFreeze:
		n.requestFromSource(s, action, msg.MoveFreeze{MoveOf: s.moveOf()})
	case movedest.ActionFinalize:
		n.startFinalizeJob(s, action)
	case movedest.ActionFlip:
		n.proposeFlip(s, action.Forced)
	case movedest.ActionAbort:
		n.propose(0, proposalMove, move.Topic, meta.AbortMove{Topic: move.Topic, Partition: move.Partition, ExpectedTarget: move.Target,
			ExpectedStartedAtMs: move.StartedAtMs, ExpectedCreation: meta.Expecting(s.topic)})
	case movedest.ActionRestart:
		n.restartSession(s, cause)
	default:
		invariant.Broken("node: move session of %s/%d asked for unknown action %d", move.Topic, move.Partition, action.Kind)
	}
}

// noteMove turns a step the session reports into the node's events and
// coverage marks.
func (n *Node) noteMove(s *moveSession, note movedest.Note) {
	switch note.Kind {
	case movedest.NoteCatchUpDone:
		if !note.Converged {
			chaos.Reached(chaos.MarkNodeMoveCatchupGaveUp)
		}
		n.observer.Event("move-catchup-done", fmt.Sprintf("%s/%d: lag %d bytes after %d passes, converged %t", s.key.topic, s.key.index, note.LagBytes, note.Passes, note.Converged))
	case movedest.NoteHandedOff:
		chaos.Reached(chaos.MarkNodeMoveHandoff)
	case movedest.NoteForcePromote:
		chaos.Reached(chaos.MarkNodeMoveForcePromote)
		n.observer.Event("move-force-promote", fmt.Sprintf("%s/%d: source %s dead, silent for %d ms; promoting the copy at hwm %d",
			s.key.topic, s.key.index, s.machine.Move().Source, note.SilentForMs, note.HWM))
	case movedest.NoteStalled:
		chaos.Reached(chaos.MarkNodeMoveStalled)
	case movedest.NoteSourceLost:
		chaos.Reached(chaos.MarkNodeMoveSourceLost)
		n.observer.Event("move-source-lost", fmt.Sprintf("%s/%d: source %s dead, silent for %d ms, and the copy may not be promoted; aborting the move",
			s.key.topic, s.key.index, s.machine.Move().Source, note.SilentForMs))
	case movedest.NoteInstalled:
		chaos.Reached(chaos.MarkNodeMoveInstalled)
	case movedest.NoteCopyAheadOfSource:
		n.observer.Event("move-copy-ahead-of-source", fmt.Sprintf("%s/%d: source %s reported less than the copy holds; copying again", s.key.topic, s.key.index, s.machine.Move().Source))
	case movedest.NoteRestartsExhausted:
		n.observer.Event("move-restarts-exhausted", fmt.Sprintf("%s/%d: restarted %d times here; aborting the move", s.key.topic, s.key.index, note.Restarts))
	}
}

// requestFromSource sends a session's request to the source; the answer
// reaches the session only if it is still the current one. MoveStatus and
// MoveFreeze name this session's move, so an answer says Frozen only when
// the source is frozen for it (then the state is final and may be
// promoted), never for a move the source has not yet seen replaced (seed
// 2698).
func (n *Node) requestFromSource(s *moveSession, action movedest.Action, req msg.Request) {
	if n.catchUpSlowed(s, func() { n.sendToSource(s, action, req) }) {
		return
	}
	n.sendToSource(s, action, req)
}

// sendToSource sends a session's request to the source now.
func (n *Node) sendToSource(s *moveSession, action movedest.Action, req msg.Request) {
	n.forward(s.machine.Move().Source, req, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
		if n.moves[s.key] != s {
			return
		}
		n.sourceAnswered(s, action, reply)
	})
}

// sourceAnswered hands the source's answer to the session; a read's chunk
// is written to the staged copy first.
func (n *Node) sourceAnswered(s *moveSession, action movedest.Action, reply msg.Reply) {
	answer := movedest.Answer{Request: action.Request, OK: reply.Err == nil, Gone: msg.CodeOf(reply.Err) == msg.CodeGone}
	switch result := reply.Result.(type) {
	case msg.MoveSourceState:
		answer.State = sourceStateOf(result)
		if reply.Err == nil && result.Frozen {
			s.leases = n.leaseSnapshotOf(s, result)
		}
		if reply.Err == nil {
			s.cursors = result.Cursors
		}
	case msg.MoveChunk:
		if reply.Err == nil && action.Kind == movedest.ActionRead && len(result.Data) > 0 {
			invariant.Check(s.staged.StagedSize(action.Base) == action.Position, "node: move of %s/%d read segment %d at %d, but %d bytes are staged",
				s.key.topic, s.key.index, action.Base, action.Position, s.staged.StagedSize(action.Base))
			if err := s.staged.WriteChunk(action.Base, action.Position, result.Data); err != nil {
				n.restartSession(s, err)
				return
			}
			answer.Written = int64(len(result.Data))
		}
	}
	out := s.machine.Answered(n.seenBy(s), answer)
	if answer.Written > 0 {
		n.moveObserver.MoveCopied(answer.Written)
	}
	n.applyMoveOutput(s, out, reply.Err)
}

// sourceStateOf translates the source's state for the session.
func sourceStateOf(state msg.MoveSourceState) *movedest.SourceState {
	out := &movedest.SourceState{HWM: state.HWM, Committed: state.Committed, Frozen: state.Frozen,
		Corruption: movedest.Corruption{Count: state.CorruptCount, Offsets: state.CorruptOffsets}}
	for _, segment := range state.Segments {
		out.Segments = append(out.Segments, movedest.Segment{Base: segment.Base, Size: segment.Size})
	}
	return out
}

// startFinalizeJob records the source's final state in the copy and hands
// the sync, install and verification to the driver as a job it runs off
// the loop (Ready.Jobs): a copy of gigabytes takes a second or more to
// read back, and the loop must not stall meanwhile.
func (n *Node) startFinalizeJob(s *moveSession, action movedest.Action) {
	if err := s.staged.SetState(action.HWM, action.Committed); err != nil {
		n.restartSession(s, err)
		return
	}
	if err := n.installCursors(s, action.HWM); err != nil {
		n.restartSession(s, err)
		return
	}
	if err := n.stampStaged(s); err != nil {
		n.restartSession(s, err)
		return
	}
	job := &moveJob{fs: n.fs, cfg: n.cfg.Log, staged: s.staged, stagedDir: s.stagedDir,
		finalDir: PartitionDir(s.key.topic, s.key.index), minHWM: action.HWM, request: action.Request,
		allowedCorrupt: storage.Corruption{Count: action.Corruption.Count, Offsets: action.Corruption.Offsets}}
	s.jobOut = true
	if pending := (movePending{session: s, job: job}); !n.moveJobLate(pending) {
		n.moveJobs = append(n.moveJobs, pending)
	}
}

// jobDone continues a session whose finalize job ran.
func (n *Node) jobDone(s *moveSession, job *moveJob) {
	s.jobOut = false
	if n.moves[s.key] != s {
		if n.ownsTheOrphanedCopy(s) {
			n.keepOrphanedJob(s, job)
			return
		}
		n.discardJob(s, job)
		return
	}
	s.staged = nil // closed by the job
	n.adoptInstalled(job)
	n.applyMoveOutput(s, s.machine.JobDone(n.seenBy(s), job.request, job.err == nil), job.err)
}

// adoptInstalled hands the verified copy a job installed to the store
// (job.err says why not), and closes it when it was not adopted: nobody
// else holds it.
func (n *Node) adoptInstalled(job *moveJob) {
	if job.err == nil {
		job.err = n.store.Adopt(job.finalDir, job.log, n.nowMs)
	}
	if job.err == nil {
		// Adopt takes the log past the cap of open logs: close the least
		// recently used now, not at the next Advance (several jobs that
		// return in one round took the node that many past it).
		n.closeLogsPastCap()
	}
	if job.asideKept != nil {
		n.observer.Event("move-cleanup-failed", fmt.Sprintf("%s: the directory the install set aside stays until the next start: %v", job.finalDir, job.asideKept))
	}
	if job.err == nil && job.corruptCount > 0 {
		n.observer.Event("move-carried-corruption", fmt.Sprintf("%s: the copy holds the source's %d corrupt offsets (first %v), lost before the move",
			job.finalDir, job.corruptCount, job.allowedCorrupt.Offsets))
	}
	if job.err != nil && job.log != nil {
		_ = job.log.Close()
	}
}

// ownsTheOrphanedCopy reports whether the session of an orphaned job ended
// because its own move flipped: the flip that an earlier incarnation of
// this node proposed for the same move (before a crash) applied while the
// session, started again, had its finalize job out. The job then installs
// the source's frozen state, which is what the flip made the partition's
// log here, so its copy must stay: discarding it would delete the
// partition's only copy.
func (n *Node) ownsTheOrphanedCopy(s *moveSession) bool {
	a, ok := n.meta.State().Assignment(s.key.topic, s.key.index)
	return ok && a.Owner == n.cfg.NodeID && a.LastMoveStartedAtMs == s.machine.Move().StartedAtMs
}

// keepOrphanedJob ends the job of a session whose own move flipped while
// the job was out: its verified copy is adopted and served, as a
// completed session's is; a failed job left nothing to adopt (the
// partition opens on demand from what the disk holds, and recovery
// reports what is missing).
func (n *Node) keepOrphanedJob(s *moveSession, job *moveJob) {
	delete(n.jobsOrphaned, s.key)
	n.observer.Event("move-job-kept-after-flip", fmt.Sprintf("%s: the move flipped while its install ran", job.finalDir))
	if err := n.fs.RemoveAll(s.stagedDir); err != nil {
		n.observer.Event("move-cleanup-failed", fmt.Sprintf("%s: %v", s.stagedDir, err))
	}
	if n.adoptInstalled(job); job.err != nil {
		n.observer.Event("move-install-failed-after-flip", fmt.Sprintf("%s: %v", job.finalDir, job.err))
		return
	}
	n.takeOver(s.key)
	// Servable only now: the Notify sent at the flip, and the probes
	// since, found the partition closed to them while the job was out.
	n.tellPollsOf(s.key.topic, []int{s.key.index})
}

// OrphanedJob reports whether the directory of partition index of topic
// is held by a move's finalize job whose session ended while it was out,
// with the identity of the topic the move was of: until the job's return
// has settled the directory (discardJob removes it when that topic is
// gone), nothing opens it. A read for the simulator's checkers.
func (n *Node) OrphanedJob(topic string, index int) (meta.TopicIdentity, bool) {
	identity, orphaned := n.jobsOrphaned[partitionKey{topic, index}]
	return identity, orphaned
}

// discardJob undoes the install of a job whose session ended meanwhile
// (the move was aborted): the flip was never proposed. The session left
// its files to the job (endSession), so they go now, on the loop.
func (n *Node) discardJob(s *moveSession, job *moveJob) {
	if s.staged != nil {
		_ = s.staged.Close() // closed already unless the job failed first
	}
	if err := n.fs.RemoveAll(s.stagedDir); err != nil {
		n.observer.Event("move-cleanup-failed", fmt.Sprintf("%s: %v", s.stagedDir, err))
	}
	if job.log != nil {
		_ = job.log.Close() // never adopted
	}
	if n.jobLeftNothingNeeded(s) {
		if err := storage.DeletePartition(n.fs, job.finalDir); err != nil {
			n.observer.Event("move-rollback-failed", fmt.Sprintf("%s: %v", job.finalDir, err))
			if n.jobTopicGone(s) {
				n.orphansUnremoved[s.key] = true // held in jobsOrphaned until retryOrphanRemovals removes it
				return
			}
		}
	}
	delete(n.jobsOrphaned, s.key) // held until its directory is settled (OrphanedJob)
	n.purgeDroppedTopicDir(s.key.topic)
}

// retryOrphanRemovals removes again the directories an orphaned job's
// return could not (orphansUnremoved): the files of a topic that is gone,
// which a topic created again under its name must never open.
func (n *Node) retryOrphanRemovals() {
	if len(n.orphansUnremoved) == 0 {
		return // at every tick: nothing to sort
	}
	keys := make([]partitionKey, 0, len(n.orphansUnremoved))
	for key := range n.orphansUnremoved { //determinism:ok sorted below
		keys = append(keys, key)
	}
	sortKeys(keys)
	for _, key := range keys {
		dir := PartitionDir(key.topic, key.index)
		if err := storage.DeletePartition(n.fs, dir); err != nil {
			continue // reported when it first failed; tried again next tick
		}
		delete(n.orphansUnremoved, key)
		delete(n.jobsOrphaned, key)
		n.observer.Event("move-rollback-retried", dir+": the deleted topic's files a move job left are gone")
		n.purgeDroppedTopicDir(key.topic)
	}
}

// jobLeftNothingNeeded reports whether what an orphaned job left in the
// partition directory (its verified copy, or the install a failed job
// put back for a late flip that can no longer apply: its move ended
// without making this node the owner) must go. It must when the topic
// is gone, or was created again under its name (nothing opened the
// directory while the job was out, openLog, so it holds the old topic's
// records only), and may when this node neither owns nor targets the
// partition; a node that targets it again keeps it for its next
// session's install, which sets it aside until its own copy verified.
func (n *Node) jobLeftNothingNeeded(s *moveSession) bool {
	if n.jobTopicGone(s) {
		return true
	}
	t, _ := n.lookupTopic(s.key.topic)
	a := t.assignments[s.key.index]
	return a.Owner != n.cfg.NodeID && a.Target != n.cfg.NodeID
}

// jobTopicGone reports whether the topic of an orphaned job's move is
// gone: deleted, perhaps created again under its name since.
func (n *Node) jobTopicGone(s *moveSession) bool {
	t, ok := n.lookupTopic(s.key.topic)
	return !ok || t.identity != s.topic || s.key.index >= len(t.assignments)
}

// proposeFlip proposes the guarded ownership flip of s's move:
// CompleteMove, or ForcePromote when the copy replaces a dead source.
func (n *Node) proposeFlip(s *moveSession, forced bool) {
	if err := n.otherDataDirError(); err != nil {
		n.observer.Event("move-flip-withheld", err.Error()) // see driveMoves
		return
	}
	move := s.machine.Move()
	var cmd meta.Command = meta.CompleteMove{Topic: move.Topic, Partition: move.Partition, ExpectedOwner: move.Source,
		ExpectedTarget: move.Target, ExpectedStartedAtMs: move.StartedAtMs,
		ExpectedCreation: meta.Expecting(s.topic)}
	if forced {
		cmd = meta.ForcePromote{Topic: move.Topic, Partition: move.Partition, ExpectedOwner: move.Source,
			ExpectedTarget: move.Target, ExpectedStartedAtMs: move.StartedAtMs,
			ExpectedCreation: meta.Expecting(s.topic)}
	}
	n.propose(0, proposalMove, move.Topic, cmd)
}

// discardStagedCopies removes the staged copies of an earlier run: its
// sessions start again.
func (n *Node) discardStagedCopies() error {
	if err := n.fs.RemoveAll(movesDir); err != nil && !errors.Is(err, storage.ErrNotExist) {
		return fmt.Errorf("discard staged copies: %w", err)
	}
	return nil
}

// movePending is a finalize job waiting for, or riding in, a Ready.
type movePending struct {
	session *moveSession
	job     *moveJob
}

// addMoveJobs hands the pending finalize jobs to the driver.
func (n *Node) addMoveJobs(rd *Ready) {
	for i := range n.moveJobs {
		rd.Jobs = append(rd.Jobs, Job{pending: &n.moveJobs[i]})
	}
	n.moveJobs = nil
}

// MoveSessions describes the moves into this node that run here, sorted
// by topic and partition (the simulator aims its faults at their phases).
func (n *Node) MoveSessions() []msg.Move {
	var out []msg.Move
	for _, key := range n.sessionKeys() {
		s := n.moves[key]
		entry := msg.Move{Topic: key.topic, Partition: key.index, From: s.machine.Move().Source, To: n.cfg.NodeID,
			StartedAtMs: s.machine.Progress().StartedAtMs}
		n.fillProgress(&entry)
		out = append(out, entry)
	}
	return out
}
