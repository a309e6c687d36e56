package httpapi

import (
	"math"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"narad/msg"
	"narad/node/lease"
)

// decodeConsume decodes a queue consume, or a replay when offset is given
// (docs/api.md#consume). local_only, an internal peer probe of the
// reference, is ignored.
func decodeConsume(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	topic, failed := pathTopic(r)
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
	waitMs, failed := c.parseWait(query.Get("wait"))
	if failed != nil {
		return nil, failed
	}
	if query.Has("offset") {
		return decodeReplay(topic, partition, query)
	}
	batchMax, failed := boundedInt(query, "max", 1, msg.ConsumeBatchMax, 0)
	if failed != nil {
		return nil, failed
	}
	return msg.Consume{Topic: topic, Partition: partition, Max: batchMax, WaitMs: waitMs}, nil
}

// parseWait parses a Go duration into milliseconds: empty is 0, negative
// is 0, and anything longer than the configured maximum is clamped to it.
func (c *Codec) parseWait(text string) (int64, *ErrorResponse) {
	if text == "" {
		return 0, nil
	}
	wait, err := time.ParseDuration(text)
	if err != nil {
		return 0, invalidf("invalid wait: want a Go duration such as 500ms or 10s")
	}
	return min(max(wait.Milliseconds(), 0), c.config.ConsumeWaitMaxMs), nil
}

// decodeReplay decodes a replay-mode consume: read-only, no wait.
func decodeReplay(topic string, partition int, query url.Values) (msg.Request, *ErrorResponse) {
	if partition == msg.PartitionNone {
		return nil, failure(ErrPartitionRequiredForReplay)
	}
	if query.Has("max") {
		return nil, invalidf("max does not apply to replay-mode consume")
	}
	offset, err := strconv.ParseUint(query.Get("offset"), 10, 64)
	if err != nil {
		return nil, invalidf("%s", outOfRange("offset", 0, math.MaxUint64))
	}
	return msg.Replay{Topic: topic, Partition: partition, Offset: offset}, nil
}

// decodeAck decodes an ack, extend or nack (docs/api.md#ack): one handle in
// the query, or a batch in a JSON body (docs/api.md#batch-ack) when the query
// names no handle and the body is JSON.
func decodeAck(c *Codec, r *http.Request) (msg.Request, *ErrorResponse) {
	topic, failed := pathTopic(r)
	if failed != nil {
		return nil, failed
	}
	query, failed := parseQuery(r)
	if failed != nil {
		return nil, failed
	}
	if !query.Has("receipt_handle") && hasMediaType(r, "application/json") {
		return c.decodeAckBatch(r, topic, query)
	}
	handle := query.Get("receipt_handle")
	if handle == "" {
		return nil, failure(ErrReceiptHandleRequired)
	}
	if _, _, _, err := lease.ParseHandle(handle); err != nil {
		return nil, failure(ErrReceiptHandleMalformed)
	}
	action, failed := parseExtend(query.Get("extend"))
	if failed != nil {
		return nil, failed
	}
	return msg.Ack{Topic: topic, Handles: []string{handle}, Action: action}, nil
}

// parseExtend maps the extend parameter to an action.
func parseExtend(extend string) (msg.AckAction, *ErrorResponse) {
	switch extend {
	case "", "false":
		return msg.AckCommit, nil
	case "true", "1":
		return msg.AckExtend, nil
	case "0":
		return msg.AckNack, nil
	}
	return 0, failure(ErrInvalidExtend)
}

// ackBatchRequestBody is the JSON body of a batch ack.
type ackBatchRequestBody struct {
	ReceiptHandles []string `json:"receipt_handles"`
	Extend         string   `json:"extend"`
}

func (c *Codec) decodeAckBatch(r *http.Request, topic string, query url.Values) (msg.Request, *ErrorResponse) {
	if query.Has("extend") {
		return nil, invalidf("extend goes in the body of a batch ack, not in the query")
	}
	var body ackBatchRequestBody
	if failed := c.readJSONBody(r, &body); failed != nil {
		return nil, failed
	}
	if failed := checkHandles(body.ReceiptHandles); failed != nil {
		return nil, failed
	}
	action, failed := parseExtend(body.Extend)
	if failed != nil {
		return nil, failed
	}
	return msg.Ack{Topic: topic, Handles: body.ReceiptHandles, Action: action, Batch: true}, nil
}

// checkHandles checks the count and the syntax of a batch's handles.
func checkHandles(handles []string) *ErrorResponse {
	if len(handles) == 0 {
		return invalidf("receipt_handles required")
	}
	if len(handles) > msg.AckBatchHandlesMax {
		return failure(msg.TooLarge("batch ack has more than %d receipt handles", msg.AckBatchHandlesMax))
	}
	for index, handle := range handles {
		if _, _, _, err := lease.ParseHandle(handle); err != nil {
			return invalidf("receipt_handles[%d]: %s", index, ErrReceiptHandleMalformed.Message)
		}
	}
	return nil
}
