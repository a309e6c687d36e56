package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	jsonMessage = `{"topic":"orders","partition":1,"offset":42,"key":"user-7","payload":{"id":7},
	  "timestamp":1700000000,"timestamp_ms":1700000000123,"receipt_handle":"1:42:3","delivery_count":1}`
	textMessage = `{"topic":"orders","partition":0,"offset":5,"payload":"hello world",
	  "timestamp":1700000001,"receipt_handle":"0:5:1"}`
	binaryMessage = `{"topic":"orders","partition":2,"offset":9,"payload":"AAEC/w==","payload_encoding":"base64",
	  "timestamp":1700000002,"timestamp_ms":1700000002500,"receipt_handle":"2:9:1"}`
)

const consumeRoute = "GET /v1/topics/orders/consume"
const ackRoute = "POST /v1/topics/orders/ack"

func receiptHandles(t *testing.T, requests []seenRequest) []string {
	t.Helper()
	var handles []string
	for _, request := range requests {
		query, err := url.ParseQuery(request.Query)
		require.NoError(t, err)
		handles = append(handles, query.Get("receipt_handle"))
	}
	return handles
}

func TestSubPrintsAndAcks(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).
		on(consumeRoute, reply{200, jsonMessage}, reply{204, ""}, reply{200, textMessage}).
		on(ackRoute, reply{204, ""})
	h.againstOK(broker, "sub", "orders", "--max", "2")
	assert.Equal(t, "[p1 @42] key=user-7 22:13:20.123 {\"id\":7}\n"+
		"[p0 @5] 22:13:21.000 hello world\n", h.stdout.String())
	assert.Equal(t, "consuming orders (Ctrl-C to stop)\n2 message(s)\n", h.stderr.String())
	consumes := broker.seen(consumeRoute)
	require.Len(t, consumes, 3)
	assert.Equal(t, "wait=10s", consumes[0].Query)
	assert.Equal(t, []string{"1:42:3", "0:5:1"}, receiptHandles(t, broker.seen(ackRoute)))
}

func TestSubFlagsReachTheRequest(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{200, textMessage})
	h.againstOK(broker, "sub", "orders", "--max", "1", "--partition", "0", "--wait", "500ms", "--no-ack", "--raw")
	assert.Equal(t, "partition=0&wait=500ms", broker.seen(consumeRoute)[0].Query)
	assert.Empty(t, broker.seen(ackRoute), "--no-ack sends no ack")
	assert.Equal(t, "hello world\n", h.stdout.String(), "--raw prints the payload only")
}

func TestSubBinaryPayload(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{200, binaryMessage}).on(ackRoute, reply{204, ""})
	h.againstOK(broker, "sub", "orders", "--max", "1")
	want := "[p2 @9] 22:13:22.500 (binary, 4 bytes)\n" + hex.Dump([]byte{0, 1, 2, 0xff})
	assert.Equal(t, want, h.stdout.String())
	h.againstOK(broker, "sub", "orders", "--max", "1", "--raw")
	assert.Equal(t, "\x00\x01\x02\xff\n", h.stdout.String())
}

func TestSubStyleFollowsTerminalAndNoColor(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage}).on(ackRoute, reply{204, ""})
	h.app.stdoutIsTerminal = true
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.Equal(t, "\x1b[2m[p1 @42]\x1b[0m key=\x1b[1muser-7\x1b[0m \x1b[2m22:13:20.123\x1b[0m {\"id\":7}\n", h.stdout.String())
	h.env["NO_COLOR"] = "1"
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.NotContains(t, h.stdout.String(), "\x1b[")
	h.app.stdoutIsTerminal = false
	delete(h.env, "NO_COLOR")
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.NotContains(t, h.stdout.String(), "\x1b[")
}

func TestSubLapsedLeaseIsReported(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage}).
		on(ackRoute, reply{410, `{"error":"receipt handle is stale"}`})
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.Contains(t, h.stderr.String(), "lease lapsed before ack (410) — message may redeliver\n")
	assert.Len(t, broker.seen(ackRoute), 1, "a 410 is not retried")
}

func TestSubRetriesAFailedAck(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage}).
		on(ackRoute, reply{503, `{"error":"partition owner is down"}`}, reply{204, ""})
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.Equal(t, []string{"1:42:3", "1:42:3"}, receiptHandles(t, broker.seen(ackRoute)))
	assert.NotContains(t, h.stderr.String(), "ack failed")
}

func TestSubFatalConsumeError(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{404, `{"error":"topic not found"}`})
	assert.Equal(t, 1, h.against(broker, "sub", "orders"))
	assert.Equal(t, "consuming orders (Ctrl-C to stop)\nnarad: http 404: topic not found\n", h.stderr.String(),
		"a refused first consume prints its error, not a count of nothing")
	assert.Len(t, broker.seen(consumeRoute), 1, "a 4xx is not retried")
}

func TestSubRetriesRetryableConsumeErrors(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, reply{503, `{"error":"owner down"}`}, reply{200, textMessage}).
		on(ackRoute, reply{204, ""})
	h.againstOK(broker, "sub", "orders", "--max", "1")
	assert.Contains(t, h.stderr.String(), "consume failed: http 503: owner down (retrying in 1s)")
	assert.Len(t, broker.seen(consumeRoute), 2)
}

func TestSubFlagErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--from", "3"}, "--from needs --peek"},
		{[]string{"--from", "3", "--partition", "1"}, "--from needs --peek"},
		{[]string{"--peek", "--from", "3"}, "--from needs --partition"},
		{[]string{"--peek", "--partition", "0", "--from", "-1"}, "--from must not be negative"},
		{[]string{"--max", "-1"}, "--max must not be negative"},
		{[]string{"--wait", "-1s"}, "--wait must not be negative"},
	}
	for _, tc := range cases {
		h := newHarness(t)
		broker := newFakeBroker(t)
		assert.Equal(t, 2, h.against(broker, append([]string{"sub", "orders"}, tc.args...)...), "%v", tc.args)
		assert.Contains(t, h.stderr.String(), tc.want, "%v", tc.args)
		assert.Empty(t, broker.seen(""))
	}
}

const twoPartitionStats = `{"name":"orders","partitions":2,"partition_stats":[
  {"index":0,"oldest_offset":0,"next_offset":5,"high_watermark":5,"owner_node":"n1"},
  {"index":1,"oldest_offset":0,"next_offset":42,"high_watermark":42,"owner_node":"n2"}]}`

// twoPartitionStatsGrown is twoPartitionStats a record later on each
// partition.
const twoPartitionStatsGrown = `{"name":"orders","partitions":2,"partition_stats":[
  {"index":0,"oldest_offset":0,"next_offset":6,"high_watermark":6,"owner_node":"n1"},
  {"index":1,"oldest_offset":0,"next_offset":43,"high_watermark":43,"owner_node":"n2"}]}`

func TestSubPeekStartsAtTheTail(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, twoPartitionStats}, reply{200, twoPartitionStatsGrown}).
		on(consumeRoute, reply{204, ""}, reply{204, ""}, reply{200, jsonMessage})
	h.againstOK(broker, "sub", "orders", "--peek", "--max", "1")
	reads := broker.seen(consumeRoute)
	require.GreaterOrEqual(t, len(reads), 3)
	assert.Equal(t, "offset=5&partition=0", reads[0].Query, "the first sweep reads one partition at its tail: may the caller read?")
	assert.Equal(t, "offset=5&partition=0", reads[1].Query, "partition 0 starts at its high watermark")
	assert.Equal(t, "offset=42&partition=1", reads[2].Query, "partition 1 starts at its high watermark")
	assert.Equal(t, "[p1 @42] key=user-7 22:13:20.123 {\"id\":7}\n", h.stdout.String())
	assert.Empty(t, broker.seen(ackRoute), "peek takes no leases and sends no acks")
	assert.Contains(t, h.stderr.String(), "1 message(s)\n")
}

func TestSubPeekFromOffsetAndSkipsAgedOut(t *testing.T) {
	h := newHarness(t)
	stats := `{"name":"orders","partition_stats":[{"index":1,"oldest_offset":41,"high_watermark":43}]}`
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, stats}).
		on(consumeRoute, reply{410, `{"error":"offset 3 aged out of retention (oldest retained: 41)"}`},
			reply{200, jsonMessage})
	h.againstOK(broker, "sub", "orders", "--peek", "--partition", "1", "--from", "3", "--max", "1")
	reads := broker.seen(consumeRoute)
	require.Len(t, reads, 2)
	assert.Equal(t, "offset=3&partition=1", reads[0].Query)
	assert.Equal(t, "offset=41&partition=1", reads[1].Query, "a 410 jumps to the oldest retained offset")
	for _, request := range broker.seen("GET /v1/topics/orders") {
		assert.Equal(t, "partition=1", request.Query)
	}
}

func TestSubInterruptIsANormalEnd(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker := newFakeBroker(t).on(consumeRoute, reply{200, textMessage}, reply{204, ""}).on(ackRoute, reply{204, ""})
	broker.onRequest = func(count int) {
		if count == 3 { // consume, ack, then the next consume is interrupted
			cancel()
		}
	}
	code := h.runContext(ctx, "-s", broker.server.URL, "sub", "orders")
	assert.Equal(t, 0, code, h.stderr.String())
	assert.Equal(t, "consuming orders (Ctrl-C to stop)\n1 message(s)\n", h.stderr.String())
	assert.Equal(t, "[p0 @5] 22:13:21.000 hello world\n", h.stdout.String())
}

// sub gives up, exit 1, on a failure no retry can mend: a certificate the
// client does not trust, a 200 whose body is not the API's JSON. It
// retried them every second until interrupted, then exited 0 (review
// finding). The deadline only bounds the test: sub must end long before.
func TestSubEndsOnAPermanentFailure(t *testing.T) {
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer tlsServer.Close()
	garbage := newFakeBroker(t).on("GET /v1/topics/t/consume", reply{status: http.StatusOK, body: "<html>proxy login</html>"})

	for name, server := range map[string]string{"untrusted TLS certificate": tlsServer.URL, "undecodable 200": garbage.server.URL} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code := h.runContext(ctx, "-s", server, "sub", "t", "--max", "1")
			assert.NoError(t, ctx.Err(), "sub gave up on its own, not interrupted; stderr:\n%s", h.stderr.String())
			assert.Equal(t, exitError, code, "stderr:\n%s", h.stderr.String())
		})
	}
}

// Property: a sub that waits less than the empty pause (--wait 0) pauses
// after each empty answer instead of asking again at once: in half a
// second it sends a handful of consumes, where it sent thousands.
func TestSubWithoutWaitPausesAfterAnEmptyAnswer(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders/consume", reply{status: http.StatusNoContent})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	h.runContext(ctx, "-s", broker.server.URL, "sub", "orders", "--wait", "0")
	consumes := len(broker.seen("GET /v1/topics/orders/consume"))
	require.Positive(t, consumes)
	require.LessOrEqual(t, consumes, int(500*time.Millisecond/emptyPause)+1, "one consume per pause at most")
}

// Property: a peek interrupted while every replay read fails exits
// non-zero, as a queue sub does, and prints at most one failure line per
// second, not one per partition and sweep.
func TestSubPeekInterruptedWhileFailingExitsNonZero(t *testing.T) {
	h := newHarness(t)
	ownersDown := `{"name":"orders","partitions":2,"partition_stats":[
	  {"index":0,"available":false,"owner_node":"n1"},{"index":1,"available":false,"owner_node":"n2"}]}`
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, twoPartitionStats}, reply{200, ownersDown}).
		on(consumeRoute, reply{503, `{"error":"owner down"}`})
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	code := h.runContext(ctx, "-s", broker.server.URL, "sub", "orders", "--peek")
	require.Equal(t, 1, code, "stderr:\n%s", h.stderr)
	require.Contains(t, h.stderr.String(), "stopped while replays were failing")
	failures := strings.Count(h.stderr.String(), "failed: ")
	require.Positive(t, failures)
	require.LessOrEqual(t, failures, 2, "one line a second at most:\n%s", h.stderr)
	require.Greater(t, len(broker.seen(consumeRoute)), failures, "the reads went on meanwhile")
}

// closedPipe is an output whose reader has gone: every write fails with
// EPIPE, as one to `head` after it exited.
type closedPipe struct{}

func (closedPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

// TestSubReleasesTheMessageItCouldNotPrint: when the output closes
// (`narad sub | head -1`), the message taken but not printed is released
// for redelivery at once (a nack), not left leased for the visibility
// timeout nor acked, and the command ends cleanly.
func TestSubReleasesTheMessageItCouldNotPrint(t *testing.T) {
	h := newHarness(t)
	h.app.stdout = closedPipe{}
	broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage}).on(ackRoute, reply{204, ""})
	h.againstOK(broker, "sub", "orders")
	acks := broker.seen(ackRoute)
	require.Len(t, acks, 1, "one release, no ack")
	assert.Equal(t, "extend=0&receipt_handle=1%3A42%3A3", acks[0].Query)
	assert.Len(t, broker.seen(consumeRoute), 1, "the consumer stopped")
	assert.Contains(t, h.stderr.String(), "output closed; p1 @42 was not printed and is delivered again")
	assert.Contains(t, h.stderr.String(), "0 message(s)")
}

// TestSubWithoutAcksReleasesNothing: with --no-ack nothing was to be
// acknowledged, so a message it could not print is left as it is.
func TestSubWithoutAcksReleasesNothing(t *testing.T) {
	h := newHarness(t)
	h.app.stdout = closedPipe{}
	broker := newFakeBroker(t).on(consumeRoute, reply{200, jsonMessage})
	h.againstOK(broker, "sub", "orders", "--no-ack")
	assert.Empty(t, broker.seen(ackRoute))
}

// TestAnIdlePeekReadsOnlyTheStats: while no partition has records past
// its cursor, a peek reads the topic's stats once per pause and replays
// nothing (it read every partition at each pause: about 270 reads a
// second on 108 partitions) but the one read at the start that checks
// the caller may read the topic; a partition whose end moves is the only
// one read.
func TestAnIdlePeekReadsOnlyTheStats(t *testing.T) {
	h := newHarness(t)
	var stats strings.Builder
	stats.WriteString(`{"name":"orders","partitions":8,"partition_stats":[`)
	for i := range 8 {
		if i > 0 {
			stats.WriteString(",")
		}
		fmt.Fprintf(&stats, `{"index":%d,"oldest_offset":0,"next_offset":3,"high_watermark":3,"owner_node":"n1"}`, i)
	}
	stats.WriteString("]}")
	grown := strings.Replace(stats.String(), `{"index":5,"oldest_offset":0,"next_offset":3,"high_watermark":3`,
		`{"index":5,"oldest_offset":0,"next_offset":4,"high_watermark":4`, 1)
	message := `{"topic":"orders","partition":5,"offset":3,"payload":"late","timestamp":1700000000}`
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, stats.String()}, reply{200, stats.String()},
		reply{200, stats.String()}, reply{200, grown}).on(consumeRoute, reply{204, ""}, reply{200, message})
	h.againstOK(broker, "sub", "orders", "--peek", "--max", "1")
	reads := broker.seen(consumeRoute)
	require.Len(t, reads, 2, "the check at the start, then only the partition whose end moved was read")
	assert.Equal(t, "offset=3&partition=0", reads[0].Query, "the check: one partition at its tail")
	assert.Equal(t, "offset=3&partition=5", reads[1].Query)
	assert.Len(t, broker.seen("GET /v1/topics/orders"), 4, "one read of the stats at the start and after each pause")
	assert.Equal(t, "[p5 @3] 22:13:20.000 late\n", h.stdout.String())
}

// Any user may read a topic's stats, but a replay read needs consume on
// the topic. A peek of an idle topic by a user without the grant read
// only the stats, so it waited in silence until a record arrived, and
// exited 0 when interrupted (review finding). It must end at once with
// the 403. The deadline only bounds the test.
func TestPeekWithoutTheConsumeGrantEndsAtOnce(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, twoPartitionStats}).
		on(consumeRoute, reply{403, `{"error":"user \"none\" has no consume grant on topic \"orders\""}`})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	code := h.runContext(ctx, "-s", broker.server.URL, "sub", "orders", "--peek")
	require.NoError(t, ctx.Err(), "peek ended on its own; stderr:\n%s", h.stderr)
	assert.Equal(t, exitError, code, "stderr:\n%s", h.stderr)
	assert.Contains(t, h.stderr.String(), "http 403: user \"none\" has no consume grant")
}

// sub --peek says on stderr which offsets a 410 made it skip, and why, one
// line per run (it skipped them without a word), and goes on reading; a
// run still open when the peek ends is said too.
func TestSubPeekSaysWhatItSkipped(t *testing.T) {
	h := newHarness(t)
	stats := `{"name":"orders","partition_stats":[{"index":1,"oldest_offset":41,"high_watermark":50}]}`
	unreadable := func(offset int) reply {
		return reply{410, fmt.Sprintf(`{"error":"offset %d is unreadable (corrupt record skipped by recovery)"}`, offset)}
	}
	message := func(offset int) reply {
		return reply{200, fmt.Sprintf(`{"topic":"orders","partition":1,"offset":%d,"payload":"m%d","timestamp_ms":1700000000000}`, offset, offset)}
	}
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, stats}).
		on(consumeRoute, reply{410, `{"error":"offset 3 aged out of retention (oldest retained: 41)"}`},
			message(41), unreadable(42), unreadable(43), message(44))
	h.againstOK(broker, "sub", "orders", "--peek", "--partition", "1", "--from", "3", "--max", "2")
	assert.Equal(t, "[p1 @41] 22:13:20.000 m41\n[p1 @44] 22:13:20.000 m44\n", h.stdout.String())
	assert.Contains(t, h.stderr.String(), "p1: skipped 38 offset(s) [3, 41): aged out of retention\n"+
		"p1: skipped 2 offset(s) [42, 44): unreadable (corrupt, skipped by recovery)\n")

	h = newHarness(t)
	broker = newFakeBroker(t).on("GET /v1/topics/orders", reply{200, stats}).
		on(consumeRoute, message(41), unreadable(42))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker.onRequest = func(count int) {
		if len(broker.seen(consumeRoute)) == 4 {
			cancel()
		}
	}
	assert.Equal(t, 0, h.runContext(ctx, "-s", broker.server.URL, "sub", "orders", "--peek", "--partition", "1", "--from", "41"),
		"a skip leaves the exit status as documented: an interrupt is a normal end")
	assert.Regexp(t, `\np1: skipped [23] offset\(s\) \[42, 4[45]\): unreadable \(corrupt, skipped by recovery\)\n`, h.stderr.String(),
		"the run open at the interrupt is said (the read the interrupt cut may have landed or not)")
}
