package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sub --peek "reads every partition from its tail" (sub's help; api.md's
// CLI table: a read-only tail). A topic may grow (topic edit
// --partitions), and a record produced to a partition added while peek
// runs must be read too.
// The broker here grows orders from one partition to two after peek's
// first describe, and partition 1 then holds a record at offset 0. Peek
// took the partition list once at start; it now reads the stats again
// while idle.
func TestPeekFollowsPartitionsAddedWhileItRuns(t *testing.T) {
	var describes atomic.Int64
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/topics/orders":
			if describes.Add(1) == 1 {
				_, _ = io.WriteString(w, `{"name":"orders","partitions":1,"partition_stats":[
				  {"index":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"owner_node":"n1"}]}`)
				return
			}
			_, _ = io.WriteString(w, `{"name":"orders","partitions":2,"partition_stats":[
			  {"index":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,"owner_node":"n1"},
			  {"index":1,"oldest_offset":0,"next_offset":1,"high_watermark":1,"owner_node":"n1"}]}`)
		case "/v1/topics/orders/consume":
			query := r.URL.Query()
			if query.Get("partition") == "1" && query.Get("offset") == "0" {
				_, _ = io.WriteString(w, `{"topic":"orders","partition":1,"offset":0,"payload":"late partition",
				  "timestamp":1700000000,"timestamp_ms":1700000000000}`)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"error":"not found"}`)
		}
	}))
	defer server.Close()

	h := newHarness(t)
	// Peek reads the stats again after every idle sweep (400 ms); the
	// deadline only keeps a broken peek from hanging the
	// test, far above that on a loaded machine.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := h.runContext(ctx, "-s", server.URL, "sub", "orders", "--peek", "--max", "1")
	require.Equal(t, 0, code, "stderr:\n%s", h.stderr.String())
	assert.NoError(t, ctx.Err(), "peek found the record of the new partition before the deadline")
	assert.Contains(t, h.stdout.String(), "[p1 @0]", "the record of the partition added meanwhile is printed")
}
