package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
)

// readinessNode is a devNode whose /readyz is a loopback test server
// answering with status and body.
func readinessNode(t *testing.T, id string, status int, body string) *devNode {
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(server.Close)
	address := strings.TrimPrefix(server.URL, "http://")
	planned := plannedNode{id: id, httpAddr: address}
	return &devNode{plannedNode: planned, Process: proc.NewProcess(proc.Spec{ID: id, HTTPAddr: address})}
}

// Property: the readiness wait of cluster up does not wait for a node
// whose decommission completed in an earlier run (its /readyz says so): it
// says so and goes on with the others; a node not ready for another
// reason is still waited for. (The wait used to give up after 90 s, and
// stop every node: a cluster that had decommissioned one of its first
// nodes could never be started again.)
func TestClusterUpGoesOnWithoutADecommissionedNode(t *testing.T) {
	var stderr bytes.Buffer
	a := &app{stderr: &stderr}
	ready := readinessNode(t, "n1", http.StatusOK, `{"status":"ready"}`)
	retired := readinessNode(t, "n2", http.StatusServiceUnavailable,
		`{"error":"node n2 was decommissioned (it left the cluster's voters, node n1 says): send requests to another node, and stop this one"}`)
	electing := readinessNode(t, "n3", http.StatusServiceUnavailable, `{"error":"no metadata leader known"}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	still := a.probeReadiness(ctx, []*devNode{ready, retired, electing}, time.Now(), map[string]string{})
	require.Equal(t, []*devNode{electing}, still)
	require.True(t, retired.retired)
	require.False(t, ready.retired)
	require.Contains(t, stderr.String(), "n2 was decommissioned in an earlier run")
	require.Equal(t, []*devNode{ready, electing}, serving([]*devNode{ready, retired, electing}))
}

// The banner of a run whose other nodes were decommissioned earlier
// counts its one node ready as such (it printed "1 nodes ready").
func TestClusterUpBannerCountsOneNodeReady(t *testing.T) {
	h := newHarness(t)
	plan := planCluster(t.TempDir(), 3, 8000)
	var nodes []*devNode
	for _, n := range plan.nodes {
		nodes = append(nodes, &devNode{plannedNode: n, Process: proc.NewProcess(proc.Spec{ID: n.id, HTTPAddr: n.httpAddr}), retired: n.id != "n1"})
	}
	h.app.printClusterBanner(plan, nodes, "narad")
	require.Contains(t, h.stdout.String(), "narad cluster: 1 node ready (auth on)")
}
