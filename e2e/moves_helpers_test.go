package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Bounds of the helpers that watch moves.
const (
	// placementPollInterval is the pause between two reads of the
	// members and moves while a test waits for a placement.
	placementPollInterval = 200 * time.Millisecond
	// cliTimeout bounds one run of the narad CLI.
	cliTimeout = 30 * time.Second
)

// addJoiningNode starts one more node that joins the running cluster: its
// NARAD_CLUSTER_PEERS lists every node (itself included) and its
// NARAD_CLUSTER_INITIAL_MEMBERS the nodes that bootstrapped the cluster,
// which it is not one of, so it asks them to add it instead of
// bootstrapping. The caller waits for its readiness.
func (c *testCluster) addJoiningNode(id string) *clusterNode {
	c.t.Helper()
	var bootstrapIDs []string
	for _, n := range c.nodes {
		bootstrapIDs = append(bootstrapIDs, n.id)
	}
	return c.startJoiner(id, c.nodes[0].peers, bootstrapIDs)
}

// addJoiningNodeVia starts a node that joins knowing only one member:
// NARAD_CLUSTER_PEERS names via and itself, NARAD_CLUSTER_INITIAL_MEMBERS
// only via.
func (c *testCluster) addJoiningNodeVia(id string, via *clusterNode) *clusterNode {
	c.t.Helper()
	return c.startJoiner(id, via.id+"@"+via.clusterAddr, []string{via.id})
}

// startJoiner starts a joining node with the peers it is told of (id@addr,
// comma-separated, itself appended) and the member ids it asks.
func (c *testCluster) startJoiner(id, peers string, members []string) *clusterNode {
	n := c.planNode(id)
	n.peers = peers + "," + id + "@" + n.clusterAddr
	n.initialMembers = strings.Join(members, ",")
	c.nodes = append(c.nodes, n)
	c.start(n)
	return n
}

// node returns the cluster's node with the id.
func (c *testCluster) node(id string) *clusterNode {
	c.t.Helper()
	for _, n := range c.nodes {
		if n.id == id {
			return n
		}
	}
	c.t.Fatalf("no node %s in the cluster", id)
	return nil
}

// runCLI runs the narad CLI against n and returns its combined output; a
// non-zero exit fails the test.
func runCLI(t *testing.T, n *clusterNode, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--server", "http://"+n.httpAddr)...)
	cmd.Env = append(os.Environ(), "NARAD_CONFIG_DIR="+t.TempDir(), "NARAD_ADDR=", "NARAD_USER=", "NARAD_PASS=")
	output, err := cmd.CombinedOutput()
	require.NoError(t, err, "narad %s: %s", strings.Join(args, " "), output)
	return string(output)
}

// placement is one reading of the members and the moves in flight.
type placement struct {
	members []client.Member
	moves   []client.Move
}

// member returns the entry of id, if listed.
func (p placement) member(id string) (client.Member, bool) {
	for _, m := range p.members {
		if m.ID == id {
			return m, true
		}
	}
	return client.Member{}, false
}

// balancedOver reports whether no move is in flight and the partitions
// are spread evenly (floor or ceiling of the share) over exactly the
// receivers; every other member owns nothing.
func (p placement) balancedOver(partitions int, receivers ...string) bool {
	if len(p.moves) > 0 || len(receivers) == 0 {
		return false
	}
	low := partitions / len(receivers)
	high := low
	if partitions%len(receivers) != 0 {
		high++
	}
	total := 0
	for _, m := range p.members {
		if m.OutboundMoves != 0 {
			return false
		}
		share := m.OwnedPartitions
		total += share
		if slices.Contains(receivers, m.ID) && (share < low || share > high) {
			return false
		}
		if !slices.Contains(receivers, m.ID) && share != 0 {
			return false
		}
	}
	return total == partitions
}

func (p placement) String() string {
	var parts []string
	for _, m := range p.members {
		parts = append(parts, fmt.Sprintf("%s(%s draining=%t owns %d, %d outbound)", m.ID, m.Status, m.Draining, m.OwnedPartitions, m.OutboundMoves))
	}
	return fmt.Sprintf("members %s; %d moves in flight", strings.Join(parts, " "), len(p.moves))
}

// readPlacement reads the members and moves from n.
func readPlacement(ctx context.Context, n *clusterNode) (placement, error) {
	members, err := n.client.ClusterMembers(ctx)
	if err != nil {
		return placement{}, err
	}
	moves, err := n.client.ClusterMoves(ctx)
	return placement{members: members, moves: moves}, err
}

// waitPlacement polls n until done accepts its placement, for at most
// timeout; it fails the test with the last placement seen otherwise.
func waitPlacement(ctx context.Context, t *testing.T, n *clusterNode, timeout time.Duration, what string, done func(placement) bool) placement {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last placement
	var lastErr error
	for time.Now().Before(deadline) {
		last, lastErr = readPlacement(ctx, n)
		if lastErr == nil && done(last) {
			return last
		}
		require.NoError(t, proc.SleepContext(ctx, placementPollInterval), "waiting for %s", what)
	}
	t.Fatalf("no %s within %s; last seen through %s: %v (error %v)", what, timeout, n.id, last, lastErr)
	return placement{}
}

// clusterMetrics scrapes every running node and returns all their
// metrics together (the move metrics are per node; the test wants the
// cluster's sum). A node that does not answer fails the test.
func (c *testCluster) clusterMetrics(ctx context.Context) proc.Metrics {
	c.t.Helper()
	all := proc.Metrics{}
	for _, n := range c.running() {
		metrics, err := scrape(ctx, n)
		require.NoError(c.t, err, "scrape the metrics of %s", n.id)
		all.Add(metrics)
	}
	return all
}

// clusterEvents returns the log records of every node, each node's in the
// order written.
func (c *testCluster) clusterEvents() []proc.LogRecord {
	c.t.Helper()
	var all []proc.LogRecord
	for _, n := range c.nodes {
		records, err := proc.ReadLog(n.logPath, n.id)
		require.NoError(c.t, err, "read the log of %s", n.id)
		all = append(all, records...)
	}
	return all
}

// eventsOfKind keeps the node events of one kind.
func eventsOfKind(events []proc.LogRecord, kind string) []proc.LogRecord {
	var kept []proc.LogRecord
	for _, e := range events {
		if e.Kind() == kind {
			kept = append(kept, e)
		}
	}
	return kept
}

// freeze is one freeze of a partition on a move's source, as its log
// tells it: from "partition-frozen" to "partition-moved-away" (the flip)
// or "partition-unfrozen" (the move ended without a flip).
type freeze struct {
	node, dir string
	duration  time.Duration
	flipped   bool
}

// freezesFromLogs pairs, per node and partition directory, each
// partition-frozen event with the event that ended the freeze.
func freezesFromLogs(events []proc.LogRecord) []freeze {
	started := map[string]proc.LogRecord{}
	var freezes []freeze
	for _, e := range events {
		dir := firstWord(e.Detail())
		key := e.Node + " " + dir
		switch e.Kind() {
		case "partition-frozen":
			started[key] = e
		case "partition-moved-away", "partition-unfrozen":
			if begin, ok := started[key]; ok {
				delete(started, key)
				freezes = append(freezes, freeze{node: e.Node, dir: dir, duration: e.Time.Sub(begin.Time),
					flipped: e.Kind() == "partition-moved-away"})
			}
		}
	}
	return freezes
}

// firstWord is text up to its first space or colon.
func firstWord(text string) string {
	if end := strings.IndexAny(text, " :"); end >= 0 {
		return text[:end]
	}
	return text
}

// moveSummary is what the metrics of every node say about the moves.
type moveSummary struct {
	byOutcome          map[string]float64
	bytesCopied        float64
	durationSeconds    float64 // the sum over the moves
	freezeP50Bound     float64 // seconds, upper bound of the bucket
	freezeP99Bound     float64
	freezeObservations float64
}

func summarizeMoveMetrics(metrics proc.Metrics) moveSummary {
	summary := moveSummary{byOutcome: map[string]float64{}}
	for _, outcome := range []string{"completed", "force_promoted", "aborted"} {
		summary.byOutcome[outcome] = metrics.Sum("narad_moves_total", map[string]string{"outcome": outcome})
	}
	summary.bytesCopied = metrics.Sum("narad_moves_bytes_total", nil)
	summary.durationSeconds = metrics.HistogramSum("narad_moves_duration_seconds")
	summary.freezeP50Bound = metrics.HistogramQuantileBound("narad_moves_freeze_duration_seconds", 0.50)
	summary.freezeP99Bound = metrics.HistogramQuantileBound("narad_moves_freeze_duration_seconds", 0.99)
	summary.freezeObservations = metrics.HistogramCount("narad_moves_freeze_duration_seconds")
	return summary
}

// copyMegabytesPerSecond is bytes copied over the moves' summed duration
// (start to flip), in MB/s (10^6 bytes).
func (s moveSummary) copyMegabytesPerSecond() float64 {
	if s.durationSeconds == 0 {
		return 0
	}
	return s.bytesCopied / s.durationSeconds / 1e6
}
