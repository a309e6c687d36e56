package host

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A record pinned to a partition whose owner stopped gets a prompt 503,
// every time, not one after the forward timeout: the transport knows the
// owner is unreachable (every connection attempt to it fails). The
// node's mark of the owner down (PeerDownMs, 2 s) used to lapse while the
// transport waited out its reconnect backoff (up to 5 s): a produce then
// sat in the send queue until the next attempt failed, 0.6 s and more.
func TestPinnedProduceToAStoppedOwnerIsAlwaysAPrompt503(t *testing.T) {
	hosts := startTestCluster(t, 3)
	eventually(t, 20*time.Second, "no single metadata leader", func() bool { return len(leadersByMetrics(t, hosts)) == 1 })
	leader := leadersByMetrics(t, hosts)[0]
	eventually(t, 20*time.Second, "leader never ready", func() bool {
		status, _ := call(t, leader, get("/readyz"))
		return status == http.StatusOK
	})
	status, body := call(t, leader, postJSON("/v1/topics", `{"name":"orders","partitions":3}`))
	require.Equal(t, http.StatusCreated, status, body)
	var detail struct {
		PartitionStats []struct {
			Index     int    `json:"index"`
			OwnerNode string `json:"owner_node"`
		} `json:"partition_stats"`
	}
	eventually(t, 5*time.Second, "topic not described", func() bool {
		status, body = call(t, leader, get("/v1/topics/orders"))
		return status == http.StatusOK
	})
	require.NoError(t, json.Unmarshal([]byte(body), &detail))
	var victim *Host
	partition := -1
	for _, stats := range detail.PartitionStats {
		for _, h := range hosts {
			if h.opts.Node.NodeID == stats.OwnerNode && victim == nil {
				victim, partition = h, stats.Index
			}
		}
	}
	require.NotNil(t, victim, "no owner found: %s", body)
	var via *Host
	for _, h := range hosts {
		if h != victim && via == nil {
			via = h
		}
	}
	produce := post(fmt.Sprintf("/v1/topics/orders/produce?partition=%d", partition), "text/plain", "x")
	status, body = call(t, via, produce)
	require.Equal(t, http.StatusAccepted, status, body)

	require.NoError(t, victim.Shutdown())
	slowest, slow := time.Duration(0), 0
	for range 60 {
		start := time.Now()
		status, body = call(t, via, produce)
		took := time.Since(start)
		require.Equal(t, http.StatusServiceUnavailable, status, body)
		if took > 500*time.Millisecond {
			slow++
		}
		slowest = max(slowest, took)
		time.Sleep(100 * time.Millisecond)
	}
	require.Zero(t, slow, "%d of 60 pinned produces to a stopped owner waited over 500 ms for their 503 (slowest %v)", slow, slowest)
}
