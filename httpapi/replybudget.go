package httpapi

import (
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
		inFlight: "reply_bytes_in_flight", inFlightHelp: "Encoded consume and replay reply bytes held while they are written to their clients.",
		refused: "reply_budget_refused_total", refusedHelp: "Consumes and replays refused (503) because the replies in flight held their cap; a refused consume's records were handed back.",
		bytesMax: "reply_bytes_in_flight_max", bytesMaxHelp: "Cap of the consume and replay reply bytes held at once.",
	}, reg)
}

// budgetReply charges the encoded reply of a consume or replay to the
// reply budget. It returns response holding its bytes (serve gives them
// back once it is written), or, when the budget is full, a 503 instead:
// a consume's records are then handed back to the node, delivered again
// at once with their delivery uncounted. Other replies are small and
// bounded by their own caps, and are never refused after the request
// took effect.
func (h *apiHandler) budgetReply(request msg.Request, reply msg.Reply, response Response) Response {
	switch request.(type) {
	case msg.Consume, msg.Replay:
	default:
		return response
	}
	bytes := int64(len(response.Body))
	if reply.Err != nil || bytes == 0 {
		return response
	}
	if h.replies.take(bytes) {
		response.held = bytes
		return response
	}
	h.replies.refused.Inc()
	if result, ok := reply.Result.(msg.ConsumeResult); ok && len(result.Messages) > 0 {
		h.backend.HandBack(reply)
	}
	return errorResponse(errReplyBudget)
}
