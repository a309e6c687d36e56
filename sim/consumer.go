package sim

import (
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
		cl.w.history.misdirected[c.kind]++ // 421: retried (docs/api.md#status-codes)
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
		cl.w.acks.delivered(c, m)
		cl.w.leases.delivered(c, m)
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
		return decodeWireMessageList(response.Body)
	}
	m, err := decodeWireMessage(response.Body)
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
	case roll < 3 && cl.w.phase == phaseSafety: // a slow worker: ack after the leases lapsed (never while draining)
		cl.later(slowAckMs, func() { cl.ackLate(handles) })
		cl.later(1, cl.consumeNext)
	case roll < 8 && !cl.w.emptying: // forget: let the leases lapse (not while the emptied check waits)
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

// Ack retries: an ack whose answer was lost, or was 503, is sent again
// with the same handles, at most ackAttemptsMax times in all, the n-th
// retry after n × ackRetryPauseMs.
const (
	ackAttemptsMax  = 4
	ackRetryPauseMs = 100
)

// ackSingle acks (or nacks/extends) the handles one request at a time; an
// extend is followed by an ack of the same handle.
func (cl *client) ackSingle(handles []string, extend string) { cl.ackSingleAttempt(handles, extend, 1) }

func (cl *client) ackSingleAttempt(handles []string, extend string, attempt int) {
	handle := handles[0]
	target := fmt.Sprintf("/v1/topics/%s/ack?receipt_handle=%s", cl.w.topic, handle)
	if extend != "" {
		target += "&extend=" + extend
	}
	c := &call{kind: "ack", httpRequest: newHTTPRequest(http.MethodPost, target, "", "")}
	c.onDone = func(response *httpapi.Response) {
		if response != nil {
			cl.w.leases.answered(c, handle, response.Status)
		}
		if cl.retryAck(response, attempt, func() { cl.ackSingleAttempt(handles, extend, attempt+1) }) {
			return
		}
		if response != nil && extend == "" {
			cl.w.acks.answered(c, handle, response.Status, attempt)
		}
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
	cl.w.leases.sent(c, []string{handle})
}

// ackLate acks each handle in a request of its own, beside the client's
// loop (a slow worker of the same consumer): once, with no retry and no
// consume after it. Its answers are judged as any ack's.
func (cl *client) ackLate(handles []string) {
	for _, handle := range handles {
		c := &call{kind: "ack", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics/"+cl.w.topic+"/ack?receipt_handle="+handle, "", "")}
		c.onDone = func(response *httpapi.Response) {
			if response == nil {
				return
			}
			cl.w.leases.answered(c, handle, response.Status)
			cl.w.acks.answered(c, handle, response.Status, 1)
			switch response.Status {
			case http.StatusNoContent, http.StatusGone, http.StatusServiceUnavailable:
			default:
				cl.unexpected(c, response)
			}
		}
		cl.send(c)
		cl.w.leases.sent(c, []string{handle})
	}
}

func (cl *client) ackBatch(handles []string) { cl.ackBatchAttempt(handles, 1) }

// ackBatchAttempt sends a batch ack; the handles answered 503 are sent
// again as a smaller batch.
func (cl *client) ackBatchAttempt(handles []string, attempt int) {
	body := `{"receipt_handles":["` + strings.Join(handles, `","`) + `"]}`
	c := &call{kind: "ack-batch", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics/"+cl.w.topic+"/ack", "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		if cl.retryAck(response, attempt, func() { cl.ackBatchAttempt(handles, attempt+1) }) {
			return
		}
		if !cl.ackOutcomeOK(c, response) {
			return
		}
		var unavailable []string
		if response.Status == http.StatusOK {
			var err error
			if unavailable, err = cl.w.acks.answeredBatch(c, response, attempt); err != nil {
				cl.w.fail("client", "%s: %v", c.describe(), err)
				return
			}
		}
		if len(unavailable) > 0 && cl.retryAck(nil, attempt, func() { cl.ackBatchAttempt(unavailable, attempt+1) }) {
			return
		}
		cl.later(int64(cl.w.workloadRng.IntN(consumerThinkMsMax)), cl.consumeNext)
	}
	cl.send(c)
	cl.w.leases.sent(c, handles)
}

// retryAck schedules again (the next attempt of the same ack) when the
// answer was lost or was 503 and attempts remain, and reports whether it
// did.
func (cl *client) retryAck(response *httpapi.Response, attempt int, again func()) bool {
	lostOr503 := response == nil || response.Status == http.StatusServiceUnavailable
	if !lostOr503 || attempt >= ackAttemptsMax {
		return false
	}
	cl.w.acks.retries++
	cl.later(int64(attempt)*ackRetryPauseMs, again)
	return true
}

// ackOutcomeOK accepts what a correct server may answer to an ack under
// faults: success, 410 (lease lapsed, node restarted), 503, or nothing
// (the retries ran out).
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
