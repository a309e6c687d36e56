package host

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// benchProducers is how many clients produce at once, as in
// `narad bench --workers 16`.
const benchProducers = 16

// BenchmarkProduceSingle sends single 256-byte produces to one host on
// loopback from benchProducers keep-alive clients, without keys and with
// a key drawn from 1,000 (each key pins its partition), to a topic of 6
// partitions. Besides time and allocations (of the whole process,
// clients included), it reports the partition fsyncs and the records per
// sync round, read from the host's metrics.
func BenchmarkProduceSingle(b *testing.B) {
	for _, keys := range []int{0, 1000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			h := testHost(b)
			base := "http://" + h.Addr()
			created, err := http.Post(base+"/v1/topics", "application/json", bytes.NewReader([]byte(`{"name":"bench","partitions":6}`)))
			require.NoError(b, err)
			require.NoError(b, created.Body.Close())
			require.Equal(b, http.StatusCreated, created.StatusCode)
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchProducers}}
			payload := bytes.Repeat([]byte("x"), 256)
			before := storageCounts(b, base)
			b.ReportAllocs()
			b.SetParallelism((benchProducers + 1) / 2) // GOMAXPROCS is 2 on the machines this runs on
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					path := base + "/v1/topics/bench/produce"
					if keys > 0 {
						path += "?key=k" + strconv.Itoa(rand.IntN(keys))
					}
					postOnce(b, client, path, "application/octet-stream", bytes.NewReader(payload), http.StatusAccepted)
				}
			})
			b.StopTimer()
			after := storageCounts(b, base)
			require.Positive(b, after.rounds, "the host's metrics carry no sync round")
			b.ReportMetric((after.fsyncs-before.fsyncs)/float64(b.N), "fsyncs/op")
			if rounds := after.rounds - before.rounds; rounds > 0 {
				b.ReportMetric((after.records-before.records)/rounds, "records/round")
				b.ReportMetric((after.fsyncs-before.fsyncs)/rounds, "fsyncs/round")
			}
		})
	}
}

// postOnce posts body to path and fails the benchmark unless the answer
// is want.
func postOnce(b *testing.B, client *http.Client, path, contentType string, body io.Reader, want int) {
	response, err := client.Post(path, contentType, body)
	if err != nil {
		b.Error(err)
		return
	}
	_, _ = io.Copy(io.Discard, response.Body)
	_ = response.Body.Close()
	if response.StatusCode != want {
		b.Errorf("POST %s answered %d, want %d", path, response.StatusCode, want)
	}
}

// storageTotals are the host's partition fsyncs, sync rounds that made
// records durable, and those records, since it started.
type storageTotals struct{ fsyncs, rounds, records float64 }

var storageSeries = regexp.MustCompile(`(?m)^narad_storage_(fsyncs_total|round_records_count|round_records_sum) (\S+)$`)

func storageCounts(b *testing.B, base string) storageTotals {
	response, err := http.Get(base + "/metrics")
	require.NoError(b, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(b, err)
	require.NoError(b, response.Body.Close())
	var totals storageTotals
	for _, match := range storageSeries.FindAllStringSubmatch(string(body), -1) {
		value, err := strconv.ParseFloat(match[2], 64)
		require.NoError(b, err)
		switch match[1] {
		case "fsyncs_total":
			totals.fsyncs = value
		case "round_records_count":
			totals.rounds = value
		case "round_records_sum":
			totals.records = value
		}
	}
	return totals
}

// BenchmarkConsumeAck drains a 6-partition topic with benchProducers
// keep-alive clients, each doing a single consume (no wait) and the ack
// of its message, as `narad bench --consume` does. The records (256-byte
// payloads, b.N of them) are produced in batches before the timer starts.
// Time and allocations are of the whole process, clients included.
func BenchmarkConsumeAck(b *testing.B) {
	h := testHost(b)
	base := "http://" + h.Addr()
	created, err := http.Post(base+"/v1/topics", "application/json", bytes.NewReader([]byte(`{"name":"bench","partitions":6}`)))
	require.NoError(b, err)
	require.NoError(b, created.Body.Close())
	require.Equal(b, http.StatusCreated, created.StatusCode)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: benchProducers}}
	produceBatches(b, client, base+"/v1/topics/bench/produce", b.N)
	b.ReportAllocs()
	b.SetParallelism((benchProducers + 1) / 2)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			handle := consumeOnce(b, client, base+"/v1/topics/bench/consume")
			postOnce(b, client, base+"/v1/topics/bench/ack?receipt_handle="+url.QueryEscape(handle), "", nil, http.StatusNoContent)
		}
	})
}

// produceBatches produces count keyless 256-byte records in batches of
// up to 1,000 and fails the benchmark unless every batch is accepted.
func produceBatches(b *testing.B, client *http.Client, path string, count int) {
	line := `{"payload":"` + strings.Repeat("x", 256) + `"}` + "\n"
	for count > 0 {
		records := min(count, 1000)
		response, err := client.Post(path, "application/x-ndjson", strings.NewReader(strings.Repeat(line, records)))
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, response.Body)
		require.NoError(b, response.Body.Close())
		require.Equal(b, http.StatusAccepted, response.StatusCode)
		count -= records
	}
}

// consumedHandle finds a consumed message's receipt handle.
var consumedHandle = regexp.MustCompile(`"receipt_handle":"([^"]+)"`)

// consumeOnce consumes one message and returns its receipt handle; it
// fails the benchmark when there is none.
func consumeOnce(b *testing.B, client *http.Client, path string) string {
	response, err := client.Get(path)
	if err != nil {
		b.Error(err)
		return ""
	}
	body, err := io.ReadAll(response.Body)
	_ = response.Body.Close()
	match := consumedHandle.FindSubmatch(body)
	if err != nil || response.StatusCode != http.StatusOK || match == nil {
		b.Errorf("consume answered %d %q (%v)", response.StatusCode, body, err)
		return ""
	}
	return string(match[1])
}
