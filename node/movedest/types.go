package movedest

// FlipRetryMs is how long a session waits for its flip to apply before it
// proposes it again (a proposal can be dropped on its way to the leader; a
// second one that arrives after the first applied fails its guard and
// changes nothing). The proposal timeout bounds it too.
const FlipRetryMs = 1_000

// Phase is where a session is. Phases only move forward.
type Phase int

// The phases, in order.
const (
	PhaseCatchUp Phase = iota + 1
	PhaseHandoff
	PhaseFinalize
	PhaseFlip
)

func (p Phase) String() string {
	switch p {
	case PhaseCatchUp:
		return "catchup"
	case PhaseHandoff:
		return "handoff"
	case PhaseFinalize:
		return "finalize"
	case PhaseFlip:
		return "flip"
	}
	return "unknown"
}

// Config bounds and times a session. The node copies it from its own
// configuration; New asserts that no bound is negative.
type Config struct {
	// LagBytes: CatchUp hands off once the copy is within this many bytes
	// of the source.
	LagBytes int64
	// CatchUpPassesMax bounds the CatchUp passes.
	CatchUpPassesMax int
	// StallTimeoutMs: a session without progress for this long, whose
	// source is alive, proposes the move's abort.
	StallTimeoutMs int64
	// ForcePromoteAfterMs: a session whose source died waits this long
	// after the source's last answer before it promotes a frozen copy;
	// one whose copy cannot be promoted proposes the move's abort after
	// the longer of this and StallTimeoutMs.
	ForcePromoteAfterMs int64
	// ProposalTimeoutMs bounds the wait between two proposals of the flip.
	ProposalTimeoutMs int64
	// RestartsMax: a session whose move was restarted this many times on
	// its node (Session.Restarted) proposes the move's abort instead of
	// copying again; 0 never does. A failure that recurs at every
	// attempt before the freeze (a disk too small for the copy, a segment
	// retention removes faster than a copy takes) makes progress within
	// each session, so no stall shows, and would hold the move, and a
	// slot of the planner's bound, for ever.
	RestartsMax int
}

// Move names the move a session runs: its SetTarget's time tells it from
// a later move with the same source and target.
type Move struct {
	Topic       string
	Partition   int
	Source      string
	Target      string
	StartedAtMs int64
}

// Segment is one segment of the source: bytes [0, Size) of the segment
// starting at offset Base are durable there.
type Segment struct {
	Base uint64
	Size int64
}

// SourceState is what the source reported: its segments, HWM and
// committed consumer offset, whether it is frozen for this move (then
// the state is final), and the corruption of its log.
type SourceState struct {
	Segments  []Segment
	HWM       uint64
	Committed uint64
	Frozen    bool
	// Corruption is what media damage destroyed in the source's log; the
	// copy carries it over, and the finalize accepts exactly it.
	Corruption Corruption
}

// Corruption is the source's corrupt offsets below its HWM: the exact
// count, and the first offsets in increasing order (a bounded list).
type Corruption struct {
	Count   uint64
	Offsets []uint64
}

// Seen is what the node sees as it hands the session an input: its clock,
// and whether the source is a member the cluster declared dead.
type Seen struct {
	NowMs      int64
	SourceDead bool
}

// ActionKind says what an Action asks of the node.
type ActionKind int

// The actions. ActionNone asks for nothing.
const (
	ActionNone ActionKind = iota
	// ActionStatus: send the source a status request for this move.
	ActionStatus
	// ActionRead: send the source a read of segment Base from Position.
	ActionRead
	// ActionFreeze: send the source a freeze request for this move.
	ActionFreeze
	// ActionFinalize: record HWM and Committed in the copy and start the
	// finalize job (sync, install, verify, adopt).
	ActionFinalize
	// ActionFlip: propose the guarded flip; a forced promotion if Forced.
	ActionFlip
	// ActionAbort: propose the move's abort.
	ActionAbort
	// ActionRestart: end the session and throw its copy away.
	ActionRestart
)

// Action is one thing the session asks the node to do.
type Action struct {
	Kind ActionKind
	// Request numbers a request or job (ActionStatus, ActionRead,
	// ActionFreeze, ActionFinalize): its answer must name it.
	Request uint64
	// Base and Position locate a read.
	Base     uint64
	Position int64
	// HWM and Committed are the final state a finalize records, and
	// Corruption the source's, the only corruption its verification
	// accepts in the copy.
	HWM        uint64
	Committed  uint64
	Corruption Corruption
	// Forced marks a flip that promotes the copy of a dead source.
	Forced bool
}

// NoteKind says what a Note reports.
type NoteKind int

// The notes.
const (
	// NoteCatchUpDone: CatchUp ended after Passes passes with LagBytes
	// left; Converged unless it gave up.
	NoteCatchUpDone NoteKind = iota + 1
	// NoteHandedOff: the source answered the freeze with its final state.
	NoteHandedOff
	// NoteForcePromote: the source is dead, silent for SilentForMs; the
	// copy at HWM is promoted.
	NoteForcePromote
	// NoteStalled: the session made no progress; it proposes the abort.
	NoteStalled
	// NoteInstalled: the finalize job installed and verified the copy.
	NoteInstalled
	// NoteSourceLost: the source is dead, silent for SilentForMs, and the
	// copy cannot be promoted; the session proposes the abort.
	NoteSourceLost
	// NoteRestartsExhausted: the move was restarted Config.RestartsMax
	// times on this node; the session proposes the abort.
	NoteRestartsExhausted
	// NoteCopyAheadOfSource: the source reported a state that holds less
	// than the copy (copyAheadOf); the copy restarts.
	NoteCopyAheadOfSource
)

// Note reports a step of the protocol, for the node's events and
// coverage marks.
type Note struct {
	Kind        NoteKind
	LagBytes    int64
	Passes      int
	Converged   bool
	SilentForMs int64
	HWM         uint64
	Restarts    int
}

// Output is what one input produced: notes in the order they happened,
// then at most one action.
type Output struct {
	Notes  []Note
	Action Action
}

// Answer is the source's answer to the request in flight, as the node
// decoded it.
type Answer struct {
	// Request is the number of the request answered.
	Request uint64
	// OK is set when the source answered without error: it was reached.
	OK bool
	// Gone is set when the source no longer holds the bytes a read asked
	// for: the copy must start again.
	Gone bool
	// State is the state a status or freeze answer carried; nil if none.
	State *SourceState
	// Written is how many bytes of a read's chunk the node wrote to the
	// copy (0 when the answer carried none).
	Written int64
}

// Placement is the applied placement of the session's partition.
type Placement struct {
	// Assigned is false when the partition is not in the applied state.
	Assigned    bool
	Owner       string
	Target      string
	StartedAtMs int64
}

// End says whether, and how, the applied placement ended a session.
type End int

// The ends.
const (
	// EndNone: the move still runs.
	EndNone End = iota
	// EndCompleted: the target owns the partition.
	EndCompleted
	// EndAborted: the move was aborted or re-targeted; if the session was
	// in Flip, its installed copy must be rolled back.
	EndAborted
)

// Progress describes a session for listings and metrics.
type Progress struct {
	Phase       Phase
	BytesCopied int64
	// BytesTotal is the size of the source's last reported state.
	BytesTotal  int64
	StartedAtMs int64
	Forced      bool
}
