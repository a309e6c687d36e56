package host

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAFailedNodeNamesNoFileInItsAnswers: docs/api.md#conventions promises
// that an error message never names a file on disk, and the loop answers
// the requests pending at a failed persist "node storage failed; retry"
// for that reason (the log line names the files). But once the loop has
// failed, backend.Ready and backend.send hand the raw persist error to
// the HTTP layer: /readyz and every later request (a produce here) answer
// 503 with the absolute path of the file that failed in the body.
func TestAFailedNodeNamesNoFileInItsAnswers(t *testing.T) {
	dataDir := t.TempDir()
	h := testHostAt(t, dataDir)
	status, body := call(t, h, postJSON("/v1/topics", `{"name":"orders"}`))
	require.Equal(t, 201, status, body)
	status, body = call(t, h, post("/v1/topics/orders/produce?partition=0", "text/plain", "x"))
	require.Equal(t, 202, status, body)
	status, body = call(t, h, get("/v1/topics/orders/consume?partition=0&wait=1s"))
	require.Equal(t, 200, status, body)
	handle := regexp.MustCompile(`"receipt_handle":"([^"]+)"`).FindStringSubmatch(body)
	require.NotNil(t, handle, body)

	// The partition's directory becomes a file: the next committed-offset
	// write (after the ack) fails, and with it the node.
	partitionDir := filepath.Join(dataDir, "topics", "orders", "p00000")
	require.NoError(t, os.Rename(partitionDir, partitionDir+".moved"))
	require.NoError(t, os.WriteFile(partitionDir, []byte("not a directory"), 0o644))
	call(t, h, post("/v1/topics/orders/ack?receipt_handle="+handle[1], "", ""))

	deadline := time.Now().Add(30 * time.Second) // the commit persist runs within a second; the bound only stops a hang
	for status == 200 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		status, body = call(t, h, get("/readyz"))
	}
	require.Equal(t, 503, status, "the node did not fail: %s", body)
	require.NotContains(t, body, dataDir, "/readyz names a file on disk")

	status, body = call(t, h, post("/v1/topics/orders/produce", "text/plain", "y"))
	require.Equal(t, 503, status, body)
	require.NotContains(t, body, dataDir, "a produce's error names a file on disk")
}
