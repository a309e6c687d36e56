package sim

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/httpapi"
)

// TestQueuePendingNamesThePartitionNotEmptied: the emptied check reads
// the committed offset, the high watermark, what is in flight and
// whether the owner answered, per partition; an answer it cannot read
// is no answer (the check asks again).
func TestQueuePendingNamesThePartitionNotEmptied(t *testing.T) {
	describe := func(body string) *httpapi.Response {
		return &httpapi.Response{Status: http.StatusOK, Body: []byte(body)}
	}
	emptied := `{"partition_stats":[{"index":0,"high_watermark":5,"committed_offset":5,"in_flight":0,"available":true,"owner_node":"n1"}]}`
	pending, answered := queuePending(describe(emptied))
	require.True(t, answered)
	require.Empty(t, pending)

	for body, want := range map[string]string{
		`{"partition_stats":[{"index":0,"high_watermark":5,"committed_offset":5,"in_flight":0,"available":true},
			{"index":1,"high_watermark":9,"committed_offset":7,"in_flight":0,"available":true,"owner_node":"n2"}]}`: "partition 1 at n2: available true, committed 7 of 9, 0 in flight",
		`{"partition_stats":[{"index":0,"high_watermark":5,"committed_offset":4,"in_flight":1,"available":true,"owner_node":"n1"}]}`: "partition 0 at n1: available true, committed 4 of 5, 1 in flight",
		`{"partition_stats":[{"index":0,"available":false,"owner_node":"n3"}]}`:                                                      "partition 0 at n3: available false, committed 0 of 0, 0 in flight",
	} {
		pending, answered := queuePending(describe(body))
		require.True(t, answered)
		require.Equal(t, want, pending)
	}
	for _, response := range []*httpapi.Response{nil, {Status: http.StatusServiceUnavailable}, describe(`{"partition_stats":[]}`), describe(`not json`)} {
		_, answered := queuePending(response)
		require.False(t, answered)
	}
}
