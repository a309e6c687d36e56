package host

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

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
