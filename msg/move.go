package msg

// Requests and results of the move protocol. They travel only inside
// ForwardRequest and ForwardReply between nodes (httpapi never decodes
// them); a client's Handle of one is refused. Decommission is the one
// client request among them (POST|DELETE /v1/cluster/members/{id}/decommission).

// MoveOf names a move in the requests of the move protocol: the
// partition, the move's target and start (its SetTarget's time), and the
// creation of the topic it is of. A source answers a request only once
// its own replica shows that move, and Conflict until then: one behind may
// still list a deleted creation of the topic as owned here, and what it
// holds under the partition's directory is then that creation's, which
// the move must not copy; a target and a start alone may repeat across two
// creations of a name.
type MoveOf struct {
	Topic            string
	Partition        int
	Target           string
	MoveStartedAtMs  int64
	TopicIncarnation uint64
	TopicCreatedAtMs int64
}

// MoveStatus asks a partition's owner what a move must copy.
// Result: MoveSourceState, whose Frozen is set only when the source is
// frozen for the asking move. A source may be frozen for another move
// (one its replica has not yet seen aborted, after a restart) and take
// writes again once it has; a destination that took that for its own
// final state would promote a copy missing the records acknowledged after
// it (seed 2698).
type MoveStatus struct {
	MoveOf
}

// MoveRead asks a partition's owner for the bytes of segment Base from
// Position on, at most the log's chunk size. Result: MoveChunk.
type MoveRead struct {
	MoveOf
	Base     uint64
	Position int64
}

// MoveFreeze asks a partition's owner to stop accepting writes (produce
// and commits) to the partition for the move, and to answer with its
// final state once every record it accepted is durable. The freeze ends
// when ownership changes, or when the source's abort of the stalled move
// applies. Result: MoveSourceState with Frozen set.
type MoveFreeze struct {
	MoveOf
}

// MoveSweepCheck asks the metastore leader whether the sender may delete
// its copy of a partition. Result: MoveVerdict.
type MoveSweepCheck struct {
	Topic     string
	Partition int
}

// Decommission starts (Cancel false) or cancels a member's drain.
// Result: nil.
type Decommission struct {
	ID     string
	Cancel bool
}

// MoveSegment is one segment a move copies: bytes [0, Size) of the
// segment starting at offset Base hold only durable frames; Sealed means
// Size will not grow.
type MoveSegment struct {
	Base   uint64
	Size   int64
	Sealed bool
}

// MoveSourceState is what a move copies from the source: its segments,
// HWM and committed consumer offset, and whether it is frozen for the
// move that asked (then the state is final: the source accepts nothing
// more until the move ends).
type MoveSourceState struct {
	Segments  []MoveSegment
	HWM       uint64
	Committed uint64
	Frozen    bool
	// NextUndelivered and Leases are the source's queue state above
	// Committed, sent only when Frozen (zero otherwise): no offset at or
	// above NextUndelivered was delivered, and Leases lists, by
	// increasing offset, every offset the queue knows above Committed
	// (at most MoveLeasesMax), so that the new owner carries on with the
	// same delivery counts and acks.
	NextUndelivered uint64
	Leases          []MoveLease
	// Cursors are the partition's fan-out cursors as its files hold them,
	// at most FanoutChildrenMax: the destination installs them with the
	// copy, so that the children's backlog survives the move.
	Cursors []FanoutCursor
	// CorruptCount is the exact number of offsets of the source's log
	// that media damage destroyed below its HWM (Read answers them as
	// corrupt), and CorruptOffsets the first of them in increasing order,
	// at most the source log's CorruptOffsetsReportedMax: the destination
	// accepts a copy with exactly this damage, as the records are lost
	// already (docs/architecture.md#moves).
	CorruptCount   uint64
	CorruptOffsets []uint64
}

// MoveLeasesMax bounds MoveSourceState.Leases: a partition's queue holds
// at most its in-flight and acked-ahead caps (each at most 1 << 20).
const MoveLeasesMax = 2 << 20

// MoveLease is one offset of a source's queue state: delivered and not
// yet acknowledged, with its delivery count (>= 1), or acknowledged ahead
// of the committed offset (DeliveryCount 0).
type MoveLease struct {
	Offset        uint64
	DeliveryCount uint32
	// ReturnedUnseen: the record's one reservation (DeliveryCount 1) was
	// handed back before any consumer saw it (AckReturn), so no consumer
	// has seen it yet: it must not count toward the topic's
	// max_deliveries at the new owner. Only with DeliveryCount 1.
	ReturnedUnseen bool
}

// FanoutCursor is where the copy of a parent partition into one child
// stands: the attach epoch, and the first parent offset not yet durable
// in the child.
type FanoutCursor struct {
	Child      string
	Epoch      uint64
	NextOffset uint64
}

// MoveChunk is a piece of a segment.
type MoveChunk struct {
	Data []byte
}

// MoveVerdict is the leader's view of a partition's placement, and its
// applied index: a node deletes its copy only if its own replica has
// applied at least that far and agrees.
type MoveVerdict struct {
	Owner        string
	Target       string
	AppliedIndex uint64
}

func (MoveStatus) isRequest()     {}
func (MoveRead) isRequest()       {}
func (MoveFreeze) isRequest()     {}
func (MoveSweepCheck) isRequest() {}
func (Decommission) isRequest()   {}
