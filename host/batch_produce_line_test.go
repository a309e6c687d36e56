package host

import (
	"net/http"
	"strings"
	"testing"
)

// docs/api.md#batch-produce: "A `400` names the line." A record whose
// partition is out of range, or whose key is over 4 KiB, is refused by the
// node (node/produce.go checkRecord) with a message that names neither the
// record nor its NDJSON line, so a client cannot tell which of up to 1,000
// records to fix.
func TestBatchProduceNodeRefusalNamesTheLine(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{{name: "create", apiCall: postJSON("/v1/topics", `{"name":"orders"}`), status: http.StatusCreated}})
	t.Run("partition", func(t *testing.T) {
		runSteps(t, h, []step{{name: "partition out of range on line 2",
			apiCall: post("/v1/topics/orders/produce", "application/x-ndjson",
				"{\"payload\":1}\n{\"partition\":99,\"payload\":2}\n"),
			status: http.StatusBadRequest, want: "line 2"}})
	})
	t.Run("key", func(t *testing.T) {
		runSteps(t, h, []step{{name: "key over 4 KiB on line 3",
			apiCall: post("/v1/topics/orders/produce", "application/x-ndjson",
				"{\"payload\":1}\n\n{\"key\":\""+strings.Repeat("k", 4097)+"\",\"payload\":2}\n"),
			status: http.StatusBadRequest, want: "line 3"}})
	})
}
