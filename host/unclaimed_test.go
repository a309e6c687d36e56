package host

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/node"
)

// unclaimedFixture is a host with one record in topic "queue", and a consume
// of it fed to the loop as a client's request would be.
func unclaimedFixture(t *testing.T) *Host {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"queue","partitions":3}`), 201, ""},
		{"produce", post("/v1/topics/queue/produce", "text/plain", "lost-and-found"), 202, ""},
	})
	return h
}

// consumeInput is a client's consume of "queue" with its reply channel.
func consumeInput(h *Host, reply chan msg.Reply) input {
	return input{id: h.loop.newRequestID(), request: msg.Consume{Topic: "queue", Partition: msg.PartitionNone}, reply: reply}
}

// requireRedeliveredAtOnce consumes "queue" over HTTP: the record whose
// answer nobody read is delivered again now (not after its visibility
// timeout), as its first delivery.
func requireRedeliveredAtOnce(t *testing.T, h *Host) {
	t.Helper()
	// The loop hands the records back at its next round (handBack), which
	// the consume below may otherwise overtake.
	require.Eventually(t, func() bool {
		_, metrics := call(t, h, get("/metrics"))
		return strings.Contains(metrics, "narad_consume_unclaimed_total 1\n")
	}, 10*time.Second, time.Millisecond, "the records are handed back")
	status, body := call(t, h, get("/v1/topics/queue/consume"))
	require.Equal(t, http.StatusOK, status, "the record is available again at once: %s", body)
	var m struct {
		DeliveryCount int `json:"delivery_count"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &m))
	require.Equal(t, 1, m.DeliveryCount, "the answer nobody read was no delivery")
	_, metrics := call(t, h, get("/metrics"))
	require.Contains(t, metrics, "narad_consume_unclaimed_total 1\n")
	// Both reservations count in narad_messages_consumed_total; the one
	// handed back counts in narad_messages_returned_total too, so that
	// their difference is the deliveries (metrics audit finding 3).
	require.Contains(t, metrics, `narad_messages_returned_total{topic="queue"} 1`+"\n")
	require.Equal(t, "2", consumedOf(metrics, "queue"))
}

// consumedOf sums a topic's narad_messages_consumed_total series in a
// scrape (its partitions), as a string.
func consumedOf(scrape, topic string) string {
	total := 0.0
	for _, line := range strings.Split(scrape, "\n") {
		if !strings.HasPrefix(line, "narad_messages_consumed_total{") || !strings.Contains(line, `topic="`+topic+`"`) {
			continue
		}
		fields := strings.Fields(line)
		value, err := strconv.ParseFloat(fields[len(fields)-1], 64)
		if err == nil {
			total += value
		}
	}
	return strconv.FormatFloat(total, 'f', -1, 64)
}

// A client that leaves in the round its consume is answered: the loop
// forgets the request before the reply leaves, and hands its records
// back instead of dropping the reply (they stayed leased for the
// visibility timeout, counted as a delivery that never happened).
func TestAConsumeAnsweredAfterItsClientLeftHandsItsRecordsBack(t *testing.T) {
	h := unclaimedFixture(t)
	done := make(chan struct{})
	h.loop.post(func(*node.Node) {
		in := consumeInput(h, make(chan msg.Reply, 1))
		h.loop.feed(in)
		h.loop.feed(input{id: in.id, cancel: true, reply: in.reply})
		close(done)
	})
	<-done
	requireRedeliveredAtOnce(t, h)
}

// A client that leaves just after its consume was answered, before it
// read the reply: the cancel finds the reply in the channel nobody reads
// and hands its records back.
func TestAConsumeAnswerNobodyReadHandsItsRecordsBack(t *testing.T) {
	h := unclaimedFixture(t)
	reply := make(chan msg.Reply, 1)
	in := consumeInput(h, reply)
	h.loop.post(func(*node.Node) { h.loop.feed(in) })
	require.Eventually(t, func() bool { return len(reply) == 1 }, 10*time.Second, time.Millisecond, "the consume is answered")
	h.loop.post(func(*node.Node) { h.loop.feed(input{id: in.id, cancel: true, reply: reply}) })
	requireRedeliveredAtOnce(t, h)
}

// A consume reply the reply budget refused: the handler hands it back
// through the backend, and its record is delivered again at once, as its
// first delivery.
func TestAConsumeReplyHandedBackIsDeliveredAgainAtOnce(t *testing.T) {
	h := unclaimedFixture(t)
	reply := h.backend.Do(t.Context(), msg.Consume{Topic: "queue", Partition: msg.PartitionNone})
	require.NoError(t, reply.Err)
	require.Len(t, reply.Result.(msg.ConsumeResult).Messages, 1)
	h.backend.HandBack(reply)
	requireRedeliveredAtOnce(t, h)
}
