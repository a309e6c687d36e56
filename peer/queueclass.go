package peer

import (
	"sync/atomic"

	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// queueClass is the share of a peer's send queue an envelope counts in.
// Each class has its own bounds, in envelopes and in payload bytes, so
// that what clients send cannot crowd out what the cluster needs to stay
// a cluster. The envelopes of both classes share one FIFO channel, so the
// order of delivery is the order of Send whatever the class.
type queueClass int

const (
	// classData is client traffic: forwarded requests and their answers
	// (records, move chunks, the lists answers carry), cancels of
	// forwarded polls, and the subscriptions and notifications of long
	// polls. Its volume follows the clients', and it is bounded by
	// Config.SendQueueMax and Config.SendQueueBytesMax; its loss costs a
	// client a retry.
	classData queueClass = iota
	// classControl is the cluster's own traffic: the metastore's Raft
	// messages, membership heartbeats, joins and their answers, and the
	// notice of a completed decommission. Its volume follows the cluster's
	// size and Raft's pace, not the clients', and it is bounded by
	// controlQueueMax and controlQueueBytesMax.
	classControl
	// queueClasses is the number of classes.
	queueClasses
)

// String names the class as the metrics label it: "data" or "control".
func (c queueClass) String() string {
	if c == classControl {
		return "control"
	}
	return "data"
}

// classOf decides an envelope's class from its message's type: a type a
// client can make a node send in numbers is data. So is a Raft MsgProp: a
// follower forwards one to the leader for each metadata change a client
// asks of it (a topic, a user, a schema), unpaced by Raft's flow control;
// a dropped one is a proposal that times out and is retried, while the
// leader's appends, heartbeats and votes stay control.
func classOf(env msg.Envelope) queueClass {
	switch message := env.Message.(type) {
	case msg.RaftMessage:
		if message.Message != nil && message.Message.GetType() == raftpb.MsgProp {
			return classData
		}
		return classControl
	case msg.Heartbeat, msg.Join, msg.JoinRelay, msg.JoinAccepted, msg.Retired:
		return classControl
	}
	return classData
}

// classBounds are the bounds of one class of a peer's queue.
type classBounds struct {
	envelopes int64
	bytes     int64
}

// classQueue counts what one class holds in a peer's queue: envelopes
// Send admitted and the writer has not settled yet (encoded or dropped),
// and their payload bytes (msg.PayloadBytes). An envelope the writer took
// from the channel and carries to its next connection still counts.
type classQueue struct {
	envelopes atomic.Int64
	bytes     atomic.Int64
}

// admit counts an envelope of size payload bytes in, and reports true, if
// the class stays within bounds. A single envelope larger than the byte
// bound is admitted when the class holds no other bytes, and one without
// payload is bounded by the count alone: a Raft heartbeat is not dropped
// because a snapshot waits before it. Otherwise admit counts nothing and
// reports false.
func (q *classQueue) admit(size int64, bounds classBounds) bool {
	if q.envelopes.Add(1) > bounds.envelopes {
		q.envelopes.Add(-1)
		return false
	}
	if queued := q.bytes.Add(size); size > 0 && queued > bounds.bytes && queued > size {
		q.bytes.Add(-size)
		q.envelopes.Add(-1)
		return false
	}
	return true
}

// settle counts an envelope of size payload bytes out.
func (q *classQueue) settle(size int64) {
	q.bytes.Add(-size)
	q.envelopes.Add(-1)
}
