package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"narad/client"
	"narad/proc"
)

// ErrNoNode is returned when no running node answered a control request.
var ErrNoNode = errors.New("no running node answered")

// cluster is the set of `narad serve` processes of one run, on loopback.
// Node ids are n1, n2, ... in creation order and are never reused: a
// decommissioned node's raft id may not come back.
type cluster struct {
	// binary, dir, timingEnv, httpClient and logf are set by newCluster
	// and never change. timingEnv holds the NARAD_* timing settings every
	// node gets.
	binary     string
	dir        string
	timingEnv  []string
	httpClient *http.Client
	logf       func(format string, args ...any)
	// mu protects the fields below: the scenario changes them, the load
	// goroutines read them.
	mu sync.Mutex
	// nodes lists every node ever planned, in creation order.
	nodes []*nodeProcess
	// rotation holds the ids of the nodes clients may send requests to
	// (killed nodes stay in it, as behind a load balancer that has not
	// noticed yet; a decommissioned node leaves it before it stops).
	rotation map[string]bool
	// retired holds the ids of decommissioned nodes, stopped for good.
	retired map[string]bool
}

func newCluster(binary, dir string, timingEnv []string, logf func(string, ...any)) *cluster {
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	return &cluster{binary: binary, dir: dir, timingEnv: timingEnv, logf: logf,
		httpClient: &http.Client{Transport: transport}, rotation: map[string]bool{}, retired: map[string]bool{}}
}

// plan creates node id with fresh loopback ports (not started).
func (c *cluster) plan(id string) (*nodeProcess, error) {
	httpAddr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	clusterAddr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	n := &nodeProcess{id: id, httpAddr: httpAddr, clusterAddr: clusterAddr, dataDir: filepath.Join(c.dir, id),
		logPath: nodeLogPath(c.dir, id), httpClient: c.httpClient,
		client: client.New("http://"+httpAddr, client.WithTimeout(requestTimeout), client.WithHTTPClient(c.httpClient))}
	return n, nil
}

// setEnv gives n its process with its cluster settings: peers "id@addr"
// (n included) and the initial members (empty: every peer bootstraps the
// cluster).
func (c *cluster) setEnv(n *nodeProcess, peers []*nodeProcess, initialMembers []string) {
	entries := make([]string, 0, len(peers))
	for _, p := range peers {
		entries = append(entries, p.id+"@"+p.clusterAddr)
	}
	env := append([]string{"NARAD_SECURITY_ENABLED=false", "NARAD_CLUSTER_ADDR=" + n.clusterAddr,
		"NARAD_CLUSTER_PEERS=" + strings.Join(entries, ","), "NARAD_CLUSTER_INITIAL_MEMBERS=" + strings.Join(initialMembers, ",")},
		c.timingEnv...)
	n.Process = proc.NewProcess(proc.Spec{Binary: c.binary, ID: n.id, HTTPAddr: n.httpAddr, ClusterAddr: n.clusterAddr,
		DataDir: n.dataDir, LogPath: n.logPath, Env: env, HTTPClient: c.httpClient})
}

// startInitial starts count nodes that bootstrap the cluster together and
// waits until each is ready. A start whose port another process took
// meanwhile is tried again from scratch on new ports, up to startTriesMax
// times.
func (c *cluster) startInitial(ctx context.Context, count int) error {
	var err error
	for range startTriesMax {
		if err = c.tryStartInitial(ctx, count); !errors.Is(err, proc.ErrAddrInUse) {
			return err
		}
		c.logf("soak: starting the cluster again on new ports: %v", err)
		c.discard()
	}
	return err
}

// discard kills and forgets every node of a start that failed, with its
// data directory and log: the cluster never formed.
func (c *cluster) discard() {
	for _, n := range c.allNodes() {
		_ = n.Kill()
		_ = os.RemoveAll(n.dataDir)
		_ = os.Remove(n.logPath)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes, c.rotation = nil, map[string]bool{}
}

func (c *cluster) tryStartInitial(ctx context.Context, count int) error {
	var planned []*nodeProcess
	for i := range count {
		n, err := c.plan(fmt.Sprintf("n%d", i+1))
		if err != nil {
			return err
		}
		planned = append(planned, n)
	}
	for _, n := range planned {
		c.setEnv(n, planned, nil)
		c.add(n)
		if err := n.Start(); err != nil {
			return err
		}
	}
	for _, n := range planned {
		if err := n.WaitReady(ctx, readyTimeout); err != nil {
			return err
		}
		c.setRotation(n.id, true)
	}
	return nil
}

func (c *cluster) add(n *nodeProcess) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.nodes = append(c.nodes, n)
}

// join starts a new node that joins the running cluster (scale-up): its
// peers are the current members and itself, and it is not an initial
// member, so it asks the leader to add it as a voter. It returns once the
// node is ready and in rotation.
func (c *cluster) join(ctx context.Context) (*nodeProcess, error) {
	members := c.members()
	n, err := c.plan(fmt.Sprintf("n%d", len(c.allNodes())+1))
	if err != nil {
		return nil, err
	}
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, m.id)
	}
	c.setEnv(n, append(members, n), ids)
	c.add(n)
	if err := n.Start(); err != nil {
		return n, err
	}
	if err := n.WaitReady(ctx, readyTimeout); err != nil {
		return n, err
	}
	c.setRotation(n.id, true)
	return n, nil
}

func (c *cluster) allNodes() []*nodeProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.nodes)
}

// members returns the nodes that are not retired, running or not.
func (c *cluster) members() []*nodeProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	var members []*nodeProcess
	for _, n := range c.nodes {
		if !c.retired[n.id] {
			members = append(members, n)
		}
	}
	return members
}

// running returns the members that have a process.
func (c *cluster) running() []*nodeProcess {
	var running []*nodeProcess
	for _, n := range c.members() {
		if n.Running() {
			running = append(running, n)
		}
	}
	return running
}

// serving returns the running members in the rotation: the nodes that
// were ready when they joined it. A node that never became ready (a join
// that did not complete) stays out of it and out of the harness's own
// requests, which it would only delay.
func (c *cluster) serving() []*nodeProcess {
	var serving []*nodeProcess
	for _, n := range c.running() {
		if c.inRotation(n.id) {
			serving = append(serving, n)
		}
	}
	return serving
}

func (c *cluster) inRotation(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.rotation[id]
}

func (c *cluster) node(id string) *nodeProcess {
	for _, n := range c.allNodes() {
		if n.id == id {
			return n
		}
	}
	return nil
}

func (c *cluster) setRotation(id string, in bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if in {
		c.rotation[id] = true
	} else {
		delete(c.rotation, id)
	}
}

func (c *cluster) retire(id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.retired[id] = true
	delete(c.rotation, id)
}

// pick returns a node of the rotation chosen with rng (nil if none).
func (c *cluster) pick(rng *rand.Rand) *nodeProcess {
	c.mu.Lock()
	defer c.mu.Unlock()
	var candidates []*nodeProcess
	for _, n := range c.nodes {
		if c.rotation[n.id] {
			candidates = append(candidates, n)
		}
	}
	if len(candidates) == 0 {
		return nil
	}
	return candidates[rng.IntN(len(candidates))]
}

// leader returns the running node that reports leading the metadata
// group, once exactly one does (bounded wait).
func (c *cluster) leader(ctx context.Context) (*nodeProcess, error) {
	ctx, cancel := context.WithTimeout(ctx, leaderTimeout)
	defer cancel()
	return proc.Leader(ctx, c.running)
}

// control runs a control request against the serving nodes in turn until
// one succeeds, retrying answers that say "try again" (503, no answer)
// until ctx ends. Other errors are returned at once.
func (c *cluster) control(ctx context.Context, request func(ctx context.Context, cl *client.Client) error) error {
	lastErr := ErrNoNode
	for attempt := 0; ; attempt++ {
		running := c.serving()
		if len(running) > 0 {
			n := running[attempt%len(running)]
			lastErr = request(ctx, n.client)
			if lastErr == nil || !retryable(lastErr) {
				return lastErr
			}
		}
		if proc.SleepContext(ctx, pollInterval) != nil {
			return fmt.Errorf("control request: %w (last error: %w)", ctx.Err(), lastErr)
		}
	}
}

// retryable reports whether a failed request may succeed when sent again:
// a 503, or no answer at all.
func retryable(err error) bool {
	var reply *client.Error
	if errors.As(err, &reply) {
		return reply.Status == http.StatusServiceUnavailable
	}
	return true
}

// clusterMembers lists the members as the metadata leader sees them.
func (c *cluster) clusterMembers(ctx context.Context) ([]client.Member, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout*3)
	defer cancel()
	leader, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	return leader.client.ClusterMembers(ctx)
}

// clusterMoves lists the moves in flight as the metadata leader sees them.
func (c *cluster) clusterMoves(ctx context.Context) ([]client.Move, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout*3)
	defer cancel()
	leader, err := c.leader(ctx)
	if err != nil {
		return nil, err
	}
	return leader.client.ClusterMoves(ctx)
}

// crashes returns the unexpected exits of every node since the last call.
func (c *cluster) crashes() []string {
	var crashes []string
	for _, n := range c.allNodes() {
		crashes = append(crashes, n.TakeCrashes()...)
	}
	return crashes
}

// stopAll ends every process: gracefully, then by SIGKILL past the
// timeout. It waits for the reaping goroutines.
func (c *cluster) stopAll() {
	var stops sync.WaitGroup
	for _, n := range c.allNodes() {
		if n.Running() {
			stops.Go(func() { _, _ = n.Terminate(terminateTimeout) })
		}
	}
	stops.Wait()
	for _, n := range c.allNodes() {
		n.WaitReaped()
	}
}

func (c *cluster) isRetired(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retired[id]
}
