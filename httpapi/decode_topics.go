package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"

	"narad/meta"
	"narad/msg"
)

// createTopicBody is the body of POST /v1/topics (docs/api.md#create-a-topic).
type createTopicBody struct {
	Name                string          `json:"name"`
	Partitions          int             `json:"partitions"`
	RetentionMs         int64           `json:"retention_ms"`
	VisibilityTimeoutMs int64           `json:"visibility_timeout_ms"`
	InFlightMax         int             `json:"max_in_flight_per_partition"`
	AckedAheadMax       int             `json:"max_acked_ahead_per_partition"`
	Schema              json.RawMessage `json:"schema"`
	Parent              string          `json:"parent"`
	FanoutDelayMs       int64           `json:"fanout_delay_ms"`
	MaxDeliveries       int             `json:"max_deliveries"`
	DeadLetterTopic     string          `json:"dead_letter_topic"`
	// Owner is accepted and ignored: the owner is the caller, not the body.
	Owner string `json:"owner"`
}

func decodeCreateTopic(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	var body createTopicBody
	if failed := c.readJSONBody(r, &body); failed != nil {
		return nil, failed
	}
	if body.Name == "" {
		return nil, invalidf("name is required")
	}
	if !validTopicName(body.Name) {
		return nil, failure(errInvalidTopicName)
	}
	if body.FanoutDelayMs != 0 && body.Parent == "" {
		return nil, invalidf("fanout_delay_ms requires parent")
	}
	if body.Parent != "" && !validTopicName(body.Parent) {
		return nil, invalidTopicNameIn("parent topic", body.Parent)
	}
	if failed := checkDeadLetterName(body.DeadLetterTopic); failed != nil {
		return nil, failed
	}
	request := msg.CreateTopic{
		Parent:              body.Parent,
		FanoutDelayMs:       body.FanoutDelayMs,
		Name:                body.Name,
		Partitions:          body.Partitions,
		RetentionMs:         body.RetentionMs,
		VisibilityTimeoutMs: body.VisibilityTimeoutMs,
		InFlightMax:         body.InFlightMax,
		AckedAheadMax:       body.AckedAheadMax,
		Schema:              schemaOf(body.Schema),
		MaxDeliveries:       body.MaxDeliveries,
		DeadLetterTopic:     body.DeadLetterTopic,
	}
	if failed := rejectNegative(createFields(request)); failed != nil {
		return nil, failed
	}
	if failed := rejectLongRetention(request.RetentionMs); failed != nil {
		return nil, failed
	}
	return request, nil
}

// schemaOf returns the schema of a body: nil when absent or null. The
// handler compiles it before the request reaches the node.
func schemaOf(schema json.RawMessage) []byte {
	if len(schema) == 0 || string(schema) == "null" {
		return nil
	}
	return schema
}

// checkDeadLetterName refuses a dead_letter_topic that breaks the topic
// name rule ("" names none) before it reaches the node or the grant
// check, both of which would echo it whole: a body may carry a megabyte
// of it.
func checkDeadLetterName(name string) *ErrorResponse {
	if name == "" || validTopicName(name) {
		return nil
	}
	return invalidTopicNameIn("dead_letter_topic", name)
}

// namedValue is a numeric body field with its JSON name; set is false for
// an absent optional field. rule says the values it takes, for the
// answer to a negative one.
type namedValue struct {
	name  string
	value int64
	set   bool
	rule  string
}

// The rules of the numeric fields, as a refusal of a negative one says
// them (docs/api.md#create-a-topic); the node checks the upper bounds.
var (
	partitionsRule     = fmt.Sprintf("0 (the default) or from %d to topic.max_partitions (%d unless configured)", msg.PartitionsMin, msg.PartitionsMaxDefault)
	growPartitionsRule = fmt.Sprintf("at least the topic's count (it only grows) and at most topic.max_partitions (%d unless configured)", msg.PartitionsMaxDefault)
	retentionRule      = fmt.Sprintf("0 (the default) or from %d to %d (100 years)", msg.RetentionMsMin, msg.RetentionMsMax)
	visibilityRule     = fmt.Sprintf("0 (the default) or from 1 to %d (12h)", msg.VisibilityTimeoutMsMax)
	capRule            = fmt.Sprintf("0 (the default) or from 1 to %d", meta.LeaseCapMax)
	maxDeliveriesRule  = fmt.Sprintf("between 0 (off) and %d", msg.MaxDeliveriesMax)
	delayRule          = fmt.Sprintf("between 0 and %d (one year)", msg.FanoutDelayMsMax)
)

func createFields(request msg.CreateTopic) []namedValue {
	return []namedValue{
		{"partitions", int64(request.Partitions), true, partitionsRule},
		{"retention_ms", request.RetentionMs, true, retentionRule},
		{"visibility_timeout_ms", request.VisibilityTimeoutMs, true, visibilityRule},
		{"max_in_flight_per_partition", int64(request.InFlightMax), true, capRule},
		{"max_acked_ahead_per_partition", int64(request.AckedAheadMax), true, capRule},
		{"max_deliveries", int64(request.MaxDeliveries), true, maxDeliveriesRule},
		{"fanout_delay_ms", request.FanoutDelayMs, true, delayRule},
	}
}

// rejectNegative fails on the first set field below zero, saying what
// the field takes.
func rejectNegative(fields []namedValue) *ErrorResponse {
	for _, field := range fields {
		if field.set && field.value < 0 {
			return invalidf("%s must be %s, got %d", field.name, field.rule, field.value)
		}
	}
	return nil
}

// rejectLongRetention refuses a retention_ms past msg.RetentionMsMax (the
// node checks its lower bound, after the default replaced a 0). Nothing
// bounded it above: a retention of 290 million years was taken.
func rejectLongRetention(retentionMs int64) *ErrorResponse {
	if retentionMs > msg.RetentionMsMax {
		return invalidf("retention_ms must be at most %d (100 years), got %d", msg.RetentionMsMax, retentionMs)
	}
	return nil
}

func decodeListTopics(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	query, failed := parseQuery(r)
	if failed != nil {
		return nil, failed
	}
	limit, failed := boundedInt(query, "limit", 1, msg.TopicsPageMax, msg.TopicsPageDefault)
	if failed != nil {
		return nil, failed
	}
	return msg.ListTopics{Limit: limit, PageToken: query.Get("page_token")}, nil
}

func decodeGetTopic(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	name, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	query, failed := parseQuery(r)
	if failed != nil {
		return nil, failed
	}
	partition, failed := optionalPartition(query)
	if failed != nil {
		return nil, failed
	}
	return msg.GetTopic{Name: name, Partition: partition}, nil
}

// alterTopicBody is the body of PATCH /v1/topics/{topic}
// (docs/api.md#alter-a-topic); an absent or null field is left unchanged.
type alterTopicBody struct {
	Partitions          *int            `json:"partitions"`
	RetentionMs         *int64          `json:"retention_ms"`
	VisibilityTimeoutMs *int64          `json:"visibility_timeout_ms"`
	InFlightMax         *int            `json:"max_in_flight_per_partition"`
	AckedAheadMax       *int            `json:"max_acked_ahead_per_partition"`
	Schema              json.RawMessage `json:"schema"`
	MaxDeliveries       *int            `json:"max_deliveries"`
	// DeadLetterTopic "" turns dead letters off (with max_deliveries 0).
	DeadLetterTopic *string `json:"dead_letter_topic"`
}

func decodeAlterTopic(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	name, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	var body alterTopicBody
	if failed := c.readJSONBody(r, &body); failed != nil {
		return nil, failed
	}
	request := msg.AlterTopic{
		Name:                name,
		Partitions:          body.Partitions,
		RetentionMs:         body.RetentionMs,
		VisibilityTimeoutMs: body.VisibilityTimeoutMs,
		InFlightMax:         body.InFlightMax,
		AckedAheadMax:       body.AckedAheadMax,
		Schema:              schemaOf(body.Schema),
		MaxDeliveries:       body.MaxDeliveries,
		DeadLetterTopic:     body.DeadLetterTopic,
	}
	if body.DeadLetterTopic != nil {
		if failed := checkDeadLetterName(*body.DeadLetterTopic); failed != nil {
			return nil, failed
		}
	}
	fields := alterFields(request)
	if !anySet(fields) && request.Schema == nil && request.DeadLetterTopic == nil {
		return nil, failure(ErrAlterNothing)
	}
	if failed := rejectNegative(fields); failed != nil {
		return nil, failed
	}
	if body.RetentionMs != nil {
		if failed := rejectLongRetention(*body.RetentionMs); failed != nil {
			return nil, failed
		}
	}
	return request, nil
}

func alterFields(request msg.AlterTopic) []namedValue {
	return []namedValue{
		optionalInt("partitions", request.Partitions, growPartitionsRule),
		optionalInt64("retention_ms", request.RetentionMs, retentionRule),
		optionalInt64("visibility_timeout_ms", request.VisibilityTimeoutMs, visibilityRule),
		optionalInt("max_in_flight_per_partition", request.InFlightMax, capRule),
		optionalInt("max_acked_ahead_per_partition", request.AckedAheadMax, capRule),
		optionalInt("max_deliveries", request.MaxDeliveries, maxDeliveriesRule),
	}
}

func optionalInt(name string, value *int, rule string) namedValue {
	if value == nil {
		return namedValue{name: name, rule: rule}
	}
	return namedValue{name: name, value: int64(*value), set: true, rule: rule}
}

func optionalInt64(name string, value *int64, rule string) namedValue {
	if value == nil {
		return namedValue{name: name, rule: rule}
	}
	return namedValue{name: name, value: *value, set: true, rule: rule}
}

func anySet(fields []namedValue) bool {
	for _, field := range fields {
		if field.set {
			return true
		}
	}
	return false
}

func decodeDeleteTopic(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	name, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	return msg.DeleteTopic{Name: name}, nil
}

func decodeListMembers(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	return msg.ListMembers{}, nil
}

func decodeListMoves(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	return msg.ListMoves{}, nil
}

// nodeIDPattern is the rule of a node id (config validates the same rule
// for NARAD_NODE_ID).
var nodeIDPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

func decodeDecommission(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	id := r.PathValue("id")
	if !nodeIDPattern.MatchString(id) {
		return nil, failure(msg.Invalid("invalid member id: want 1 to 64 characters of A-Z a-z 0-9 . _ -"))
	}
	return msg.Decommission{ID: id, Cancel: r.Method == http.MethodDelete}, nil
}

// attachChildBody is the body of POST /v1/topics/{parent}/children
// (docs/api.md#fan-out-children).
type attachChildBody struct {
	Child   string `json:"child"`
	DelayMs int64  `json:"delay_ms"`
}

func decodeAttachChild(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	parent, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	var body attachChildBody
	if failed := c.readJSONBody(r, &body); failed != nil {
		return nil, failed
	}
	switch {
	case body.Child == "":
		return nil, invalidf("child is required")
	case !validTopicName(body.Child):
		return nil, invalidTopicNameIn("child topic", body.Child)
	case body.DelayMs < 0:
		return nil, invalidf("delay_ms must be %s, got %d", delayRule, body.DelayMs)
	}
	return msg.AttachChild{Parent: parent, Child: body.Child, DelayMs: body.DelayMs}, nil
}

func decodeListChildren(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	parent, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	return msg.ListChildren{Parent: parent}, nil
}

func decodeDetachChild(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	parent, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	child := r.PathValue("child")
	if !validTopicName(child) {
		return nil, invalidTopicNameIn("child topic", child)
	}
	return msg.DetachChild{Parent: parent, Child: child}, nil
}
