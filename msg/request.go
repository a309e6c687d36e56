package msg

// RequestID identifies a client request. The driver assigns it; it is
// unique among the requests of one node instance.
type RequestID uint64

// Request is one decoded client request. The set of request types is
// closed: the types below and the move protocol's (move.go), and nothing
// else.
type Request interface{ isRequest() }

// PartitionNone marks an optional partition that was not given.
const PartitionNone = -1

// CreateTopic creates a topic. Zero numeric fields take the node's
// defaults; negative ones are invalid.
type CreateTopic struct {
	Name                string
	Partitions          int
	RetentionMs         int64
	VisibilityTimeoutMs int64
	InFlightMax         int // max_in_flight_per_partition
	AckedAheadMax       int // max_acked_ahead_per_partition
	// Schema is the topic's JSON Schema (version 1); empty for none. The
	// HTTP layer compiled it; the node checks only its size and shape.
	Schema []byte
	// CreatedBy is the authenticated user asking, who becomes the topic's
	// owner; empty without authentication.
	CreatedBy string
	// CreatorCreatedAtMs is CreatedBy's creation time as the receiving
	// node authenticated it (0 without authentication): a create that
	// applies after that user was deleted, and perhaps created again by
	// an admin for someone else, is refused instead of giving the topic
	// to the namesake.
	CreatorCreatedAtMs int64
	// MaxDeliveries (0: off, at most MaxDeliveriesMax) and
	// DeadLetterTopic (an existing other topic) are the dead-letter
	// setting (docs/api.md#dead-letters).
	MaxDeliveries   int
	DeadLetterTopic string
	// Parent, when set, makes the new topic a fan-out child of that topic
	// (docs/api.md#fan-out-children); Partitions 0 then takes the parent's
	// count. FanoutDelayMs (needs Parent) makes it a delay child.
	Parent        string
	FanoutDelayMs int64
	// ExpectedOwner is the user the HTTP layer checked owns Parent (empty
	// for an admin, or with security off): the create applies only while
	// Parent is still that user's (meta's owner guard).
	ExpectedOwner string
}

// ListTopics lists topics by name, a page at a time (keyset pagination:
// PageToken is the last name of the previous page, "" for the first).
type ListTopics struct {
	Limit     int // 1..TopicsPageMax; 0 means the default page size
	PageToken string
}

// GetTopic describes a topic with its partition stats; Partition limits
// the stats to one partition (PartitionNone for all).
type GetTopic struct {
	Name      string
	Partition int
	// Confirm marks a node's question to the metastore leader about a
	// topic it holds requests for (they name it, or pin a partition of
	// it, past what that node applied): only the leader answers it (any
	// other replica 503), past a read barrier (a quorum confirmed it
	// still led after the question came) and once its log holds no
	// create or growth of the topic past what it applied, or 503 when
	// that takes longer than a forwarded request waits, so that its
	// answer is never an older count than one already committed; and
	// with the topic's info alone, no partition stats. Only nodes set
	// it; a client's description never does.
	Confirm bool
}

// AlterTopic changes a topic; nil fields are left as they are. A zero
// value restores the node default. At least one field must be set.
type AlterTopic struct {
	Name                string
	Partitions          *int // may only grow
	RetentionMs         *int64
	VisibilityTimeoutMs *int64
	InFlightMax         *int
	AckedAheadMax       *int
	// Schema, when set, becomes the topic's next schema version, if it
	// only adds to the latest (meta.CheckSchemaEvolution).
	Schema []byte
	// MaxDeliveries and DeadLetterTopic, when set, change the dead-letter
	// setting; an empty DeadLetterTopic removes it.
	MaxDeliveries   *int
	DeadLetterTopic *string
	// ExpectedOwner is the user the HTTP layer checked owns the topic
	// (empty for an admin, or with security off): the change applies only
	// while the topic is still that user's (meta's owner guard).
	ExpectedOwner string
}

// DeleteTopic deletes a topic and all of its data.
type DeleteTopic struct {
	Name string
	// ExpectedOwner is the user the HTTP layer checked owns the topic
	// (empty for an admin, or with security off): the change applies only
	// while the topic is still that user's (meta's owner guard).
	ExpectedOwner string
}

// AttachChild makes Child a fan-out child of Parent (a delay child when
// DelayMs > 0). Result: TopicInfo (the parent's).
type AttachChild struct {
	Parent  string
	Child   string
	DelayMs int64
	// ExpectedOwner is the user the HTTP layer checked owns both topics
	// (empty for an admin, or with security off): the attach applies only
	// while both are still that user's (meta's owner guard).
	ExpectedOwner string
}

// DetachChild removes the fan-out link from Parent to Child.
type DetachChild struct {
	Parent string
	Child  string
	// ExpectedOwner is the user the HTTP layer checked owns one of the
	// topics (empty for an admin, or with security off): the detach
	// applies only while one of them is still that user's.
	ExpectedOwner string
}

// ListChildren lists a parent's fan-out children with their lag. A node
// forwards it to the other owners of the parent's partitions to gather
// their cursors. Result: ChildrenResult.
type ListChildren struct {
	Parent string
}

// ProduceRecord is one record of a produce request.
type ProduceRecord struct {
	Key       []byte // empty: the record has no key
	Partition int    // PartitionNone: chosen by key hash, else round-robin
	Payload   []byte
	// Origin is set only on a dead letter the node writes itself (never
	// decoded from a client): the record it copies.
	Origin *DeadLetterOrigin
}

// Produce appends records to a topic. The reply comes only after every
// record is durable. Batch selects the batch reply shape
// (docs/api.md#batch-produce).
type Produce struct {
	Topic   string
	Records []ProduceRecord
	Batch   bool
	// SchemaID is the id of the schema version (meta.SchemaVersion.ID)
	// every record was validated against, 0 for none. The node that
	// receives the request from a client refuses it (ErrSchemaChanged)
	// unless it is the id of the topic's latest applied version (or 0 for
	// a topic without a schema). The parts it forwards carry it, and
	// their owner refuses a client's part (no FanoutEpoch, no dead-letter
	// Origin) validated against another version than its own latest: a
	// node that lags on the schema, or on the topic's re-creation with
	// one, does not write records the owner's schema never saw.
	SchemaID uint64
	// TopicIncarnation and TopicCreatedAtMs, on a part a node forwards or
	// serves internally, are the identity of the topic its records were
	// placed for (meta.TopicRecord's Identity); zero on a client's
	// request. The owner refuses a part placed for another topic of the
	// name (deleted and created again since), retryably: written, its
	// records would enter a topic they were not produced to.
	TopicIncarnation uint64
	TopicCreatedAtMs int64
	// FanoutEpoch is set on the records a fan-out cursor copies into a
	// child: the attach epoch of the link it copies for (0 for a client's
	// produce and for dead letters). The owner of a delay child takes a
	// forwarded or internal part only at the child's current epoch, so a
	// client's produce or a dead letter forwarded by a node that had not
	// applied the attach yet is refused (409) as the receiving node would
	// have refused it, and nothing enters the child before it is due.
	// Parts of different epochs never share a forward.
	FanoutEpoch uint64
}

// Consume reserves up to Max records for the topic's visibility timeout.
// Max 0 asks for the single-message reply shape; 1..ConsumeBatchMax the
// batch shape (docs/api.md#batch-consume). WaitMs is the long-poll budget.
type Consume struct {
	Topic     string
	Partition int // PartitionNone: any partition
	Max       int
	WaitMs    int64
	// TopicIncarnation and TopicCreatedAtMs, on a consume a node
	// forwards, are the identity of the topic it routed the consume for
	// (meta.TopicRecord's Identity); zero on a client's request. The
	// owner refuses, retryably, one routed for another topic of the name
	// (deleted and created again, one of the two nodes not caught up):
	// served, it would hand out the other creation's records.
	TopicIncarnation uint64
	TopicCreatedAtMs int64
}

// Replay reads one record at an explicit offset, read-only.
type Replay struct {
	Topic     string
	Partition int
	Offset    uint64
	// TopicIncarnation and TopicCreatedAtMs: as for Consume.
	TopicIncarnation uint64
	TopicCreatedAtMs int64
}

// AckAction is what an ack request does to a reservation.
type AckAction int

const (
	// AckCommit acknowledges the record: it will not be delivered again.
	AckCommit AckAction = iota
	// AckExtend renews the reservation for a full visibility timeout.
	AckExtend
	// AckNack releases the reservation for immediate redelivery.
	AckNack
	// AckReturn hands back a reservation that never reached a consumer
	// (records a probe reserved for a poll answered meanwhile): released
	// for immediate redelivery, without counting as a delivery, so it
	// never exhausts a record. Only nodes send it to each other; the HTTP
	// API cannot ask for it.
	AckReturn
)

// Ack acknowledges, extends or releases reservations by receipt handle.
// Batch selects the batch reply shape (docs/api.md#batch-ack).
type Ack struct {
	Topic   string
	Handles []string
	Action  AckAction
	Batch   bool
}

// ListMembers lists the cluster members (one node, until the cluster).
type ListMembers struct{}

// ListMoves lists the partition moves in flight.
type ListMoves struct{}

func (CreateTopic) isRequest()  {}
func (ListTopics) isRequest()   {}
func (GetTopic) isRequest()     {}
func (AlterTopic) isRequest()   {}
func (DeleteTopic) isRequest()  {}
func (Produce) isRequest()      {}
func (Consume) isRequest()      {}
func (Replay) isRequest()       {}
func (Ack) isRequest()          {}
func (ListMembers) isRequest()  {}
func (ListMoves) isRequest()    {}
func (AttachChild) isRequest()  {}
func (DetachChild) isRequest()  {}
func (ListChildren) isRequest() {}
