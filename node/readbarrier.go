package node

import (
	"errors"

	"narad/invariant"
	"narad/meta"
)

// The metastore leader's replica answers for the cluster about a topic
// (topicwait.go): its 404 for a topic it does not know, its 400 for a
// partition past its count, and its answer to another node's question
// (msg.GetTopic.Confirm), from which that node answers its own 404s and
// 400s. But "leads" is the replica's own belief: cut off from a quorum,
// it keeps it until CheckQuorum steps it down, while a newer leader may
// already have committed the topic's creation or growth and had it
// acknowledged through another node. So such an answer waits for a read
// barrier (raft's ReadIndex, meta.RequestRead): a read requested after
// the request arrived, confirmed by a quorum, and applied here up to its
// index. The decision is then taken again (awaited, leaderSettles) from
// the state at that point, which holds everything committed before the
// request arrived. A client's request that finds its topic and pinned
// partition here needs none: it is never held. Another node's question
// always is, whatever this replica holds: the asker draws its 400s from
// the count in the answer, and a deposed leader's count may be stale. A
// request whose barrier does not come by its deadline is answered 503,
// as every unsettled held request is.
//
// The reads are shared, one at a time: the node asks for one only while
// none is outstanding, covering every request held until then
// (Node.heldSeq), and only while some held request is not covered yet;
// the requests held while a read is out are covered by the next, asked
// once it is confirmed (serveHeld wants it). A request so waits at most
// two quorum round trips, and a flood of requests for unknown topics
// costs one read (one heartbeat to each follower) per round trip, not
// one per Ready: asking one per Ready reached meta.ReadRequestsMax on a
// healthy leader whose followers answered a little later than it took
// Readys, and refused requests 503 that a quorum would have confirmed
// within milliseconds (diff review).

// readBarrier is the node's side of the leader's read requests. Its
// numbers are held requests' seq (Node.heldSeq).
type readBarrier struct {
	// wanted is set when a held request the leader is to answer is not
	// covered by a read requested since it arrived (its seq is above
	// requested): the next Ready asks for one (requestRead), which
	// clears it.
	wanted bool
	// requested is the highest seq covered by a read requested: every
	// held request numbered up to it arrived before some read was
	// requested. It only increases, but when the reads requested were
	// lost with the leadership (passReads): it then falls back to the
	// reads confirmed. Invariant: passed <= requested <= Node.heldSeq.
	requested uint64
	// latest is the confirmed read covering the most held requests, if
	// this replica had not applied up to its index when it came (covers
	// 0: none). A later confirmation covering more replaces it, which
	// only delays the requests it covered until the later read's index
	// is applied.
	latest confirmedRead
	// passed: every held request numbered up to it had a read requested
	// since it arrived confirmed, and this replica applied up to the
	// read's index. Only increases.
	passed uint64
	// fresh is set when a confirmation came in the metastore Ready just
	// taken: its Advance looks at the held requests again.
	fresh bool
	// confirmedTotal counts the confirmations raft handed back since the
	// node started (Stats.MetaReadsConfirmed); it only increases.
	confirmedTotal uint64
}

// confirmedRead is a read raft confirmed: it covers the held requests
// numbered up to covers, once this replica applied up to index.
type confirmedRead struct {
	covers uint64
	index  uint64
}

// wantRead has the next Ready ask for a read, for a held request that
// the leader is to answer and no read requested covers.
func (n *Node) wantRead() { n.leaderReads.wanted = true }

// requestRead asks the metastore for the read wanted, covering every
// request held so far, unless a read is outstanding: serveHeld wants one
// again once that one is confirmed (or lost with the leadership). One at
// a time, it never meets meta.ReadRequestsMax, the metastore's backstop.
// A replica that does not lead, or whose leadership has not passed its
// barrier, asks nothing: its held requests wait, and serveHeld wants a
// read again once it is past the barrier.
func (n *Node) requestRead() {
	if !n.leaderReads.wanted {
		return
	}
	n.leaderReads.wanted = false
	covers := n.heldSeq
	if covers <= n.leaderReads.requested || n.meta.ReadsOutstanding() > 0 {
		return
	}
	err := n.meta.RequestRead(covers)
	if errors.Is(err, meta.ErrReadsFull) {
		invariant.Broken("node: the metastore holds %d reads outstanding, though the node asks one at a time", n.meta.ReadsOutstanding())
	}
	if err == nil {
		n.leaderReads.requested = covers
	}
}

// confirmReads takes the reads raft confirmed (a metastore Ready's
// Reads); Advance looks at the held requests again (fresh).
func (n *Node) confirmReads(confirmed []meta.ReadConfirmed) {
	n.leaderReads.confirmedTotal += uint64(len(confirmed))
	for _, c := range confirmed {
		if c.Tag > n.leaderReads.latest.covers && c.Tag > n.leaderReads.passed {
			n.leaderReads.latest = confirmedRead{covers: c.Tag, index: c.Index}
			n.leaderReads.requested = max(n.leaderReads.requested, c.Tag) // a read confirmed after requested fell back
			n.leaderReads.fresh = true
		}
	}
}

// passReads moves passed over the latest confirmed read once this
// replica applied up to its index, and lets requested fall back to what
// was confirmed when the metastore holds no read outstanding any more
// (the leadership they were asked in ended): the requests they were to
// cover are then asked for again.
func (n *Node) passReads() {
	r := &n.leaderReads
	if r.latest.covers > r.passed && n.meta.AppliedIndex() >= r.latest.index {
		r.passed, r.latest = r.latest.covers, confirmedRead{}
	}
	confirmed := max(r.passed, r.latest.covers)
	if r.requested > confirmed && n.meta.ReadsOutstanding() == 0 {
		r.requested = confirmed
	}
}

// barrierPassed reports whether a read requested since the held request
// arrived was confirmed and applied here.
func (n *Node) barrierPassed(h heldRequest) bool { return h.seq <= n.leaderReads.passed }
