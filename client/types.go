package client

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Topic is the topic object (docs/api.md#topic-object), plus the
// partition_stats of docs/api.md#describe-a-topic when it comes from GetTopic.
type Topic struct {
	Name                      string `json:"name"`
	Partitions                int    `json:"partitions"`
	RetentionMs               int64  `json:"retention_ms"`
	VisibilityTimeoutMs       int64  `json:"visibility_timeout_ms"`
	MaxInFlightPerPartition   int    `json:"max_in_flight_per_partition"`
	MaxAckedAheadPerPartition int    `json:"max_acked_ahead_per_partition"`
	// CreatedAt is Unix seconds.
	CreatedAt int64  `json:"created_at"`
	Owner     string `json:"owner,omitempty"`
	// SchemaVersion is the latest version of the topic's JSON Schema; 0
	// for a topic without one (docs/api.md#topic-schemas).
	SchemaVersion int `json:"schema_version,omitempty"`
	// Role is "standalone", "parent" or "child"; empty from servers that
	// omit it.
	Role          string   `json:"role,omitempty"`
	Children      []string `json:"children,omitempty"`
	Parent        string   `json:"parent,omitempty"`
	AttachEpoch   string   `json:"attach_epoch,omitempty"`
	FanoutDelayMs int64    `json:"fanout_delay_ms,omitempty"`
	// MaxDeliveries and DeadLetterTopic are the dead-letter setting
	// (docs/api.md#dead-letters); zero when off.
	MaxDeliveries   int    `json:"max_deliveries,omitempty"`
	DeadLetterTopic string `json:"dead_letter_topic,omitempty"`
	// PartitionStats is filled by GetTopic only (one entry when a partition
	// was asked for).
	PartitionStats []PartitionStats `json:"partition_stats,omitempty"`
}

// PartitionStats describes one partition (docs/api.md#describe-a-topic).
type PartitionStats struct {
	Index         int   `json:"index"`
	Segments      int   `json:"segments"`
	OldestOffset  int64 `json:"oldest_offset"`
	NextOffset    int64 `json:"next_offset"`
	HighWatermark int64 `json:"high_watermark"`
	SizeBytes     int64 `json:"size_bytes"`
	// OldestSegmentAt is Unix seconds; 0 when the server omitted it.
	OldestSegmentAt int64  `json:"oldest_segment_at,omitempty"`
	OwnerNode       string `json:"owner_node"`
	// Available is false when the partition's owner is down and the other
	// counters are unknown. Nil means the server did not say (the
	// reference server never does), which IsAvailable reads as available.
	Available *bool `json:"available,omitempty"`
	// CommittedOffset and InFlight are the partition's consumer progress:
	// its committed offset and the records leased now. Nil when the server
	// did not say (the reference server never does).
	CommittedOffset *uint64 `json:"committed_offset,omitempty"`
	InFlight        *int    `json:"in_flight,omitempty"`
}

// IsAvailable reports whether the partition's stats are live.
func (s PartitionStats) IsAvailable() bool {
	return s.Available == nil || *s.Available
}

// TopicPage is one page of ListTopics (docs/api.md#list-topics).
type TopicPage struct {
	Topics []Topic `json:"topics"`
	// NextPageToken continues the listing; "" means the listing is done.
	NextPageToken string `json:"next_page_token"`
}

// CreateTopicRequest is the body of POST /v1/topics
// (docs/api.md#create-a-topic). Zero fields are omitted so the server applies
// its defaults.
type CreateTopicRequest struct {
	Name                      string          `json:"name"`
	Partitions                int             `json:"partitions,omitempty"`
	RetentionMs               int64           `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs       int64           `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition   int             `json:"max_in_flight_per_partition,omitempty"`
	MaxAckedAheadPerPartition int             `json:"max_acked_ahead_per_partition,omitempty"`
	Schema                    json.RawMessage `json:"schema,omitempty"`
	Parent                    string          `json:"parent,omitempty"`
	FanoutDelayMs             int64           `json:"fanout_delay_ms,omitempty"`
	MaxDeliveries             int             `json:"max_deliveries,omitempty"`
	DeadLetterTopic           string          `json:"dead_letter_topic,omitempty"`
}

// AlterTopicRequest is the body of PATCH /v1/topics/{t}
// (docs/api.md#alter-a-topic). Only non-nil fields are sent.
type AlterTopicRequest struct {
	Partitions                *int            `json:"partitions,omitempty"`
	RetentionMs               *int64          `json:"retention_ms,omitempty"`
	VisibilityTimeoutMs       *int64          `json:"visibility_timeout_ms,omitempty"`
	MaxInFlightPerPartition   *int            `json:"max_in_flight_per_partition,omitempty"`
	MaxAckedAheadPerPartition *int            `json:"max_acked_ahead_per_partition,omitempty"`
	Schema                    json.RawMessage `json:"schema,omitempty"`
	MaxDeliveries             *int            `json:"max_deliveries,omitempty"`
	// DeadLetterTopic set to "" turns dead letters off (with
	// MaxDeliveries 0).
	DeadLetterTopic *string `json:"dead_letter_topic,omitempty"`
}

// IsEmpty reports whether the request would change nothing.
func (r AlterTopicRequest) IsEmpty() bool {
	return r.Partitions == nil && r.RetentionMs == nil && r.VisibilityTimeoutMs == nil &&
		r.MaxInFlightPerPartition == nil && r.MaxAckedAheadPerPartition == nil && len(r.Schema) == 0 &&
		r.MaxDeliveries == nil && r.DeadLetterTopic == nil
}

// TopicSchema is one version of a topic's JSON Schema (GET
// /v1/topics/{t}/schema, docs/api.md#topic-schemas).
type TopicSchema struct {
	Version int             `json:"version"`
	Schema  json.RawMessage `json:"schema"`
}

// Placement is where a produced record landed (docs/api.md#produce).
type Placement struct {
	Partition int   `json:"partition"`
	Offset    int64 `json:"offset"`
}

// BatchResult is the 202 body of a batch produce (docs/api.md#batch-produce).
type BatchResult struct {
	Accepted int `json:"accepted"`
	// Records lists the placements in request order; empty if the server
	// does not report them.
	Records []Placement `json:"records,omitempty"`
}

// Message is one consumed or replayed record (docs/api.md#consumed-message).
type Message struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	Offset    int64  `json:"offset"`
	// Key is empty when the record was produced without one.
	Key string `json:"key,omitempty"`
	// RawPayload is the "payload" value exactly as the server sent it: the
	// record itself when it is JSON, a JSON string for other UTF-8 text, a
	// base64 JSON string when PayloadEncoding is "base64". Use Payload for
	// the record's bytes.
	RawPayload      json.RawMessage `json:"payload"`
	PayloadEncoding string          `json:"payload_encoding,omitempty"`
	// Timestamp is the commit time in Unix seconds; TimestampMs the same in
	// milliseconds (0 from servers that do not send it).
	Timestamp   int64 `json:"timestamp"`
	TimestampMs int64 `json:"timestamp_ms,omitempty"`
	// ReceiptHandle is set in queue mode only; replay reads have none.
	ReceiptHandle string `json:"receipt_handle,omitempty"`
	// DeliveryCount is 1 on first delivery; 0 from servers without it.
	DeliveryCount int `json:"delivery_count,omitempty"`
	// DeadLetter, on a message of a dead-letter topic, names the record
	// it was copied from (docs/api.md#dead-letters); nil otherwise.
	DeadLetter *DeadLetter `json:"dead_letter,omitempty"`
}

// DeadLetter names where a dead letter came from: its source topic,
// partition and offset, and how many deliveries it had there.
type DeadLetter struct {
	Topic         string `json:"topic"`
	Partition     int    `json:"partition"`
	Offset        int64  `json:"offset"`
	DeliveryCount int    `json:"delivery_count"`
}

// payloadEncodingBase64 marks a binary payload carried as base64.
const payloadEncodingBase64 = "base64"

// ErrPayloadEncoding is returned by Payload for an encoding it does not know.
var ErrPayloadEncoding = errors.New("unknown payload_encoding")

// Payload returns the record's bytes: base64-decoded when PayloadEncoding
// is "base64", unquoted when the payload is a JSON string, and the raw JSON
// otherwise.
func (m Message) Payload() ([]byte, error) {
	switch m.PayloadEncoding {
	case payloadEncodingBase64:
		var encoded string
		if err := json.Unmarshal(m.RawPayload, &encoded); err != nil {
			return nil, fmt.Errorf("base64 payload is not a JSON string: %w", err)
		}
		return base64.StdEncoding.DecodeString(encoded)
	case "":
		return m.textPayload()
	default:
		return nil, fmt.Errorf("%w: %q", ErrPayloadEncoding, m.PayloadEncoding)
	}
}

func (m Message) textPayload() ([]byte, error) {
	if len(m.RawPayload) > 0 && m.RawPayload[0] == '"' {
		var text string
		if err := json.Unmarshal(m.RawPayload, &text); err != nil {
			return nil, fmt.Errorf("payload string: %w", err)
		}
		return []byte(text), nil
	}
	return []byte(m.RawPayload), nil
}

// IsBinary reports whether the payload travelled base64-encoded.
func (m Message) IsBinary() bool { return m.PayloadEncoding == payloadEncodingBase64 }

// Time returns the commit time, to the millisecond when the server sends
// timestamp_ms and to the second otherwise.
func (m Message) Time() time.Time {
	if m.TimestampMs != 0 {
		return time.UnixMilli(m.TimestampMs)
	}
	return time.Unix(m.Timestamp, 0)
}

// AckResult is one entry of a batch ack reply (docs/api.md#batch-ack).
type AckResult struct {
	ReceiptHandle string `json:"receipt_handle"`
	// Status is 204 on success, else the status a single ack would get.
	Status int `json:"status"`
	// Error is the message of a failed entry, if the server gives one.
	Error string `json:"error,omitempty"`
}

// Member is one entry of GET /v1/cluster/members (docs/api.md#cluster).
type Member struct {
	ID              string `json:"id"`
	Addr            string `json:"addr"`
	Status          string `json:"status"`
	Draining        bool   `json:"draining"`
	Voter           bool   `json:"voter"`
	DiskLow         bool   `json:"disk_low"`
	OwnedPartitions int    `json:"owned_partitions"`
	OutboundMoves   int    `json:"outbound_moves"`
	InboundMoves    int    `json:"inbound_moves"`
}

// Move is one entry of GET /v1/cluster/moves (docs/api.md#cluster).
type Move struct {
	Topic     string `json:"topic"`
	Partition int    `json:"partition"`
	From      string `json:"from"`
	To        string `json:"to"`
	// Phase is catchup, handoff, finalize or flip; empty from the reference.
	Phase       string `json:"phase,omitempty"`
	BytesCopied int64  `json:"bytes_copied,omitempty"`
	BytesTotal  int64  `json:"bytes_total,omitempty"`
	StartedAtMs int64  `json:"started_at_ms,omitempty"`
}

// Health is the body of /healthz and /readyz.
type Health struct {
	Status string `json:"status"`
}

// Grant is one permission of a user (docs/api.md#authentication).
type Grant struct {
	// Action is produce, consume, create or admin.
	Action string `json:"action"`
	// Patterns are topic names or prefixes ending in "*"; none for admin.
	Patterns []string `json:"patterns,omitempty"`
}

// User is a user as the users API returns it (docs/api.md#users).
type User struct {
	Username    string  `json:"username"`
	Grants      []Grant `json:"grants"`
	Root        bool    `json:"root"`
	CreatedAtMs int64   `json:"created_at_ms"`
	UpdatedAtMs int64   `json:"updated_at_ms"`
}

// CreateUserRequest is the body of POST /v1/users.
type CreateUserRequest struct {
	Username string  `json:"username"`
	Password string  `json:"password"`
	Grants   []Grant `json:"grants"`
}
