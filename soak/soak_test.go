package soak

import (
	"context"
	"flag"
	"os"
	"testing"
	"time"

	"narad/proc"

	"github.com/stretchr/testify/require"
)

var (
	durationFlag = flag.Duration("duration", 0,
		"how long the full scenario injects faults, in whole cycles; 0 runs one short cycle (the CI version)")
	seedFlag      = flag.Uint64("seed", 0, "seed of the scenario and the load; 0 takes one from the clock (printed)")
	nodesFlag     = flag.Int("nodes", 0, "nodes at the start; 0: 3 for full, 4 for decommission")
	scenarioFlag  = flag.String("scenario", ScenarioFull, "full (every fault, in cycles) or decommission (steady load and one decommission)")
	dirFlag       = flag.String("dir", "", "run directory for node data, logs and the ledger (default: a new temporary directory)")
	keepFlag      = flag.Bool("keep", false, "keep the run directory when the run passes too")
	heartbeatFlag = flag.Duration("heartbeat-interval", 0, "passed to the nodes as "+EnvHeartbeatInterval+" (0: node default; a short run asks for 2s)")
	deadFlag      = flag.Duration("member-dead-after", 0, "passed to the nodes as "+EnvMemberDeadAfter+" (0: node default; a short run asks for 8s)")
	promoteFlag   = flag.Duration("force-promote-after", 0, "passed to the nodes as "+EnvForcePromoteAfter+" (0: node default; a short run asks for 5s)")
	binaryFlag    = flag.String("binary", "", "run this narad binary instead of building one from the tree")
	snapshotFlag  = flag.Int("meta-snapshot-entries", 0, "passed to the nodes as "+EnvMetaSnapshotEntries+" (0: node default; a short run asks for 20)")
)

// deadlineMargin is kept between the run's end and the test binary's
// deadline, so the report is printed before `go test -timeout` fires.
const deadlineMargin = time.Minute

// TestSoak runs the real-process soak: `narad serve` processes on
// loopback under load and faults, then a replay audit of every record
// answered 202. It fails when a record is missing, a step failed, a node
// crashed, or (clean decommission) a produce was refused. A failed run
// keeps its directory (logs, data, ledger) and prints where.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak runs real processes for minutes; skipped with -short")
	}
	dir := runDirectory(t)
	binary := buildBinary(t, dir)
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	ctx, cancel := runContext(t)
	defer cancel()
	report, err := Run(ctx, Options{Scenario: *scenarioFlag, Duration: *durationFlag, Seed: seed, Nodes: *nodesFlag,
		Binary: binary, Dir: dir, HeartbeatInterval: *heartbeatFlag, MemberDeadAfter: *deadFlag, ForcePromoteAfter: *promoteFlag,
		MetaSnapshotEntries: *snapshotFlag, Logf: t.Logf})
	if report != nil {
		for _, line := range report.Lines() {
			t.Log(line)
		}
	}
	failed := err != nil || report.Failed()
	if failed || *keepFlag {
		t.Logf("soak: logs, node data directories and the ledger are kept in %s (reproduce with -seed=%d -scenario=%s -duration=%s)",
			dir, seed, *scenarioFlag, *durationFlag)
	} else {
		_ = os.RemoveAll(dir)
	}
	require.NoError(t, err)
	require.Empty(t, report.Failures, "the soak found problems (listed above)")
}

// buildBinary builds narad from the tree into dir, unless -binary names
// one.
func buildBinary(t *testing.T, dir string) string {
	if *binaryFlag != "" {
		return *binaryFlag
	}
	binary, err := proc.Build(dir)
	require.NoError(t, err)
	return binary
}

func runDirectory(t *testing.T) string {
	if *dirFlag != "" {
		require.NoError(t, os.MkdirAll(*dirFlag, 0o700))
		return *dirFlag
	}
	dir, err := os.MkdirTemp("", "narad-soak-")
	require.NoError(t, err)
	return dir
}

// runContext ends the run ahead of the test binary's deadline.
func runContext(t *testing.T) (context.Context, context.CancelFunc) {
	if deadline, ok := t.Deadline(); ok {
		return context.WithDeadline(context.Background(), deadline.Add(-deadlineMargin))
	}
	return context.WithCancel(context.Background())
}
