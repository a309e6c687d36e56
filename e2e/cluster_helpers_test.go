package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
	"narad/client"
)

// Bounds of the multi-process helpers.
const (
	// clusterReadyTimeout bounds the wait for a node's /readyz after a
	// (re)start: a restarted node replays its metastore and rejoins.
	clusterReadyTimeout = 30 * time.Second
	// clusterPollInterval is the pause between probes of a node.
	clusterPollInterval = 50 * time.Millisecond
	// clusterClientTimeout bounds one request of the test's clients; a
	// forward to a dead owner times out on the server first (5 s).
	clusterClientTimeout = 10 * time.Second
	// scrapeTimeout bounds one read of a node's /metrics.
	scrapeTimeout = 2 * time.Second
)

// clusterNode is one `narad serve` process of a test cluster. Its ports,
// id and data directory stay the same across restarts.
type clusterNode struct {
	id          string
	httpAddr    string
	clusterAddr string
	dataDir     string
	logPath     string
	client      *client.Client
	// cmd is the current process; nil while the node is down.
	cmd *exec.Cmd
	// peers is the NARAD_CLUSTER_PEERS value shared by the cluster.
	peers string
	// initialMembers is the NARAD_CLUSTER_INITIAL_MEMBERS value: empty
	// for the nodes that bootstrap the cluster, the bootstrapping ids for
	// a node that joins it later (it is not among them).
	initialMembers string
	// security are NARAD_* settings that override the default of no
	// authentication (see securityEnv); empty for an open cluster.
	security []string
}

// testCluster is a cluster of real processes on loopback. Its directory
// (data and logs of every node) is kept, and its path printed, when the
// test fails.
type testCluster struct {
	t     *testing.T
	dir   string
	nodes []*clusterNode
	// security is given to every node started from now on.
	security []string
}

// startTestCluster starts size nodes n1..n<size> with NARAD_CLUSTER_PEERS
// and waits until every one is ready.
func startTestCluster(t *testing.T, size int) *testCluster {
	t.Helper()
	return startTestClusterWith(t, size, nil)
}

// startTestClusterWith is startTestCluster with security settings for
// every node (see securityEnv).
func startTestClusterWith(t *testing.T, size int, security []string) *testCluster {
	t.Helper()
	dir, err := os.MkdirTemp("", "narad-e2e-cluster-")
	require.NoError(t, err)
	c := &testCluster{t: t, dir: dir, security: security}
	t.Cleanup(c.cleanup)
	var peers []string
	for i := range size {
		id := fmt.Sprintf("n%d", i+1)
		n := &clusterNode{id: id, httpAddr: freeAddr(t), clusterAddr: freeAddr(t),
			dataDir: filepath.Join(dir, id), logPath: filepath.Join(dir, id+".log"), security: security}
		n.client = client.New("http://"+n.httpAddr, client.WithTimeout(clusterClientTimeout))
		peers = append(peers, id+"@"+n.clusterAddr)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.peers = strings.Join(peers, ",")
		c.start(n)
	}
	for _, n := range c.nodes {
		c.waitReady(n)
	}
	return c
}

// cleanup kills every process; it keeps the directory if the test failed.
func (c *testCluster) cleanup() {
	for _, n := range c.nodes {
		c.kill(n)
	}
	if c.t.Failed() {
		c.t.Logf("cluster data directories and node logs kept in %s", c.dir)
		return
	}
	_ = os.RemoveAll(c.dir)
}

// start runs n's process (appending to its log).
func (c *testCluster) start(n *clusterNode) {
	c.t.Helper()
	require.Nil(c.t, n.cmd, "%s is already running", n.id)
	logFile, err := os.OpenFile(n.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	require.NoError(c.t, err)
	defer logFile.Close() // the child holds its own descriptor
	cmd := exec.Command(binary, "serve", "--addr", n.httpAddr, "--node-id", n.id, "--data-dir", n.dataDir, "--log-format", "text")
	cmd.Env = append(os.Environ(), "NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR="+n.clusterAddr,
		"NARAD_CLUSTER_PEERS="+n.peers, "NARAD_CLUSTER_INITIAL_MEMBERS="+n.initialMembers)
	cmd.Env = append(cmd.Env, n.security...) // the last value of a variable wins
	cmd.Stdout, cmd.Stderr = logFile, logFile
	require.NoError(c.t, cmd.Start())
	n.cmd = cmd
}

// kill ends n's process with SIGKILL (no shutdown, no flush) and reaps
// it.
func (c *testCluster) kill(n *clusterNode) {
	if n.cmd == nil {
		return
	}
	_ = n.cmd.Process.Kill()
	_ = n.cmd.Wait()
	n.cmd = nil
}

// waitReady polls n's /readyz until it answers 200; the test fails with
// the end of n's log otherwise.
func (c *testCluster) waitReady(n *clusterNode) {
	c.t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	var lastErr error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, lastErr = n.client.Readyz(ctx)
		cancel()
		if lastErr == nil {
			return
		}
		time.Sleep(clusterPollInterval)
	}
	c.t.Fatalf("%s on %s not ready after %s (last answer: %v); the end of its log:\n%s",
		n.id, n.httpAddr, clusterReadyTimeout, lastErr, proc.LogTail(n.logPath))
}

// leader returns the node whose metrics say it leads the metadata group,
// once exactly one running node says so (bounded wait).
func (c *testCluster) leader(ctx context.Context) *clusterNode {
	c.t.Helper()
	deadline := time.Now().Add(clusterReadyTimeout)
	for time.Now().Before(deadline) {
		var leaders []*clusterNode
		for _, n := range c.running() {
			if isLeader(ctx, n) {
				leaders = append(leaders, n)
			}
		}
		if len(leaders) == 1 {
			return leaders[0]
		}
		time.Sleep(clusterPollInterval)
	}
	c.t.Fatalf("no single node reported narad_meta_leader 1 within %s", clusterReadyTimeout)
	return nil
}

func (c *testCluster) running() []*clusterNode {
	var running []*clusterNode
	for _, n := range c.nodes {
		if n.cmd != nil {
			running = append(running, n)
		}
	}
	return running
}

// isLeader reads n's narad_meta_leader gauge.
func isLeader(ctx context.Context, n *clusterNode) bool {
	metrics, err := scrape(ctx, n)
	return err == nil && strings.Contains(metrics, "\nnarad_meta_leader 1\n")
}

// scrape returns n's /metrics text.
func scrape(ctx context.Context, n *clusterNode) (string, error) {
	return proc.Metrics(ctx, http.DefaultClient, n.httpAddr, scrapeTimeout)
}
