package httpapi

import (
	"fmt"
	"net/http"
	"strconv"

	"narad/msg"
)

// Encode builds the HTTP answer to req from the node's reply. The reply
// must follow msg.Reply's contract: a result of the type its request expects,
// with the shape (single or batch) the request asked for. A reply that
// does not is a bug in the node and panics.
func Encode(req msg.Request, reply msg.Reply) Response {
	if reply.Err != nil {
		return errorResponse(reply.Err)
	}
	switch request := req.(type) {
	case msg.CreateTopic:
		return jsonResponse(http.StatusCreated, resultAs[msg.TopicInfo](req, reply))
	case msg.AlterTopic:
		return jsonResponse(http.StatusOK, resultAs[msg.TopicInfo](req, reply))
	case msg.ListTopics:
		return encodeTopicPage(resultAs[msg.TopicPage](req, reply))
	case msg.GetTopic:
		return encodeTopicDetail(resultAs[msg.TopicDetail](req, reply))
	case msg.DeleteTopic:
		assert(reply.Result == nil, "delete topic replied with a %T result, want nil", reply.Result)
		return noContent()
	case msg.Produce:
		return encodeProduce(request, resultAs[msg.ProduceResult](req, reply))
	case msg.Consume:
		return encodeConsume(request, resultAs[msg.ConsumeResult](req, reply))
	case msg.Replay:
		return encodeReplay(resultAs[msg.ReplayResult](req, reply))
	case msg.Ack:
		return encodeAck(request, resultAs[msg.AckResult](req, reply))
	case msg.ListMembers:
		return encodeMembers(resultAs[msg.MembersResult](req, reply))
	case msg.ListMoves:
		return encodeMoves(resultAs[msg.MovesResult](req, reply))
	case msg.Decommission:
		assert(reply.Result == nil, "decommission replied with a %T result, want nil", reply.Result)
		return noContent()
	}
	return encodeFanout(req, reply)
}

// encodeFanout answers the fan-out routes.
func encodeFanout(req msg.Request, reply msg.Reply) Response {
	switch req.(type) {
	case msg.AttachChild:
		return jsonResponse(http.StatusOK, resultAs[msg.TopicInfo](req, reply))
	case msg.DetachChild:
		assert(reply.Result == nil, "detach replied with a %T result, want nil", reply.Result)
		return noContent()
	case msg.ListChildren:
		result := resultAs[msg.ChildrenResult](req, reply)
		result.Children = nonNil(result.Children)
		return jsonResponse(http.StatusOK, result)
	}
	panic(fmt.Sprintf("httpapi: no encoder for request type %T", req))
}

// resultAs returns the reply's result as the type req expects.
func resultAs[T msg.Result](req msg.Request, reply msg.Reply) T {
	result, ok := reply.Result.(T)
	if !ok { // the arguments are made only for the panic
		assert(false, "%T replied with a %T result, want %T", req, reply.Result, result)
	}
	return result
}

func encodeTopicPage(page msg.TopicPage) Response {
	page.Topics = nonNil(page.Topics)
	return jsonResponse(http.StatusOK, page)
}

func encodeTopicDetail(detail msg.TopicDetail) Response {
	detail.PartitionStats = nonNil(detail.PartitionStats)
	return jsonResponse(http.StatusOK, detail)
}

// produceBatchBody is the 202 of a batch produce (docs/api.md#batch-produce).
type produceBatchBody struct {
	Accepted int             `json:"accepted"`
	Records  []msg.Placement `json:"records"`
}

func encodeProduce(request msg.Produce, result msg.ProduceResult) Response {
	assert(result.Batch == request.Batch, "produce batch %t replied with batch %t", request.Batch, result.Batch)
	assert(len(result.Records) == len(request.Records),
		"produce of %d records replied with %d placements", len(request.Records), len(result.Records))
	if !request.Batch {
		assert(len(result.Records) == 1, "single produce replied with %d placements", len(result.Records))
		return rawJSONResponse(http.StatusAccepted, appendPlacement(make([]byte, 0, placementBytesMax), result.Records[0]))
	}
	body := produceBatchBody{Accepted: len(result.Records), Records: nonNil(result.Records)}
	return jsonResponse(http.StatusAccepted, body)
}

func encodeConsume(request msg.Consume, result msg.ConsumeResult) Response {
	batch := request.Max > 0
	assert(result.Batch == batch, "consume max %d replied with batch %t", request.Max, result.Batch)
	if batch {
		assert(len(result.Messages) <= request.Max,
			"consume max %d replied with %d messages", request.Max, len(result.Messages))
		return rawJSONResponse(http.StatusOK, appendMessageList(nil, result.Messages))
	}
	assert(len(result.Messages) <= 1, "single consume replied with %d messages", len(result.Messages))
	if len(result.Messages) == 0 {
		return noContent()
	}
	return rawJSONResponse(http.StatusOK, appendMessage(messageBuffer(result.Messages[0]), result.Messages[0]))
}

func encodeReplay(result msg.ReplayResult) Response {
	if result.Message == nil {
		return noContent()
	}
	return rawJSONResponse(http.StatusOK, appendMessage(messageBuffer(*result.Message), *result.Message))
}

// ackItemBody is one element of a batch ack's results (docs/api.md#batch-ack).
// Error carries the failure message of a status other than 204.
type ackItemBody struct {
	ReceiptHandle string `json:"receipt_handle"`
	Status        int    `json:"status"`
	Error         string `json:"error,omitempty"`
}

// ackBatchBody is the 200 of a batch ack.
type ackBatchBody struct {
	Results []ackItemBody `json:"results"`
}

func encodeAck(request msg.Ack, result msg.AckResult) Response {
	assert(result.Batch == request.Batch, "ack batch %t replied with batch %t", request.Batch, result.Batch)
	assert(len(result.Results) == len(request.Handles),
		"ack of %d handles replied with %d results", len(request.Handles), len(result.Results))
	if !request.Batch {
		assert(len(result.Results) == 1, "single ack replied with %d results", len(result.Results))
		if err := result.Results[0].Err; err != nil {
			return errorResponse(err)
		}
		return noContent()
	}
	body := ackBatchBody{Results: make([]ackItemBody, 0, len(result.Results))}
	retry := false
	for _, item := range result.Results {
		body.Results = append(body.Results, ackItem(item))
		retry = retry || body.Results[len(body.Results)-1].Status == http.StatusServiceUnavailable
	}
	response := jsonResponse(http.StatusOK, body)
	if retry {
		// An item's 503 is a 503 of that handle: its Retry-After goes on
		// the whole answer, the one place a client looks for it.
		response.Header = http.Header{"Content-Type": {"application/json"}, "Retry-After": {strconv.Itoa(RetryAfterSeconds)}}
	}
	return response
}

func ackItem(item msg.AckItemResult) ackItemBody {
	if item.Err == nil {
		return ackItemBody{ReceiptHandle: item.Handle, Status: http.StatusNoContent}
	}
	status := StatusOf(msg.CodeOf(item.Err))
	return ackItemBody{ReceiptHandle: item.Handle, Status: status, Error: item.Err.Error()}
}

func encodeMembers(result msg.MembersResult) Response {
	result.Members = nonNil(result.Members)
	return jsonResponse(http.StatusOK, result)
}

func encodeMoves(result msg.MovesResult) Response {
	result.Moves = nonNil(result.Moves)
	return jsonResponse(http.StatusOK, result)
}

// nonNil returns an empty slice for nil so that lists encode as [].
func nonNil[T any](items []T) []T {
	if items == nil {
		return []T{}
	}
	return items
}

// placementBytesMax is the longest JSON placement with its newline:
// `{"partition":` and `,"offset":` around two 20-digit numbers, `}\n`.
const placementBytesMax = 13 + 20 + 10 + 20 + 2

// appendPlacement appends a placement as the JSON object encoding/json
// makes of msg.Placement (the fields in their order), without reflection.
func appendPlacement(dst []byte, placement msg.Placement) []byte {
	dst = append(dst, `{"partition":`...)
	dst = strconv.AppendInt(dst, int64(placement.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendUint(dst, placement.Offset, 10)
	return append(dst, '}')
}
