package chaos

// Bug names a planted bug: a deliberate defect that the simulator must
// catch, to show its checkers can fail.
type Bug int

const (
	// BugAckBeforeSync answers a produce 202 before its records are
	// fsynced.
	BugAckBeforeSync Bug = iota + 1
	// BugVisibleBeforeDurable advances the high-watermark (makes records
	// visible to consumers) before the data is durable.
	BugVisibleBeforeDurable
	// BugForgetCommitted loses the committed consumer offset on restart.
	BugForgetCommitted
	// BugRepeatedAckStale answers 410 to an ack of a record already
	// acknowledged, as if its lease had lapsed.
	BugRepeatedAckStale
	// BugRecoveryServesUnsynced makes recovery serve the frames it found
	// past the persisted high-watermark without syncing them first (they
	// may sit only in the page cache after a process crash).
	BugRecoveryServesUnsynced
	// BugRoundCoversLaterAppends makes a completed sync round visible up
	// to the log's end, including the frames appended while it was in
	// flight, which it did not make durable (pipelined group commit).
	BugRoundCoversLaterAppends
	// BugForgetFanoutCursor makes a move's destination forget where the
	// fan-out cursors its source reported stood, and install each at the
	// copy's end: the backlog not yet copied is lost for the children.
	BugForgetFanoutCursor
)

// FanoutBugs lists the planted bugs of fan-out. They are not in Bugs:
// only the fan-out scenario (sim Options.Fanout) can catch them, and the
// simulator's fan-out planted test tries each there.
var FanoutBugs = []Bug{BugForgetFanoutCursor}

// Bugs lists every planted bug, for tests that try each.
var Bugs = []Bug{BugAckBeforeSync, BugVisibleBeforeDurable, BugForgetCommitted, BugRepeatedAckStale, BugRecoveryServesUnsynced,
	BugRoundCoversLaterAppends}

func (b Bug) String() string {
	switch b {
	case BugAckBeforeSync:
		return "ack-before-sync"
	case BugVisibleBeforeDurable:
		return "visible-before-durable"
	case BugForgetCommitted:
		return "forget-committed"
	case BugRepeatedAckStale:
		return "repeated-ack-stale"
	case BugRecoveryServesUnsynced:
		return "recovery-serves-unsynced"
	case BugRoundCoversLaterAppends:
		return "round-covers-later-appends"
	case BugForgetFanoutCursor:
		return "forget-fanout-cursor"
	}
	return "unknown-bug"
}
