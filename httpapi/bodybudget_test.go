package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// startBudgetServer serves NewHandler with cfg over loopback.
func startBudgetServer(t *testing.T, cfg CodecConfig) (*httptest.Server, *prometheus.Registry) {
	t.Helper()
	registry := prometheus.NewRegistry()
	handler := NewHandler(&tableBackend{}, NewCodec(cfg), registry, slog.New(slog.DiscardHandler))
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)
	return server, registry
}

// announce opens a connection and sends the head of a batch produce that
// announces announced body bytes, then sent of them.
func announce(t *testing.T, server *httptest.Server, announced int, sent []byte) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", server.Listener.Addr().String())
	require.NoError(t, err)
	t.Cleanup(func() { _ = conn.Close() })
	head := fmt.Sprintf("POST /v1/topics/t/produce HTTP/1.1\r\nHost: test\r\nContent-Type: application/x-ndjson\r\nContent-Length: %d\r\n\r\n", announced)
	_, err = conn.Write(append([]byte(head), sent...))
	require.NoError(t, err)
	return conn
}

// gaugeReaches waits (bounded) until the unlabelled gauge name equals
// want; the wait only synchronizes with the server's goroutines.
func gaugeReaches(t *testing.T, registry *prometheus.Registry, name string, want float64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for series(t, registry, name)[""] != want {
		require.True(t, time.Now().Before(deadline), "%s stays at %v, want %v", name, series(t, registry, name)[""], want)
		time.Sleep(5 * time.Millisecond)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return stats.HeapInuse
}

// Bodies announced but not sent hold only a first buffer of 4 KiB, which
// grows with the bytes that arrive: twenty requests announcing 16 MiB
// each and sending one byte hold 80 KiB of the budget, and the heap does
// not grow by the announced 320 MiB. (A first buffer of 64 KiB let 4,096
// connections that sent only a header hold the default budget.)
func TestAnnouncedBodiesHoldOnlyWhatArrived(t *testing.T) {
	server, registry := startBudgetServer(t, DefaultCodecConfig())
	const requests = 20
	const announced = 16 << 20
	before := heapInUse()
	for range requests {
		announce(t, server, announced, []byte("{"))
	}
	gaugeReaches(t, registry, "narad_http_request_body_bytes_in_flight", requests*4<<10)
	grown := int64(heapInUse()) - int64(before)
	t.Logf("%d requests announcing %d bytes each: heap grew by %d bytes", requests, announced, grown)
	require.Less(t, grown, int64(32<<20), "the heap must not hold the announced lengths")
}

// Past the budget of body bytes in flight a request gets 503 with
// Retry-After, and the bytes are given back once requests end.
func TestBodyBudgetRefusesPastItsCap(t *testing.T) {
	cfg := DefaultCodecConfig()
	cfg.BodyBytesInFlightMax = cfg.BatchBodyBytesMax
	server, registry := startBudgetServer(t, cfg)
	// 9 MiB received of 16 MiB announced: the buffer grew to the
	// announced length and the byte that finds the end, which the budget
	// now holds whole.
	announced := int(cfg.BatchBodyBytesMax) - 2
	stalled := announce(t, server, announced, []byte(strings.Repeat(" ", 9<<20)))
	gaugeReaches(t, registry, "narad_http_request_body_bytes_in_flight", float64(announced+1))

	body := strings.Repeat(`{"payload":"`+strings.Repeat("x", 6_000)+`"}`+"\n", 1_000)
	response, err := server.Client().Post(server.URL+"/v1/topics/t/produce", "application/x-ndjson", strings.NewReader(body))
	require.NoError(t, err)
	data, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.Equal(t, http.StatusServiceUnavailable, response.StatusCode, "%s", data)
	require.Equal(t, "1", response.Header.Get("Retry-After"))
	require.Contains(t, string(data), "request body bytes in flight")
	require.Equal(t, 1.0, series(t, registry, "narad_http_request_body_budget_refused_total")[""])

	require.NoError(t, stalled.Close())
	gaugeReaches(t, registry, "narad_http_request_body_bytes_in_flight", 0)
	response, err = server.Client().Post(server.URL+"/v1/topics/t/produce", "application/x-ndjson", strings.NewReader(body))
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.NotEqual(t, http.StatusServiceUnavailable, response.StatusCode, "the budget is free again")
	require.Equal(t, 1.0, series(t, registry, "narad_http_request_body_budget_refused_total")[""])
}

// reservations records every size readGrowing reserves.
type reservations struct{ sizes []int64 }

func (r *reservations) reserve(total int64) bool {
	r.sizes = append(r.sizes, total)
	return true
}

// A body of its announced length is read into one buffer of that length
// and the byte that finds the end: never grown, never copied. A body
// longer than announced (a reader that does not stop at the length)
// still reads whole.
func TestBodyOfAnnouncedLengthReadsIntoOneBuffer(t *testing.T) {
	payload := strings.Repeat("x", 256)
	reserved := &reservations{}
	body, err := readGrowing(strings.NewReader(payload), int64(len(payload)), 1<<20, reserved)
	require.NoError(t, err)
	require.Equal(t, payload, string(body))
	require.Equal(t, []int64{257}, reserved.sizes)
	require.Equal(t, 257, cap(body))

	longer := &reservations{}
	body, err = readGrowing(strings.NewReader(payload+"yz"), int64(len(payload)), 1<<20, longer)
	require.NoError(t, err)
	require.Equal(t, payload+"yz", string(body))
	require.Equal(t, []int64{257, 514}, longer.sizes)
}

// cappedReservations refuses to reserve more than its cap, as a budget of
// exactly one largest body would.
type cappedReservations struct{ capBytes, most int64 }

func (r *cappedReservations) reserve(total int64) bool {
	r.most = max(r.most, total)
	return total <= r.capBytes
}

// A body that ends exactly at its cap, read from a reader that finds the
// end only on the read after its last bytes (a chunked body, or one whose
// length was not announced), needs a reservation of its cap, no more: a
// budget of one largest body must always admit one. One byte more is over
// the cap.
func TestBodyAtItsCapFitsABudgetOfItsCap(t *testing.T) {
	for _, bytesMax := range []int64{readStartBytes, 3*readStartBytes + 5, 16 << 20} {
		for _, announced := range []bool{false, true} {
			payload := strings.Repeat("x", int(bytesMax))
			contentLength := int64(0)
			if announced {
				contentLength = bytesMax
			}
			budget := &cappedReservations{capBytes: bytesMax}
			body, err := readGrowing(strings.NewReader(payload), contentLength, bytesMax, budget)
			require.NoError(t, err, "cap %d, announced %v", bytesMax, announced)
			require.Len(t, body, int(bytesMax))
			require.LessOrEqual(t, budget.most, bytesMax, "cap %d: the largest reservation", bytesMax)

			over := &cappedReservations{capBytes: bytesMax}
			_, err = readGrowing(strings.NewReader(payload+"y"), contentLength, bytesMax, over)
			require.ErrorIs(t, err, errBodyOverCap, "cap %d, announced %v: one byte over", bytesMax, announced)
			require.LessOrEqual(t, over.most, bytesMax)
		}
	}
}

// A chunked body one byte over its cap is 413, also at the smallest body
// budget the config accepts (one largest batch): the byte that tells it
// from a body at its cap is read aside, not charged to the budget, which
// turned the permanent 413 into a 503 the client retried forever (review
// finding).
func TestAChunkedBodyOverItsCapIs413AtTheSmallestBudget(t *testing.T) {
	cfg := DefaultCodecConfig()
	cfg.BodyBytesInFlightMax = cfg.BatchBodyBytesMax
	server, registry := startBudgetServer(t, cfg)

	body := strings.Repeat(" ", int(cfg.BatchBodyBytesMax)+1)
	// io.MultiReader hides the length: the client sends the body chunked.
	request, err := http.NewRequest(http.MethodPost, server.URL+"/v1/topics/t/produce", io.MultiReader(strings.NewReader(body)))
	require.NoError(t, err)
	request.Header.Set("Content-Type", "application/x-ndjson")
	response, err := server.Client().Do(request)
	require.NoError(t, err)
	data, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close())
	require.Equal(t, http.StatusRequestEntityTooLarge, response.StatusCode, "%s", data)
	require.Zero(t, series(t, registry, "narad_http_request_body_budget_refused_total")[""], "the budget refused a lone request")
}

// A request without a body (Content-Length: 0) reads nothing: no buffer
// is allocated for it, since only bodies charge the body budget.
func TestReadBodyOfAnEmptyRequestAllocatesNothing(t *testing.T) {
	request := httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce", http.NoBody)
	request.ContentLength = 0
	allocations := testing.AllocsPerRun(100, func() {
		body, failed := readBody(request, 1<<20)
		require.Nil(t, failed)
		require.Empty(t, body)
	})
	require.Zero(t, allocations)
}
