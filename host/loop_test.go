package host

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShutdownUnderLoadKeepsEveryAcknowledgedRecord: producers keep
// sending while the host shuts down, so the loop stops with requests
// queued, handled and in a sync round. Every produce answered 202 is
// consumed after a restart on the same data.
func TestShutdownUnderLoadKeepsEveryAcknowledgedRecord(t *testing.T) {
	const producers, perProducer = 8, 60
	dir := t.TempDir()
	h := testHostAt(t, dir)
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"load","partitions":4}`), 201, ""}})
	var mu sync.Mutex
	acknowledged := map[string]bool{}
	var wg sync.WaitGroup
	started := make(chan struct{}, producers)
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				payload := fmt.Sprintf("p%d-%d", p, i)
				if i == perProducer/2 {
					started <- struct{}{}
				}
				resp, err := http.Post("http://"+h.Addr()+"/v1/topics/load/produce", "text/plain", strings.NewReader(payload))
				if err != nil {
					return // the server went away
				}
				resp.Body.Close()
				if resp.StatusCode == http.StatusAccepted {
					mu.Lock()
					acknowledged[payload] = true
					mu.Unlock()
				}
			}
		})
	}
	for range producers {
		<-started
	}
	require.NoError(t, h.Shutdown())
	wg.Wait()
	require.NotEmpty(t, acknowledged)

	h2 := testHostAt(t, dir)
	consumed := map[string]bool{}
	for range len(acknowledged) + producers*perProducer {
		status, body := call(t, h2, get("/v1/topics/load/consume"))
		if status == http.StatusNoContent {
			break
		}
		require.Equal(t, http.StatusOK, status, body)
		var m struct {
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		consumed[strings.Trim(string(m.Payload), `"`)] = true
	}
	for payload := range acknowledged {
		require.True(t, consumed[payload], "record %s was answered 202 before the shutdown and is gone", payload)
	}
}

// TestConsumeAndAckRoundsDoNotGather: rounds of consumes and acks have no
// sync to share, so the loop answers them without waiting in the gather
// window for more clients. Only the ticks that persist committed offsets
// (every 100 ms) may make such a round wait, so the waits stay far below
// the requests; before this rule nearly every round of several
// closed-loop consumers waited.
func TestConsumeAndAckRoundsDoNotGather(t *testing.T) {
	const records, consumers = 400, 8
	h := testHost(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"drain","partitions":4}`), 201, ""},
		{"batch", post("/v1/topics/drain/produce", "application/x-ndjson", strings.Repeat("{\"payload\":1}\n", records)), 202, ""},
	})
	before := gatherWaits(t, h)
	var requests atomic.Int64
	var wg sync.WaitGroup
	for range consumers {
		wg.Go(func() { requests.Add(drainForTest(t, h, "drain")) })
	}
	wg.Wait()
	waits := gatherWaits(t, h) - before
	t.Logf("%v of %d consume and ack requests waited in the gather window", waits, requests.Load())
	require.Positive(t, requests.Load())
	require.Less(t, waits*10, float64(requests.Load()), "%v of %d consume and ack requests waited in the gather window", waits, requests.Load())
}

// drainForTest consumes and acks until a consume finds nothing, and
// returns how many requests it sent.
func drainForTest(t *testing.T, h *Host, topic string) int64 {
	base := "http://" + h.Addr() + "/v1/topics/" + topic
	for sent := int64(0); ; sent += 2 {
		resp, err := http.Get(base + "/consume")
		if !assert.NoError(t, err) {
			return sent
		}
		var message struct {
			ReceiptHandle string `json:"receipt_handle"`
		}
		decodeErr := json.NewDecoder(resp.Body).Decode(&message)
		resp.Body.Close()
		if resp.StatusCode == http.StatusNoContent || !assert.NoError(t, decodeErr) {
			return sent + 1
		}
		acked, err := http.Post(base+"/ack?receipt_handle="+url.QueryEscape(message.ReceiptHandle), "", nil)
		if !assert.NoError(t, err) {
			return sent + 1
		}
		acked.Body.Close()
		assert.Equal(t, http.StatusNoContent, acked.StatusCode)
	}
}

var gatherWaitsSeries = regexp.MustCompile(`(?m)^narad_loop_gather_waits_total (\S+)$`)

// gatherWaits reads narad_loop_gather_waits_total from the host's metrics.
func gatherWaits(t *testing.T, h *Host) float64 {
	_, body := call(t, h, get("/metrics"))
	match := gatherWaitsSeries.FindStringSubmatch(body)
	require.NotNil(t, match, "no narad_loop_gather_waits_total in the metrics")
	value, err := strconv.ParseFloat(match[1], 64)
	require.NoError(t, err)
	return value
}

// TestEachInputIsHandledAtItsOwnTime: the loop reads its clock before
// each input it feeds, not once per round, so a record handled late in a
// long round is not stamped with the round's start (nor a delay child's
// copy released against a stale clock). The clock here runs 2 ms ahead at
// every read: each produce of a burst that shares rounds still gets a
// time of its own.
func TestEachInputIsHandledAtItsOwnTime(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	var reads atomic.Int64
	opts.clockForTests = func(clock func() time.Time) func() time.Time {
		return func() time.Time { return clock().Add(time.Duration(reads.Add(1)) * 2 * time.Millisecond) }
	}
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"stamps","partitions":3}`), 201, ""}})
	const producers = 24
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			status, _ := call(t, h, post("/v1/topics/stamps/produce?partition=0", "text/plain", "x"))
			assert.Equal(t, http.StatusAccepted, status)
		})
	}
	wg.Wait()
	stamps := map[int64]bool{}
	for offset := range producers {
		status, body := call(t, h, get(fmt.Sprintf("/v1/topics/stamps/consume?partition=0&offset=%d", offset)))
		require.Equal(t, http.StatusOK, status, body)
		var record struct {
			TimestampMs int64 `json:"timestamp_ms"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &record))
		require.False(t, stamps[record.TimestampMs], "offset %d shares its time %d with another record of the burst", offset, record.TimestampMs)
		stamps[record.TimestampMs] = true
	}
}
