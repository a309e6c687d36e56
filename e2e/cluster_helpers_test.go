package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Bounds of the process helpers (single servers and clusters).
const (
	// clusterReadyTimeout bounds the wait for a node's /readyz after a
	// (re)start: a restarted node replays its metastore and rejoins.
	clusterReadyTimeout = 30 * time.Second
	// clusterPollInterval is the pause between probes of a node.
	clusterPollInterval = 50 * time.Millisecond
	// clusterClientTimeout bounds one request of the test's clients; a
	// forward to a dead owner times out on the server first (5 s).
	clusterClientTimeout = 10 * time.Second
	// serverStopTimeout bounds a graceful stop (the shutdown grace is
	// 10 s); past it the server is killed and the test fails.
	serverStopTimeout = 30 * time.Second
	// startTriesMax bounds the starts of a server or cluster whose port
	// was taken by another process meanwhile (each try on new ports).
	startTriesMax = 3
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
	// process runs the node; nil until its first start, which fixes its
	// environment from the fields below.
	process *proc.Process
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
// every node (see securityEnv). A start whose port was taken by another
// process is tried again, on new ports, up to startTriesMax times.
func startTestClusterWith(t *testing.T, size int, security []string) *testCluster {
	t.Helper()
	var err error
	for range startTriesMax {
		var c *testCluster
		c, err = tryStartCluster(t, size, security)
		if err == nil {
			return c
		}
		for _, n := range c.nodes {
			c.kill(n)
		}
		if !errors.Is(err, proc.ErrAddrInUse) {
			break
		}
		t.Logf("starting the cluster again on new ports: %v", err)
	}
	t.Fatal(err)
	return nil
}

// tryStartCluster plans the cluster on fresh ports, starts it and waits
// for every node.
func tryStartCluster(t *testing.T, size int, security []string) (*testCluster, error) {
	dir, err := os.MkdirTemp("", "narad-e2e-cluster-")
	require.NoError(t, err)
	c := &testCluster{t: t, dir: dir, security: security}
	t.Cleanup(c.cleanup)
	var peers []string
	for i := range size {
		n := c.planNode(fmt.Sprintf("n%d", i+1))
		peers = append(peers, n.id+"@"+n.clusterAddr)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		n.peers = strings.Join(peers, ",")
		c.start(n)
	}
	for _, n := range c.nodes {
		if err := n.process.WaitReady(context.Background(), clusterReadyTimeout); err != nil {
			return c, err
		}
	}
	return c, nil
}

// planNode returns node id on fresh loopback ports, in the cluster's
// directory, with its security settings; not started.
func (c *testCluster) planNode(id string) *clusterNode {
	n := &clusterNode{id: id, httpAddr: freeAddr(c.t), clusterAddr: freeAddr(c.t),
		dataDir: filepath.Join(c.dir, id), logPath: filepath.Join(c.dir, id+".log"), security: c.security}
	n.client = client.New("http://"+n.httpAddr, client.WithTimeout(clusterClientTimeout))
	return n
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
	if n.process == nil {
		env := append([]string{"NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR=" + n.clusterAddr,
			"NARAD_CLUSTER_PEERS=" + n.peers, "NARAD_CLUSTER_INITIAL_MEMBERS=" + n.initialMembers}, n.security...) // the last value of a variable wins
		n.process = proc.NewProcess(proc.Spec{Binary: binary, ID: n.id, HTTPAddr: n.httpAddr, ClusterAddr: n.clusterAddr,
			DataDir: n.dataDir, LogPath: n.logPath, Env: env})
	}
	require.NoError(c.t, n.process.Start())
}

// kill ends n's process with SIGKILL (no shutdown, no flush) and reaps
// it.
func (c *testCluster) kill(n *clusterNode) {
	if n.process != nil {
		require.NoError(c.t, n.process.Kill())
	}
}

// waitReady waits until n's /readyz answers 200; the test fails with the
// end of n's log otherwise.
func (c *testCluster) waitReady(n *clusterNode) {
	c.t.Helper()
	require.NoError(c.t, n.process.WaitReady(context.Background(), clusterReadyTimeout))
}

// IsLeader reports whether n's metrics say it leads the metadata group.
func (n *clusterNode) IsLeader(ctx context.Context) bool { return n.process.IsLeader(ctx) }

// leader returns the node whose metrics say it leads the metadata group,
// once exactly one running node says so (bounded wait).
func (c *testCluster) leader(ctx context.Context) *clusterNode {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(ctx, clusterReadyTimeout)
	defer cancel()
	leader, err := proc.Leader(ctx, c.running)
	require.NoError(c.t, err)
	return leader
}

func (c *testCluster) running() []*clusterNode {
	var running []*clusterNode
	for _, n := range c.nodes {
		if n.process != nil && n.process.Running() {
			running = append(running, n)
		}
	}
	return running
}

// scrape returns n's metrics.
func scrape(ctx context.Context, n *clusterNode) (proc.Metrics, error) {
	return n.process.Metrics(ctx)
}
