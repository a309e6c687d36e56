package sim

import "math/rand/v2"

// Clock skew. Every node of a world read the world's clock, so nothing
// showed whether the core compares one node's time with another's. In a
// seeded half of the cluster worlds each start of a node draws an offset
// of its clock within ±clockSkewMsMax, which it keeps until it stops
// (a clock is never set back under a running node; across a restart it
// may be, as NTP may correct it). What the design compares across nodes
// must then hold: the metastore's guards compare values, never clocks; a
// member's silence is timed on the leader's own clock and the write fence
// on the node's own; a move's start is the proposer's clock, raised past
// the partition's previous move. Two things compare time across nodes by
// design: a fan-out attach's epoch (the attach's time on its proposer's
// clock, the records' on their owners'), which starts a second early for
// it (FanoutConfig.AttachClockSkewMs), and a delay child's release after
// a move (the commit time on the old owner's clock, the release on the
// new one's), whose checker allows for the spread (checkDelay).

// clockSkewMsMax bounds a node's clock offset: well above what NTP keeps
// a fleet within, well below a heartbeat interval.
const clockSkewMsMax = 250

// clockSkew draws the offsets of a world's nodes' clocks.
type clockSkew struct {
	// on: this world's clocks are skewed.
	on  bool
	rng *rand.Rand
}

func newClockSkew(opts Options) clockSkew {
	rng := newRand(opts.Seed, clockSkewStream)
	return clockSkew{on: opts.Nodes > 1 && rng.IntN(2) == 0, rng: rng}
}

// draw returns the offset of a node's clock for the start under way.
func (s clockSkew) draw(n *simNode) int64 {
	if !s.on {
		return 0
	}
	offset := s.rng.Int64N(2*clockSkewMsMax+1) - clockSkewMsMax
	n.w.tracef("%s clock offset %d ms", n.id, offset)
	return offset
}

// spreadMs is the most two nodes' clocks may differ by.
func (s clockSkew) spreadMs() int64 {
	if !s.on {
		return 0
	}
	return 2 * clockSkewMsMax
}

// clockMs is the node's time: the world's, offset by this start's skew,
// never below 0.
func (n *simNode) clockMs() int64 { return max(0, n.w.nowMs+n.clockOffsetMs) }
