package httpapi

import (
	"errors"
	"fmt"

	"narad/msg"
)

// Defaults of CodecConfig (docs/api.md#conventions, docs/api.md#batch-produce).
const (
	defaultConsumeWaitMaxMs    = 10_000
	defaultJSONBodyBytesMax    = 1 << 20
	defaultMessageBodyBytesMax = 1 << 20
	// A batch of msg.ProduceBatchBytesMax payload bytes sent as
	// payload_base64 grows by 4/3 plus the JSON around each record, so the
	// raw NDJSON cap sits well above the payload cap: the payload cap is the
	// one a well-formed batch meets first.
	defaultBatchBodyBytesMax = 16 << 20
	// defaultBodyBytesInFlightMax holds sixteen of the largest batches.
	defaultBodyBytesInFlightMax = 256 << 20
	// bodyBytesInFlightLimit bounds BodyBytesInFlightMax.
	bodyBytesInFlightLimit = 64 << 30
	// defaultReplyBytesInFlightMax holds thirty-two of the largest
	// consume replies' payloads.
	defaultReplyBytesInFlightMax = 256 << 20
	// replyBytesInFlightLimit bounds ReplyBytesInFlightMax.
	replyBytesInFlightLimit = 64 << 30
)

// CodecConfig bounds what Decode accepts. Start from DefaultCodecConfig.
type CodecConfig struct {
	// ConsumeWaitMaxMs clamps the wait of a consume (http.max_consume_wait).
	ConsumeWaitMaxMs int64
	// JSONBodyBytesMax caps the body of a JSON request (create, alter,
	// batch ack); over it the answer is 413.
	JSONBodyBytesMax int64
	// MessageBodyBytesMax caps the body of a single produce and the
	// payload of each record of a batch produce.
	MessageBodyBytesMax int64
	// BatchBodyBytesMax caps the raw NDJSON body of a batch produce.
	BatchBodyBytesMax int64
	// BodyBytesInFlightMax caps the request body bytes the server holds
	// at once, across requests (charged as they arrive, released with the
	// answer); a read past it answers 503 with Retry-After. Within
	// [BatchBodyBytesMax, bodyBytesInFlightLimit], so one largest batch
	// always fits.
	BodyBytesInFlightMax int64
	// ReplyBytesInFlightMax caps the encoded consume and replay reply
	// bytes the server holds at once while it writes them (charged when
	// encoded, released once written); past it a consume or replay
	// answers 503 with Retry-After, and a consume hands its records back.
	// A reply larger than the cap is sent when no other is held. Within
	// [1, replyBytesInFlightLimit].
	ReplyBytesInFlightMax int64
}

// DefaultCodecConfig returns the defaults of docs/api.md#conventions.
func DefaultCodecConfig() CodecConfig {
	return CodecConfig{
		ConsumeWaitMaxMs:      defaultConsumeWaitMaxMs,
		JSONBodyBytesMax:      defaultJSONBodyBytesMax,
		MessageBodyBytesMax:   defaultMessageBodyBytesMax,
		BatchBodyBytesMax:     defaultBatchBodyBytesMax,
		BodyBytesInFlightMax:  defaultBodyBytesInFlightMax,
		ReplyBytesInFlightMax: defaultReplyBytesInFlightMax,
	}
}

// Validate reports every problem of the configuration at once.
func (c CodecConfig) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	check(c.ConsumeWaitMaxMs >= 0, "consume wait max %d ms is negative", c.ConsumeWaitMaxMs)
	check(c.JSONBodyBytesMax > 0, "json body bytes max %d must be > 0", c.JSONBodyBytesMax)
	check(c.MessageBodyBytesMax > 0, "message body bytes max %d must be > 0", c.MessageBodyBytesMax)
	check(c.MessageBodyBytesMax <= msg.ProduceBatchBytesMax,
		"message body bytes max %d above the batch payload max %d", c.MessageBodyBytesMax, msg.ProduceBatchBytesMax)
	check(c.BatchBodyBytesMax >= msg.ProduceBatchBytesMax,
		"batch body bytes max %d below the batch payload max %d", c.BatchBodyBytesMax, msg.ProduceBatchBytesMax)
	check(c.BodyBytesInFlightMax >= c.BatchBodyBytesMax && c.BodyBytesInFlightMax <= bodyBytesInFlightLimit,
		"body bytes in flight max %d not in [batch body bytes max %d, %d]", c.BodyBytesInFlightMax, c.BatchBodyBytesMax, int64(bodyBytesInFlightLimit))
	check(c.ReplyBytesInFlightMax > 0 && c.ReplyBytesInFlightMax <= replyBytesInFlightLimit,
		"reply bytes in flight max %d not in [1, %d]", c.ReplyBytesInFlightMax, int64(replyBytesInFlightLimit))
	return errors.Join(problems...)
}
