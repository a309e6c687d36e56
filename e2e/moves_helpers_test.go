package e2e

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
	"narad/client"
)

// Bounds of the helpers that watch moves.
const (
	// placementPollInterval is the pause between two reads of the
	// members and moves while a test waits for a placement.
	placementPollInterval = 200 * time.Millisecond
	// cliTimeout bounds one run of the narad CLI.
	cliTimeout = 30 * time.Second
	// logLineBytesMax bounds one line of a node's log when it is parsed.
	logLineBytesMax = 1 << 20
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
	n := &clusterNode{id: id, httpAddr: freeAddr(c.t), clusterAddr: freeAddr(c.t),
		dataDir: filepath.Join(c.dir, id), logPath: filepath.Join(c.dir, id+".log"), security: c.security}
	n.client = client.New("http://"+n.httpAddr, client.WithTimeout(clusterClientTimeout))
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

// metricSample is one line of a Prometheus text exposition.
type metricSample struct {
	name   string
	labels string // the text between the braces, "" without labels
	value  float64
}

// parseMetrics reads the samples of a Prometheus text exposition.
func parseMetrics(text string) []metricSample {
	var samples []metricSample
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cut := strings.LastIndexByte(line, ' ')
		if cut < 0 {
			continue
		}
		value, err := strconv.ParseFloat(line[cut+1:], 64)
		if err != nil {
			continue
		}
		name, labels := line[:cut], ""
		if open := strings.IndexByte(name, '{'); open >= 0 {
			name, labels = name[:open], strings.TrimSuffix(name[open+1:], "}")
		}
		samples = append(samples, metricSample{name: name, labels: labels, value: value})
	}
	return samples
}

// metricSum adds up the samples called name whose labels contain every
// one of labels (each written as key="value").
func metricSum(samples []metricSample, name string, labels ...string) float64 {
	sum := 0.0
	for _, s := range samples {
		if s.name == name && containsAll(s.labels, labels) {
			sum += s.value
		}
	}
	return sum
}

func containsAll(text string, parts []string) bool {
	for _, part := range parts {
		if !strings.Contains(text, part) {
			return false
		}
	}
	return true
}

// clusterMetrics scrapes every running node and returns all their
// samples together (the move metrics are per node; the test wants the
// cluster's sum). A node that does not answer fails the test.
func (c *testCluster) clusterMetrics(ctx context.Context) []metricSample {
	c.t.Helper()
	var all []metricSample
	for _, n := range c.running() {
		text, err := scrape(ctx, n)
		require.NoError(c.t, err, "scrape the metrics of %s", n.id)
		all = append(all, parseMetrics(text)...)
	}
	return all
}

// histogramQuantile returns the upper bound of the first bucket of the
// histogram name that holds the q quantile of its observations (summed
// over the samples given), or NaN without observations. It is a bound,
// not an estimate: the answer is "at most this".
func histogramQuantile(samples []metricSample, name string, q float64) float64 {
	cumulative := map[float64]float64{}
	for _, s := range samples {
		if s.name != name+"_bucket" {
			continue
		}
		bound, ok := labelValue(s.labels, "le")
		if !ok {
			continue
		}
		le, err := strconv.ParseFloat(bound, 64)
		if err == nil {
			cumulative[le] += s.value
		}
	}
	bounds := slices.Sorted(maps.Keys(cumulative))
	if len(bounds) == 0 || cumulative[math.Inf(1)] == 0 {
		return math.NaN()
	}
	rank := q * cumulative[math.Inf(1)]
	for _, le := range bounds {
		if cumulative[le] >= rank {
			return le
		}
	}
	return math.Inf(1)
}

// histogramCountAbove returns how many observations of the histogram
// name (summed over the samples) exceeded the largest bucket bound that
// is at most threshold.
func histogramCountAbove(samples []metricSample, name string, threshold float64) float64 {
	atOrBelow := map[float64]float64{}
	for _, s := range samples {
		bound, ok := labelValue(s.labels, "le")
		le, err := strconv.ParseFloat(bound, 64)
		if s.name == name+"_bucket" && ok && err == nil && le <= threshold {
			atOrBelow[le] += s.value
		}
	}
	below := 0.0
	if len(atOrBelow) > 0 {
		below = atOrBelow[slices.Max(slices.Collect(maps.Keys(atOrBelow)))]
	}
	return metricSum(samples, name+"_count") - below
}

// labelValue returns the value of key in a label list such as
// le="0.5",outcome="completed".
func labelValue(labels, key string) (string, bool) {
	for part := range strings.SplitSeq(labels, ",") {
		name, value, found := strings.Cut(part, "=")
		if found && name == key {
			unquoted, err := strconv.Unquote(value)
			return unquoted, err == nil
		}
	}
	return "", false
}

// logEvent is one line of a node's text log (slog's key=value format).
type logEvent struct {
	node  string
	time  time.Time
	msg   string
	attrs map[string]string
}

// kind is the kind of a "node event" line ("" for other lines).
func (e logEvent) kind() string {
	if e.msg != "node event" {
		return ""
	}
	return e.attrs["kind"]
}

// readLogEvents parses every line of n's log that carries a time and a
// message, in the order written.
func readLogEvents(t *testing.T, n *clusterNode) []logEvent {
	t.Helper()
	file, err := os.Open(n.logPath)
	require.NoError(t, err)
	defer file.Close()
	var events []logEvent
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 0, 64<<10), logLineBytesMax)
	for scanner.Scan() {
		attrs := parseLogLine(scanner.Text())
		at, err := time.Parse(time.RFC3339Nano, attrs["time"])
		if err != nil || attrs["msg"] == "" {
			continue // not a structured line (a panic's trace, say)
		}
		events = append(events, logEvent{node: n.id, time: at, msg: attrs["msg"], attrs: attrs})
	}
	require.NoError(t, scanner.Err(), "read the log of %s", n.id)
	return events
}

// parseLogLine splits a line of slog's text format into its attributes;
// values may be bare or Go-quoted. It stops at the first token it cannot
// read.
func parseLogLine(line string) map[string]string {
	attrs := map[string]string{}
	rest := line
	for {
		rest = strings.TrimLeft(rest, " ")
		key, value, found := strings.Cut(rest, "=")
		if !found || key == "" || strings.ContainsAny(key, " \"") {
			return attrs
		}
		if strings.HasPrefix(value, `"`) {
			quoted, err := strconv.QuotedPrefix(value)
			if err != nil {
				return attrs
			}
			attrs[key], _ = strconv.Unquote(quoted)
			rest = value[len(quoted):]
			continue
		}
		end := strings.IndexByte(value, ' ')
		if end < 0 {
			end = len(value)
		}
		attrs[key], rest = value[:end], value[end:]
	}
}

// clusterEvents returns the log events of every node, each node's in the
// order written.
func (c *testCluster) clusterEvents() []logEvent {
	c.t.Helper()
	var all []logEvent
	for _, n := range c.nodes {
		all = append(all, readLogEvents(c.t, n)...)
	}
	return all
}

// eventsOfKind keeps the node events of one kind.
func eventsOfKind(events []logEvent, kind string) []logEvent {
	var kept []logEvent
	for _, e := range events {
		if e.kind() == kind {
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
func freezesFromLogs(events []logEvent) []freeze {
	started := map[string]logEvent{}
	var freezes []freeze
	for _, e := range events {
		dir := firstWord(e.attrs["detail"])
		key := e.node + " " + dir
		switch e.kind() {
		case "partition-frozen":
			started[key] = e
		case "partition-moved-away", "partition-unfrozen":
			if begin, ok := started[key]; ok {
				delete(started, key)
				freezes = append(freezes, freeze{node: e.node, dir: dir, duration: e.time.Sub(begin.time),
					flipped: e.kind() == "partition-moved-away"})
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

// percentile returns the q quantile (nearest rank) of durations, or 0 for
// none.
func percentile(durations []time.Duration, q float64) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	sorted := slices.Sorted(slices.Values(durations))
	rank := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(rank, 0), len(sorted)-1)]
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

func summarizeMoveMetrics(samples []metricSample) moveSummary {
	summary := moveSummary{byOutcome: map[string]float64{}}
	for _, outcome := range []string{"completed", "force_promoted", "aborted"} {
		summary.byOutcome[outcome] = metricSum(samples, "narad_moves_total", `outcome="`+outcome+`"`)
	}
	summary.bytesCopied = metricSum(samples, "narad_moves_bytes_total")
	summary.durationSeconds = metricSum(samples, "narad_moves_duration_seconds_sum")
	summary.freezeP50Bound = histogramQuantile(samples, "narad_moves_freeze_duration_seconds", 0.50)
	summary.freezeP99Bound = histogramQuantile(samples, "narad_moves_freeze_duration_seconds", 0.99)
	summary.freezeObservations = metricSum(samples, "narad_moves_freeze_duration_seconds_count")
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
