package node

import "narad/msg"

// Observer receives the node's countable events: the host turns them into
// Prometheus metrics and log lines, the simulator into its report. Calls
// happen on the node's goroutine and must not call back into the node.
type Observer interface {
	Produced(topic string, partition int, records int, bytes int64)
	Consumed(topic string, partition int, records int, bytes int64)
	Acked(topic string, action msg.AckAction, outcome string)
	// ConsumeWait reports how a consume ended and how long it was parked:
	// hit (it delivered records, whether it waited or not), no_wait (it
	// did not wait and was answered at once with nothing), timeout (its
	// wait ran out with nothing), cancelled, moved, waiters_full.
	ConsumeWait(topic, outcome string, waitedMs int64)
	CorruptSkipped(topic string, partition int)
	ConsumerDropped(topic string, partition int, records uint64)
	RetentionDeleted(topic string, partition int, bytes int64, records uint64)
	// Event reports something an operator should see in the log:
	// recoveries with truncation or corruption, failed logs.
	Event(kind, detail string)
}

// NopObserver ignores every event.
type NopObserver struct{}

func (NopObserver) Produced(string, int, int, int64)            {}
func (NopObserver) Consumed(string, int, int, int64)            {}
func (NopObserver) Acked(string, msg.AckAction, string)         {}
func (NopObserver) ConsumeWait(string, string, int64)           {}
func (NopObserver) CorruptSkipped(string, int)                  {}
func (NopObserver) ConsumerDropped(string, int, uint64)         {}
func (NopObserver) RetentionDeleted(string, int, int64, uint64) {}
func (NopObserver) Event(string, string)                        {}

// MoveObserver receives the metrics of partition moves. An Observer that
// also implements it gets them; others do not.
type MoveObserver interface {
	// MoveEnded reports a move into this node that completed,
	// force_promoted or aborted, how long it ran and what it copied.
	MoveEnded(outcome string, durationMs, bytesCopied int64)
	// MoveCopied reports bytes copied by a move into this node.
	MoveCopied(bytes int64)
	// FreezeEnded reports how long this node kept a partition frozen for
	// a move.
	FreezeEnded(durationMs int64)
}

type nopMoveObserver struct{}

func (nopMoveObserver) MoveEnded(string, int64, int64) {}
func (nopMoveObserver) MoveCopied(int64)               {}
func (nopMoveObserver) FreezeEnded(int64)              {}

func moveObserverOf(observer Observer) MoveObserver {
	if m, ok := observer.(MoveObserver); ok {
		return m
	}
	return nopMoveObserver{}
}

// AppendObserver hears of every record appended here, before it is
// durable: the simulator's single-owner checker uses it. An Observer that
// also implements it gets the calls.
type AppendObserver interface {
	Appended(topic string, partition int, offset uint64)
}

type nopAppendObserver struct{}

func (nopAppendObserver) Appended(string, int, uint64) {}

func appendObserverOf(observer Observer) AppendObserver {
	if a, ok := observer.(AppendObserver); ok {
		return a
	}
	return nopAppendObserver{}
}

// DeadLetterObserver hears of every record acknowledged in its source
// because its copy is durable in the dead-letter topic at placement: the
// host counts them (narad_dead_letters_total), the simulator checks the
// copy was durable first. An Observer that also implements it gets the
// calls.
type DeadLetterObserver interface {
	DeadLettered(origin msg.DeadLetterOrigin, deadLetterTopic string, placement msg.Placement)
}

type nopDeadLetterObserver struct{}

func (nopDeadLetterObserver) DeadLettered(msg.DeadLetterOrigin, string, msg.Placement) {}

func deadLetterObserverOf(observer Observer) DeadLetterObserver {
	if d, ok := observer.(DeadLetterObserver); ok {
		return d
	}
	return nopDeadLetterObserver{}
}

// AckObserver hears of every ack applied here (not of a repeated ack of a
// record already acknowledged): the simulator's idempotent-ack checker
// uses it to know which acks landed even when their answer was lost. An
// Observer that also implements it gets the calls.
type AckObserver interface {
	AckApplied(topic string, partition int, offset uint64, handle string)
}

// TopicObserver hears that the node dropped a topic's local state because
// the applied metastore state deleted it (or re-created it under its
// name): the host forgets the topic's metric series then, so deleted
// topics leave none behind. An Observer that also implements it gets the
// calls.
type TopicObserver interface {
	TopicDropped(topic string)
}

type nopAckObserver struct{}

func (nopAckObserver) AckApplied(string, int, uint64, string) {}

func ackObserverOf(observer Observer) AckObserver {
	if a, ok := observer.(AckObserver); ok {
		return a
	}
	return nopAckObserver{}
}
