package sim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"narad/httpapi"
)

// consumeNext sends the next consume: a long poll, single or batch.
func (cl *client) consumeNext() {
	rng := cl.w.workloadRng
	waitMs := rng.IntN(1_500)
	target := fmt.Sprintf("/v1/topics/%s/consume?wait=%dms", cl.w.topic, waitMs)
	batch := rng.IntN(2) == 0
	if batch {
		target += fmt.Sprintf("&max=%d", 1+rng.IntN(10))
	}
	c := &call{kind: "consume", httpRequest: newHTTPRequest(http.MethodGet, target, "", ""), timeoutMs: int64(waitMs) + longPollGraceMs}
	c.onDone = func(response *httpapi.Response) { cl.consumed(c, batch, response) }
	cl.send(c)
}

func (cl *client) consumed(c *call, batch bool, response *httpapi.Response) {
	if response != nil && response.Status == http.StatusMisdirectedRequest {
		cl.w.history.misdirected[c.kind]++ // API.md §1.12: retried
	}
	if response == nil || response.Status >= 500 || response.Status == http.StatusMisdirectedRequest {
		cl.later(50, cl.consumeNext)
		return
	}
	messages, err := decodeMessages(response, batch)
	if err != nil {
		cl.w.fail("client", "%s: %v", c.describe(), err)
		return
	}
	var handles []string
	for _, m := range messages {
		id, err := m.id()
		if err != nil {
			cl.w.fail("client", "%s: %v", c.describe(), err)
			return
		}
		cl.w.history.delivered(id, m.Partition, m.Offset, c.sentMs, cl.w.nowMs)
		handles = append(handles, m.ReceiptHandle)
	}
	cl.settle(handles)
}

func decodeMessages(response *httpapi.Response, batch bool) ([]wireMessage, error) {
	switch {
	case response.Status == http.StatusNoContent:
		return nil, nil
	case response.Status != http.StatusOK:
		return nil, fmt.Errorf("consume answered %d: %s", response.Status, response.Body)
	case batch:
		var body struct {
			Messages []wireMessage `json:"messages"`
		}
		err := json.Unmarshal(response.Body, &body)
		return body.Messages, err
	}
	var m wireMessage
	err := json.Unmarshal(response.Body, &m)
	return []wireMessage{m}, err
}

// settle acks, nacks, extends or forgets the delivered messages (a
// forgotten one comes back after its visibility timeout), then consumes
// again.
func (cl *client) settle(handles []string) {
	if len(handles) == 0 {
		cl.later(int64(cl.w.workloadRng.IntN(consumerThinkMsMax)), cl.consumeNext)
		return
	}
	roll := cl.w.workloadRng.IntN(100)
	switch {
	case roll < 8: // forget: let the leases lapse
		cl.later(1, cl.consumeNext)
	case roll < 14:
		cl.ackSingle(handles, "0")
	case roll < 20:
		cl.ackSingle(handles, "true")
	case roll < 55 || len(handles) == 1:
		cl.ackSingle(handles, "")
	default:
		cl.ackBatch(handles)
	}
}

// ackSingle acks (or nacks/extends) the handles one request at a time; an
// extend is followed by an ack of the same handle.
func (cl *client) ackSingle(handles []string, extend string) {
	handle := handles[0]
	target := fmt.Sprintf("/v1/topics/%s/ack?receipt_handle=%s", cl.w.topic, handle)
	if extend != "" {
		target += "&extend=" + extend
	}
	c := &call{kind: "ack", httpRequest: newHTTPRequest(http.MethodPost, target, "", "")}
	c.onDone = func(response *httpapi.Response) {
		if !cl.ackOutcomeOK(c, response) {
			return
		}
		rest := handles[1:]
		if extend == "true" {
			rest, extend = handles, ""
		}
		if len(rest) == 0 {
			cl.later(int64(cl.w.workloadRng.IntN(consumerThinkMsMax)), cl.consumeNext)
			return
		}
		cl.ackSingle(rest, extend)
	}
	cl.send(c)
}

func (cl *client) ackBatch(handles []string) {
	body := `{"receipt_handles":["` + strings.Join(handles, `","`) + `"]}`
	c := &call{kind: "ack-batch", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics/"+cl.w.topic+"/ack", "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		if cl.ackOutcomeOK(c, response) {
			cl.later(int64(cl.w.workloadRng.IntN(consumerThinkMsMax)), cl.consumeNext)
		}
	}
	cl.send(c)
}

// ackOutcomeOK accepts what a correct server may answer to an ack under
// faults: success, 410 (lease lapsed, node restarted), 503, or nothing.
func (cl *client) ackOutcomeOK(c *call, response *httpapi.Response) bool {
	if response == nil {
		cl.later(10, cl.consumeNext)
		return false
	}
	switch response.Status {
	case http.StatusNoContent, http.StatusOK, http.StatusGone, http.StatusServiceUnavailable:
		return true
	}
	cl.unexpected(c, response)
	return false
}
