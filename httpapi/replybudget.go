package httpapi

import (
	"encoding/base64"
	"math"
	"net/http"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"narad/msg"
)

// errReplyBudget answers a consume or replay refused by the reply budget.
var errReplyBudget = msg.Unavailable("the server holds its cap of reply bytes in flight; retry")

// newReplyBudget is the budget of encoded consume and replay replies: a
// reply takes its encoded bytes when it is built and gives them back once
// written, so clients that read slowly (each may hold a batch of up to
// the node's consume reply cap for the write timeout) cannot together
// make the server hold more than the cap. A reply larger than the whole
// cap is sent when no other is held.
func newReplyBudget(bytesMax int64, reg prometheus.Registerer) *byteBudget {
	return newByteBudget(bytesMax, true, budgetMetrics{
		inFlight: "reply_bytes_in_flight", inFlightHelp: "Bytes of encoded consume, replay and read replies, and of rendered /metrics scrapes, held while they are written to their clients.",
		refused: "reply_budget_refused_total", refusedHelp: "Consumes, replays, reads and /metrics scrapes refused (503) because the replies in flight held their cap (a scrape: the scrapes' share of it); a refused consume's records were handed back.",
		bytesMax: "reply_bytes_in_flight_max", bytesMaxHelp: "Cap of the consume, replay, read and scrape reply bytes held at once.",
	}, reg)
}

// budgetReply encodes the reply of a consume or replay under the reply
// budget: it first takes a bound of the encoded size (replyBytesBound),
// so that the encoding itself (up to six times the bytes of a text
// payload of control characters) never runs past the cap, then gives
// back what the encoded body did not use (fitted: its buffer, not
// only its bytes, is what stays held). It returns response holding
// its bytes (serve gives them back once it is written), or, when the
// budget is full, a 503 instead: a consume's records are then handed back
// to the node, delivered again at once with their delivery uncounted.
// The reads of the cluster's state (a topic with its partitions' stats,
// lists of topics, members, moves and children), which may run to
// megabytes, are charged once encoded (holdReply). Other replies are
// encoded as they are: small and bounded by their own caps, and never
// refused after the request took effect.
func (h *apiHandler) budgetReply(request msg.Request, reply msg.Reply) Response {
	bound, budgeted := replyBytesBound(request, reply)
	if !budgeted {
		if stateRead(request) {
			return h.holdReply(Encode(request, reply))
		}
		return Encode(request, reply)
	}
	if !h.replies.take(bound) {
		h.replies.refused.Inc()
		if result, ok := reply.Result.(msg.ConsumeResult); ok && len(result.Messages) > 0 {
			h.backend.HandBack(reply)
		}
		return errorResponse(errReplyBudget)
	}
	response := Encode(request, reply)
	response.Body = fitted(response.Body)
	// The body's bytes are within the bound taken
	// (TestReplyBytesBoundIsAnUpperBound), its buffer may pass it by the
	// allocator's rounding or a slack under fitSlackMax: the bound is then
	// what stays held, a few KiB short of the buffer, never nothing.
	held := min(int64(cap(response.Body)), bound)
	h.replies.give(bound - held)
	response.held = held
	return response
}

// fitSlackMax is the most room a held reply's buffer may keep past its
// bytes: the budget charges what the buffer holds (its capacity), and an
// encoder's buffer is sized for the worst case (a message's for base64)
// or doubled as it grew (a state read's), up to twice its bytes.
const fitSlackMax = 4 << 10

// fitted returns body in a buffer of its own size when body's buffer
// keeps more than fitSlackMax past it (a copy, of a large reply only), so
// that what the budget charges is about what the reply holds.
func fitted(body []byte) []byte {
	if cap(body)-len(body) <= fitSlackMax {
		return body
	}
	return append(make([]byte, 0, len(body)), body...)
}

// stateRead reports whether a request only reads the cluster's state: its
// reply may be refused by the reply budget, since it changed nothing.
func stateRead(request msg.Request) bool {
	switch request.(type) {
	case msg.GetTopic, msg.ListTopics, msg.ListMembers, msg.ListMoves, msg.ListChildren:
		return true
	}
	return false
}

// holdReply charges a reply that is not a consume or replay but may be
// large (a schema read back, up to msg.SchemaBytesMax) to the reply
// budget, or answers 503 when the budget is full; the request changed
// nothing.
func (h *apiHandler) holdReply(response Response) Response {
	response.Body = fitted(response.Body)
	bytes := int64(cap(response.Body))
	if response.Status != http.StatusOK || bytes == 0 {
		return response
	}
	if !h.replies.take(bytes) {
		h.replies.refused.Inc()
		return errorResponse(errReplyBudget)
	}
	response.held = bytes
	return response
}

// jsonEscapeMax is the most bytes JSON encodes one byte of a string into
// (a control character, or <, > and & as json.Marshal escapes them:
// \u00XX).
const jsonEscapeMax = 6

// messageNumbersBytesMax bounds what a consumed message's JSON holds
// beside the contents of its strings: every field name, brace, quote and
// separator (a batch's comma included), and the numbers at their longest
// with a dead-letter origin's. It is measured on the encoder itself.
var messageNumbersBytesMax = 1 + int64(len(appendMessage(nil, msg.Message{
	Topic: "t", Partition: math.MinInt64, Offset: math.MaxUint64, Key: []byte("k"), Payload: []byte{0xff},
	TimestampMs: math.MinInt64, ReceiptHandle: "h", DeliveryCount: math.MaxUint32,
	DeadLetter: &msg.DeadLetterOrigin{Topic: "t", Partition: math.MinInt64, Offset: math.MaxUint64, DeliveryCount: math.MaxUint32},
})))

// messageListBytes is the {"messages":[]} around a batch.
const messageListBytes = int64(len(`{"messages":[]}`))

// replyBytesBound is an upper bound of the encoded size of a consume or
// replay reply with records; budgeted is false for any other reply.
func replyBytesBound(request msg.Request, reply msg.Reply) (bound int64, budgeted bool) {
	if reply.Err != nil {
		return 0, false
	}
	var messages []msg.Message
	switch result := reply.Result.(type) {
	case msg.ConsumeResult:
		messages = result.Messages
	case msg.ReplayResult:
		if result.Message != nil {
			messages = []msg.Message{*result.Message}
		}
	}
	if len(messages) == 0 {
		return 0, false
	}
	switch request.(type) {
	case msg.Consume, msg.Replay:
	default:
		return 0, false
	}
	bound = messageListBytes
	for _, message := range messages {
		bound += messageNumbersBytesMax + payloadBytesBound(message.Payload) + stringBytesBound([]byte(message.Topic)) +
			stringBytesBound(message.Key) + stringBytesBound([]byte(message.ReceiptHandle))
		if message.DeadLetter != nil {
			bound += stringBytesBound([]byte(message.DeadLetter.Topic))
		}
	}
	return bound, true
}

// payloadBytesBound bounds the encoding of a payload as appendPayload
// chooses it: base64 for bytes that are not UTF-8; for text, its escaped
// JSON string, which is never shorter than the text as is (the encoding
// of a JSON payload), so the bound needs no JSON parse of its own.
func payloadBytesBound(payload []byte) int64 {
	if !utf8.Valid(payload) {
		return int64(base64.StdEncoding.EncodedLen(len(payload)) + 2)
	}
	return escapedBytesBound(payload)
}

// stringBytesBound bounds the JSON string of text, whose invalid bytes
// each become \ufffd.
func stringBytesBound(text []byte) int64 {
	if !utf8.Valid(text) {
		return jsonEscapeMax*int64(len(text)) + 2
	}
	return escapedBytesBound(text)
}

// escapedBytesBound bounds the JSON string of valid UTF-8 text: six
// bytes for a control character and for <, > and & (\u00XX), two for a
// quote or a backslash, and six for U+2028 and U+2029, whose three bytes
// start with 0xE2 (counted four, the two after it one each).
func escapedBytesBound(text []byte) int64 {
	bound := int64(2)
	for _, b := range text {
		switch {
		case b < 0x20 || b == '<' || b == '>' || b == '&':
			bound += jsonEscapeMax
		case b == '"' || b == '\\':
			bound += 2
		case b == 0xE2:
			bound += 4
		default:
			bound++
		}
	}
	return bound
}
