package node

import (
	"errors"
	"fmt"

	"narad/chaos"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// The destination side of a move (DESIGN.md §6): a node that sees itself
// as a partition's Target runs a session that copies the source's log
// (CatchUp, pass after pass while produce flows), asks the source to
// freeze (PrepareHandoff), copies the now fixed tail and verifies and
// installs the copy (Finalize), and proposes the guarded flip
// (CompleteMove, or ForcePromote when the source died). Every step is one
// request to the source or one job in a Ready: nothing stalls the loop
// beyond a chunk copy.

// movesDir holds staged copies; a start discards it (sessions restart).
const movesDir = "moves"

// movePhase is where a session is.
type movePhase int

const (
	phaseCatchUp movePhase = iota + 1
	phaseHandoff
	phaseFinalize
	phaseFlip
)

func (p movePhase) String() string {
	switch p {
	case phaseCatchUp:
		return "catchup"
	case phaseHandoff:
		return "handoff"
	case phaseFinalize:
		return "finalize"
	case phaseFlip:
		return "flip"
	}
	return "unknown"
}

// moveSession is one move into this node. Only the move_*.go files of
// the node change it.
type moveSession struct {
	key    partitionKey
	source string
	// moveStartedAtMs identifies the move (its SetTarget's time): a later
	// move with the same source and target is another move.
	moveStartedAtMs int64
	phase           movePhase
	// staged is the copy being built in stagedDir; nil once installed.
	staged    *storage.StagedCopy
	stagedDir string
	// state is the source's last reported state (final once Frozen);
	// haveState is false until the first report of the current pass.
	state     msg.MoveSourceState
	haveState bool
	// reached is set by the first answer from the source; lastContactMs
	// is the time of the latest one, lastProgressMs of the latest step
	// forward (an answer or a job done).
	reached        bool
	lastContactMs  int64
	lastProgressMs int64
	startedAtMs    int64
	// passes counts the CatchUp passes; lastLagBytes is the lag at the end
	// of the previous one (-1 before the first).
	passes       int
	lastLagBytes int64
	// busy is set while a request or job is in flight.
	busy bool
	// forced is set when the session promotes a copy of a dead source.
	forced bool
	// flipProposedAtMs is when the flip was last proposed (0: not yet).
	flipProposedAtMs int64
	bytesCopied      int64
	// abortProposed is set once the session proposed its own abort.
	abortProposed bool
}

// moveJob is the Finalize work that touches the disk at length: sync the
// staged copy, install it, and open it, which verifies that it recovers
// to the final HWM with nothing lost or corrupt (the open log is then
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
	// log is the verified, open copy; err the failure. Set by run.
	log *storage.Log
	err error
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
		j.err = fmt.Errorf("install staged copy: %w", err)
		return
	}
	log, _, err := storage.OpenVerified(j.fs, j.finalDir, j.cfg, j.minHWM)
	if err != nil {
		j.err = errors.Join(fmt.Errorf("verify installed copy: %w", err), storage.DeletePartition(j.fs, j.finalDir))
		return
	}
	j.log = log
}

// moveRunning reports whether a session into the partition runs here.
func (n *Node) moveRunning(key partitionKey) bool {
	_, ok := n.moves[key]
	return ok
}

// driveMoves starts a session for every partition targeting this node,
// ends the sessions whose move ended, and steps the idle ones.
func (n *Node) driveMoves() {
	for _, m := range n.meta.State().Moves() {
		key := partitionKey{m.Topic, m.Partition}
		if m.Target == n.cfg.NodeID && n.moves[key] == nil {
			n.startSession(key, m.Owner, m.StartedAtMs)
		}
	}
	for _, key := range n.sessionKeys() {
		s := n.moves[key]
		if n.sessionEnded(s) {
			continue
		}
		if !s.busy {
			n.stepMove(s)
		}
	}
}

func (n *Node) sessionKeys() []partitionKey {
	keys := make([]partitionKey, 0, len(n.moves))
	for key := range n.moves { //determinism:ok sorted below
		keys = append(keys, key)
	}
	sortKeys(keys)
	return keys
}

// startSession begins a move into this node.
func (n *Node) startSession(key partitionKey, source string, moveStartedAtMs int64) {
	dir := fmt.Sprintf("%s/%s/p%05d", movesDir, key.topic, key.index)
	staged, err := storage.CreateStaged(n.fs, dir, n.cfg.Log)
	if err != nil {
		n.observer.Event("move-stage-failed", fmt.Sprintf("%s: %v", dir, err))
		return
	}
	chaos.Reached("node-move-started")
	n.observer.Event("move-started", fmt.Sprintf("%s/%d from %s", key.topic, key.index, source))
	n.moves[key] = &moveSession{key: key, source: source, moveStartedAtMs: moveStartedAtMs, phase: phaseCatchUp, staged: staged, stagedDir: dir,
		startedAtMs: n.nowMs, lastProgressMs: n.nowMs, lastLagBytes: -1}
}

// sessionEnded ends a session whose move is over in the applied state: it
// completed (this node owns the partition), or was aborted or re-targeted
// (then an installed copy is rolled back). It reports whether it ended.
func (n *Node) sessionEnded(s *moveSession) bool {
	a, ok := n.meta.State().Assignment(s.key.topic, s.key.index)
	switch {
	case ok && a.Owner == n.cfg.NodeID:
		n.observer.Event("move-completed", fmt.Sprintf("%s/%d from %s, %d bytes copied, forced %t", s.key.topic, s.key.index, s.source, s.bytesCopied, s.forced))
		n.moveObserver.MoveEnded(outcomeOfSession(s), n.nowMs-s.startedAtMs, s.bytesCopied)
		n.endSession(s, false)
		return true
	case !ok || a.Target != n.cfg.NodeID || a.Owner != s.source || a.MoveStartedAtMs != s.moveStartedAtMs:
		chaos.Reached("node-move-aborted")
		n.observer.Event("move-aborted", fmt.Sprintf("%s/%d from %s in %s", s.key.topic, s.key.index, s.source, s.phase))
		n.moveObserver.MoveEnded("aborted", n.nowMs-s.startedAtMs, s.bytesCopied)
		n.endSession(s, s.phase == phaseFlip)
		return true
	}
	return false
}

func outcomeOfSession(s *moveSession) string {
	if s.forced {
		return "force_promoted"
	}
	return "completed"
}

// endSession drops a session's files: the staged copy, and the installed
// one when rollBack is set (the flip did not happen).
func (n *Node) endSession(s *moveSession, rollBack bool) {
	delete(n.moves, s.key)
	if s.staged != nil {
		_ = s.staged.Close() // a failed copy's close error adds nothing
	}
	if err := n.fs.RemoveAll(s.stagedDir); err != nil {
		n.observer.Event("move-cleanup-failed", fmt.Sprintf("%s: %v", s.stagedDir, err))
	}
	if !rollBack {
		return
	}
	chaos.Reached("node-move-rolled-back")
	dir := PartitionDir(s.key.topic, s.key.index)
	if err := n.store.Close(dir); err != nil && !isClosed(err) {
		n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", dir, err))
	}
	if err := storage.DeletePartition(n.fs, dir); err != nil {
		n.observer.Event("move-rollback-failed", fmt.Sprintf("%s/%d: %v", s.key.topic, s.key.index, err))
	}
}

// stepMove takes the session's next step.
func (n *Node) stepMove(s *moveSession) {
	if n.sessionGivesUp(s) {
		return
	}
	switch s.phase {
	case phaseCatchUp:
		n.stepCopy(s, func() { n.requestStatus(s) })
	case phaseHandoff:
		n.requestFreeze(s)
	case phaseFinalize:
		n.stepCopy(s, func() { n.startFinalizeJob(s) })
	case phaseFlip:
		n.proposeFlip(s)
	}
}

// stepCopy reads the next missing chunk of the source's last state, or
// runs then when the copy holds all of it.
func (n *Node) stepCopy(s *moveSession, then func()) {
	if !s.haveState {
		n.requestStatus(s)
		return
	}
	for _, segment := range s.state.Segments {
		if staged := s.staged.StagedSize(segment.Base); staged < segment.Size {
			n.readChunk(s, segment.Base, staged)
			return
		}
	}
	then()
}

// request sends a move request to the source; the reply reaches handle
// only if the session is still the current one.
func (n *Node) request(s *moveSession, req msg.Request, handle func(msg.Reply)) {
	s.busy = true
	n.forward(s.source, req, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
		if n.moves[s.key] != s {
			return
		}
		s.busy = false
		if reply.Err == nil {
			s.reached, s.lastContactMs, s.lastProgressMs = true, n.nowMs, n.nowMs
		}
		handle(reply)
	})
}

// requestStatus asks the source for its state. The request names this
// session's move, so the answer says Frozen only when the source is
// frozen for it (then the state is final and may be promoted), never for
// a move the source has not yet seen replaced (seed 2698).
func (n *Node) requestStatus(s *moveSession) {
	request := msg.MoveStatus{Topic: s.key.topic, Partition: s.key.index, Target: n.cfg.NodeID, MoveStartedAtMs: s.moveStartedAtMs}
	n.request(s, request, func(reply msg.Reply) {
		state, ok := reply.Result.(msg.MoveSourceState)
		if reply.Err != nil || !ok {
			return // retried at the next tick
		}
		n.statusArrived(s, state)
	})
}

// statusArrived ends a CatchUp pass: hand off once the lag is small, the
// passes are used up, or the lag stopped shrinking.
func (n *Node) statusArrived(s *moveSession, state msg.MoveSourceState) {
	first := !s.haveState
	s.state, s.haveState = state, true
	if s.phase != phaseCatchUp {
		n.stepMove(s)
		return
	}
	lag := n.lagBytes(s)
	if !first {
		s.passes++
	}
	converged := lag <= n.cfg.Moves.LagBytes
	stuck := s.passes >= n.cfg.Moves.CatchUpPassesMax || (s.lastLagBytes >= 0 && lag >= s.lastLagBytes && !first)
	s.lastLagBytes = lag
	if converged || stuck {
		if !converged {
			chaos.Reached("node-move-catchup-gave-up")
		}
		n.observer.Event("move-catchup-done", fmt.Sprintf("%s/%d: lag %d bytes after %d passes, converged %t", s.key.topic, s.key.index, lag, s.passes, converged))
		s.phase = phaseHandoff
	}
	n.stepMove(s)
}

// lagBytes is how far the copy is behind the source's last state.
func (n *Node) lagBytes(s *moveSession) int64 {
	var lag int64
	for _, segment := range s.state.Segments {
		lag += max(segment.Size-s.staged.StagedSize(segment.Base), 0)
	}
	return lag
}

func (n *Node) readChunk(s *moveSession, base uint64, position int64) {
	n.request(s, msg.MoveRead{Topic: s.key.topic, Partition: s.key.index, Base: base, Position: position}, func(reply msg.Reply) {
		chunk, ok := reply.Result.(msg.MoveChunk)
		switch {
		case msg.CodeOf(reply.Err) == msg.CodeGone:
			n.restartSession(s, reply.Err)
		case reply.Err != nil || !ok || len(chunk.Data) == 0:
			return // retried at the next tick
		default:
			n.chunkArrived(s, base, position, chunk.Data)
		}
	})
}

func (n *Node) chunkArrived(s *moveSession, base uint64, position int64, data []byte) {
	if err := s.staged.WriteChunk(base, position, data); err != nil {
		n.restartSession(s, err)
		return
	}
	s.bytesCopied += int64(len(data))
	n.moveObserver.MoveCopied(int64(len(data)))
	n.stepMove(s)
}

// restartSession throws the copy away; the next tick starts again (the
// move is still targeted here).
func (n *Node) restartSession(s *moveSession, cause error) {
	chaos.Reached("node-move-restarted")
	n.observer.Event("move-restarted", fmt.Sprintf("%s/%d in %s: %v", s.key.topic, s.key.index, s.phase, cause))
	n.endSession(s, false)
}

func (n *Node) requestFreeze(s *moveSession) {
	n.request(s, msg.MoveFreeze{Topic: s.key.topic, Partition: s.key.index, Target: n.cfg.NodeID, MoveStartedAtMs: s.moveStartedAtMs}, func(reply msg.Reply) {
		state, ok := reply.Result.(msg.MoveSourceState)
		if reply.Err != nil || !ok || !state.Frozen {
			return // retried at the next tick
		}
		chaos.Reached("node-move-handoff")
		s.state, s.phase = state, phaseFinalize
		n.stepMove(s)
	})
}

// startFinalizeJob records the source's final state in the copy and hands
// the sync, install and verification to the driver as a job it runs off
// the loop (Ready.Jobs): a copy of gigabytes takes a second or more to
// read back, and the loop must not stall meanwhile (DESIGN.md §3).
func (n *Node) startFinalizeJob(s *moveSession) {
	if err := s.staged.SetState(s.state.HWM, s.state.Committed); err != nil {
		n.restartSession(s, err)
		return
	}
	s.busy = true
	job := &moveJob{fs: n.fs, cfg: n.cfg.Log, staged: s.staged, stagedDir: s.stagedDir,
		finalDir: PartitionDir(s.key.topic, s.key.index), minHWM: s.state.HWM}
	n.moveJobs = append(n.moveJobs, movePending{session: s, job: job})
}

// jobDone continues a session whose finalize job ran.
func (n *Node) jobDone(s *moveSession, job *moveJob) {
	if n.moves[s.key] != s {
		n.discardJob(job)
		return
	}
	s.busy = false
	s.staged = nil // closed by the job
	if job.err == nil {
		job.err = n.store.Adopt(job.finalDir, job.log, n.nowMs)
	}
	if job.err != nil {
		if job.log != nil {
			_ = job.log.Close() // not adopted: nobody else holds it
		}
		n.restartSession(s, job.err)
		return
	}
	chaos.Reached("node-move-installed")
	s.phase, s.lastProgressMs = phaseFlip, n.nowMs
	n.stepMove(s)
}

// discardJob undoes the install of a job whose session ended meanwhile
// (the move was aborted): the flip was never proposed.
func (n *Node) discardJob(job *moveJob) {
	if job.log == nil {
		return
	}
	_ = job.log.Close() // never adopted
	if err := storage.DeletePartition(n.fs, job.finalDir); err != nil {
		n.observer.Event("move-rollback-failed", fmt.Sprintf("%s: %v", job.finalDir, err))
	}
}

// flipRetryMs is how long a session waits for its flip to apply before
// it proposes it again (a proposal can be dropped on its way to the
// leader; a second one that arrives after the first applied fails its
// guard and changes nothing).
const flipRetryMs = 1_000

// proposeFlip proposes the guarded ownership flip, again if a proposal
// seems lost: the source stays frozen meanwhile.
func (n *Node) proposeFlip(s *moveSession) {
	if s.flipProposedAtMs != 0 && n.nowMs-s.flipProposedAtMs < min(flipRetryMs, n.cfg.ProposalTimeoutMs) {
		return
	}
	s.flipProposedAtMs = n.nowMs
	var cmd meta.Command = meta.CompleteMove{Topic: s.key.topic, Partition: s.key.index, ExpectedOwner: s.source,
		ExpectedTarget: n.cfg.NodeID, ExpectedStartedAtMs: s.moveStartedAtMs}
	if s.forced {
		cmd = meta.ForcePromote{Topic: s.key.topic, Partition: s.key.index, ExpectedOwner: s.source,
			ExpectedTarget: n.cfg.NodeID, ExpectedStartedAtMs: s.moveStartedAtMs}
	}
	n.propose(0, proposalMove, s.key.topic, cmd)
}

// sessionGivesUp handles a source that stopped answering: a dead source
// is replaced by the copy after ForcePromoteAfterMs if the copy holds all
// of its last known state and that state is final (the source answered
// the freeze, so it accepted nothing after it; promoting an earlier state
// would lose records the source acknowledged since); an alive one that
// makes no progress for StallTimeoutMs gets the move aborted. It reports
// whether the session took that path.
func (n *Node) sessionGivesUp(s *moveSession) bool {
	if s.phase == phaseFlip || s.phase == phaseFinalize && !s.forced && s.state.Frozen {
		return false
	}
	member, known := n.meta.State().Member(s.source)
	sourceDead := known && !member.Alive
	switch {
	case sourceDead && s.reached && s.state.Frozen && n.nowMs-s.lastContactMs >= n.cfg.Moves.ForcePromoteAfterMs && n.lagBytes(s) == 0:
		chaos.Reached("node-move-force-promote")
		n.observer.Event("move-force-promote", fmt.Sprintf("%s/%d: source %s dead since %d ms; promoting the copy at hwm %d",
			s.key.topic, s.key.index, s.source, n.nowMs-s.lastContactMs, s.state.HWM))
		s.forced, s.phase = true, phaseFinalize
		n.startFinalizeJob(s)
		return true
	case !sourceDead && !s.abortProposed && n.nowMs-s.lastProgressMs >= n.cfg.Moves.StallTimeoutMs:
		chaos.Reached("node-move-stalled")
		s.abortProposed = true
		n.propose(0, proposalMove, s.key.topic, meta.AbortMove{Topic: s.key.topic, Partition: s.key.index, ExpectedTarget: n.cfg.NodeID})
		return true
	}
	return sourceDead // wait for the source, or for the promotion delay
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
		entry := msg.Move{Topic: key.topic, Partition: key.index, From: n.moves[key].source, To: n.cfg.NodeID,
			StartedAtMs: n.moves[key].startedAtMs}
		n.fillProgress(&entry)
		out = append(out, entry)
	}
	return out
}
