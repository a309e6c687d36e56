package msg

// Reply answers the request with the same ID. Exactly one of Err and
// Result is meaningful: Err != nil means the request failed (an *Error);
// otherwise Result holds the request's result type (nil for the requests
// that have none):
//
//	CreateTopic, AlterTopic   -> TopicInfo
//	ListTopics                -> TopicPage
//	GetTopic                  -> TopicDetail
//	DeleteTopic, DetachChild  -> nil
//	AttachChild               -> TopicInfo (the parent)
//	ListChildren              -> ChildrenResult
//	Produce                   -> ProduceResult
//	Consume                   -> ConsumeResult
//	Replay                    -> ReplayResult
//	Ack                       -> AckResult
//	ListMembers               -> MembersResult
//	ListMoves                 -> MovesResult
//	Decommission              -> nil
//	MoveStatus, MoveFreeze    -> MoveSourceState
//	MoveRead                  -> MoveChunk
//	MoveSweepCheck            -> MoveVerdict
type Reply struct {
	// ID is the ID of the request answered.
	ID RequestID
	// Err is nil on success, else the failure, an *Error for the client.
	Err error
	// Result is nil when Err is set, and for a request without a result.
	Result Result
}

// Result is the result of a successful request, carried in Reply.Result.
// The set is closed: the result types of this package, and nothing else.
type Result interface{ isResult() }

func (TopicInfo) isResult()       {}
func (TopicPage) isResult()       {}
func (TopicDetail) isResult()     {}
func (ProduceResult) isResult()   {}
func (ConsumeResult) isResult()   {}
func (ReplayResult) isResult()    {}
func (AckResult) isResult()       {}
func (MembersResult) isResult()   {}
func (MovesResult) isResult()     {}
func (MoveSourceState) isResult() {}
func (MoveChunk) isResult()       {}
func (MoveVerdict) isResult()     {}
func (ChildrenResult) isResult()  {}

// TopicInfo is a topic's configuration (docs/api.md#topic-object).
type TopicInfo struct {
	Name                string `json:"name"`
	Partitions          int    `json:"partitions"`
	RetentionMs         int64  `json:"retention_ms"`
	VisibilityTimeoutMs int64  `json:"visibility_timeout_ms"`
	InFlightMax         int    `json:"max_in_flight_per_partition"`
	AckedAheadMax       int    `json:"max_acked_ahead_per_partition"`
	CreatedAt           int64  `json:"created_at"` // Unix seconds
	Owner               string `json:"owner,omitempty"`
	// SchemaVersion is the latest version of the topic's JSON Schema, 0
	// (left out) for a topic without one (docs/api.md#topic-schemas).
	SchemaVersion int `json:"schema_version,omitempty"`
	// MaxDeliveries and DeadLetterTopic are the dead-letter setting
	// (docs/api.md#dead-letters); left out when off.
	MaxDeliveries   int    `json:"max_deliveries,omitempty"`
	DeadLetterTopic string `json:"dead_letter_topic,omitempty"`
	// Role is "parent" or "child" for a topic in a fan-out link, empty
	// (left out) for a standalone topic.
	Role string `json:"role,omitempty"`
	// Children names a parent's children, sorted.
	Children []string `json:"children,omitempty"`
	// Parent, AttachEpoch (16 hex digits) and FanoutDelayMs describe a
	// child's link; empty or 0 otherwise.
	Parent        string `json:"parent,omitempty"`
	AttachEpoch   string `json:"attach_epoch,omitempty"`
	FanoutDelayMs int64  `json:"fanout_delay_ms,omitempty"`
}

// ChildLag is one fan-out child with how far it is behind its parent.
type ChildLag struct {
	Name    string `json:"name"`
	DelayMs int64  `json:"delay_ms"`
	// LagMessages is the sum over the parent's partitions of the parent's
	// high watermark minus the child's cursor, over the cursors that
	// reported.
	LagMessages uint64 `json:"lag_messages"`
	// LagComplete is false when some partition's cursor did not report
	// (its owner was unreachable): LagMessages is then a lower bound.
	LagComplete bool `json:"lag_complete"`
}

// ChildrenResult lists a parent's children, sorted by name.
type ChildrenResult struct {
	Parent   string     `json:"parent"`
	Children []ChildLag `json:"children"`
}

// TopicPage is one page of a topic listing.
type TopicPage struct {
	Topics        []TopicInfo `json:"topics"`
	NextPageToken string      `json:"next_page_token"`
}

// PartitionStats describes one partition (docs/api.md#describe-a-topic).
type PartitionStats struct {
	Index           int    `json:"index"`
	Segments        int    `json:"segments"`
	OldestOffset    uint64 `json:"oldest_offset"`
	NextOffset      uint64 `json:"next_offset"`
	HighWatermark   uint64 `json:"high_watermark"`
	SizeBytes       int64  `json:"size_bytes"`
	OldestSegmentAt int64  `json:"oldest_segment_at,omitempty"` // Unix seconds
	OwnerNode       string `json:"owner_node"`
	Available       bool   `json:"available"`
	Committed       uint64 `json:"committed_offset"`
	InFlight        int    `json:"in_flight"`
}

// TopicDetail is a topic with its partition stats.
type TopicDetail struct {
	TopicInfo
	PartitionStats []PartitionStats `json:"partition_stats"`
}

// Placement says where a produced record landed (docs/api.md#produce).
type Placement struct {
	Partition int    `json:"partition"`
	Offset    uint64 `json:"offset"`
}

// ProduceResult lists the placement of every record, in request order.
type ProduceResult struct {
	Records []Placement
	Batch   bool
}

// Message is one consumed or replayed record. Key and Payload are the
// bytes as produced; httpapi chooses their JSON encoding.
type Message struct {
	Topic         string
	Partition     int
	Offset        uint64
	Key           []byte // empty: no key
	Payload       []byte
	TimestampMs   int64  // commit time at the owner
	ReceiptHandle string // empty for replay
	DeliveryCount uint32 // 0 for replay
	// DeadLetter, set on a record of a dead-letter topic, says where the
	// record came from (docs/api.md#dead-letters); nil otherwise.
	DeadLetter *DeadLetterOrigin
}

// DeadLetterOrigin names the record a dead letter was copied from: its
// source topic, partition and offset, and the deliveries it had there.
type DeadLetterOrigin struct {
	Topic         string
	Partition     int
	Offset        uint64
	DeliveryCount uint32
}

// ConsumeResult holds the reserved messages (none when the wait expired).
type ConsumeResult struct {
	Messages []Message
	Batch    bool
}

// ReplayResult holds the record read, or nil when the offset is at or
// past the high-watermark.
type ReplayResult struct {
	Message *Message
}

// AckItemResult is the outcome of one handle of an ack request: Err nil
// for success, else an *Error.
type AckItemResult struct {
	Handle string
	Err    error
}

// AckResult lists the outcome per handle, in request order.
type AckResult struct {
	Results []AckItemResult
	Batch   bool
}

// Member is one node of the cluster (docs/api.md#cluster).
type Member struct {
	ID       string `json:"id"`
	Addr     string `json:"addr"`
	Status   string `json:"status"` // "alive" or "dead"
	Draining bool   `json:"draining"`
	// Voter: the member votes in the metastore's group (a decommissioned
	// member leaves the voters once it owns nothing).
	Voter bool `json:"voter"`
	// DiskLow: the member's last heartbeat said its free disk space was
	// under its reserve (it refuses writes and takes no partitions).
	DiskLow         bool `json:"disk_low"`
	OwnedPartitions int  `json:"owned_partitions"`
	OutboundMoves   int  `json:"outbound_moves"`
	// InboundMoves counts the partitions moving to the member: a draining
	// member that is the target of a move it may still finish (from a
	// dead owner, which the planner keeps) is not drained yet.
	InboundMoves int `json:"inbound_moves"`
}

// MembersResult lists the members sorted by id.
type MembersResult struct {
	Members []Member `json:"members"`
}

// Move is one partition move in flight (docs/api.md#cluster).
type Move struct {
	Topic       string `json:"topic"`
	Partition   int    `json:"partition"`
	From        string `json:"from"`
	To          string `json:"to"`
	Phase       string `json:"phase"`
	BytesCopied int64  `json:"bytes_copied"`
	BytesTotal  int64  `json:"bytes_total"`
	StartedAtMs int64  `json:"started_at_ms"`
}

// MovesResult lists the moves in flight, sorted by topic and partition.
type MovesResult struct {
	Moves []Move `json:"moves"`
}
