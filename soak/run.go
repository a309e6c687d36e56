package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"time"

	"narad/client"
	"narad/config"
)

// The scenarios of a run.
const (
	// ScenarioFull runs cycles of every fault: kill -9 of a follower and
	// of the leader, a rolling restart, scale-up, decommission and forced
	// recovery.
	ScenarioFull = "full"
	// ScenarioDecommission runs steady load and one decommission, nothing
	// else: every record must be durable and no produce refused.
	ScenarioDecommission = "decommission"
)

// The environment variables of narad serve that set the timings the
// forced-recovery step depends on (integers, in milliseconds). A binary
// that does not know them ignores them; Run checks config.EnvNames to
// tell.
const (
	EnvHeartbeatInterval = "NARAD_CLUSTER_HEARTBEAT_INTERVAL_MS"
	EnvMemberDeadAfter   = "NARAD_CLUSTER_DEAD_AFTER_MS"
	EnvForcePromoteAfter = "NARAD_MOVES_FORCE_PROMOTE_AFTER_MS"
	// EnvMetaSnapshotEntries sets the metastore's snapshot interval (an
	// entry count), so that a short run compacts the metadata log and its
	// joiner starts from a snapshot.
	EnvMetaSnapshotEntries = "NARAD_CLUSTER_META_SNAPSHOT_ENTRIES"
)

// Defaults of the options.
const (
	nodesFullDefault         = 3
	nodesDecommissionDefault = 4
	// votersMin is the smallest voter set the metastore keeps; a
	// decommission needs one node more.
	votersMin = 3
	nodesMax  = 9
	// The timings a short run asks for when the binary honours them; the
	// dead-after must be at least three heartbeats, and a node stops
	// writing after half of it without an applied heartbeat, which must
	// outlast a leader's failover (about 2 s here).
	shortHeartbeatInterval = 2 * time.Second
	shortMemberDeadAfter   = 8 * time.Second
	shortForcePromoteAfter = 5 * time.Second
	// shortMetaSnapshotEntries is the snapshot interval of a short run:
	// small enough that the metadata log is compacted long before the
	// scale-up step, so the joiner must start from a snapshot.
	shortMetaSnapshotEntries = 20
)

// ErrOptions marks invalid options.
var ErrOptions = errors.New("invalid soak options")

// Options configure one soak run.
type Options struct {
	// Scenario is ScenarioFull or ScenarioDecommission.
	Scenario string
	// Duration is how long the full scenario injects faults, in cycles
	// (0 runs one short cycle, the CI version); for the decommission
	// scenario, how long the steady load runs before the decommission.
	Duration time.Duration
	// Seed drives every choice of the scenario and the load.
	Seed uint64
	// Nodes is the number of nodes at the start; 0 picks the scenario's
	// default (3 for full, 4 for decommission).
	Nodes int
	// Binary is the narad executable; Dir the run directory (node data,
	// logs, ledger), which must exist.
	Binary string
	Dir    string
	// HeartbeatInterval, MemberDeadAfter and ForcePromoteAfter are passed
	// to every node through EnvHeartbeatInterval, EnvMemberDeadAfter and
	// EnvForcePromoteAfter; 0 keeps the node's default (a short run picks
	// short values for all three).
	HeartbeatInterval time.Duration
	MemberDeadAfter   time.Duration
	ForcePromoteAfter time.Duration
	// MetaSnapshotEntries is passed through EnvMetaSnapshotEntries; 0
	// keeps the node's default (a short run picks
	// shortMetaSnapshotEntries). When set, a joiner that installed no
	// metastore snapshot fails its scale-up step.
	MetaSnapshotEntries int
	// Logf prints a progress line.
	Logf func(format string, args ...any)
}

// withDefaults fills the zero options and validates them.
func (o Options) withDefaults() (Options, error) {
	if o.Nodes == 0 {
		o.Nodes = nodesFullDefault
		if o.Scenario == ScenarioDecommission {
			o.Nodes = nodesDecommissionDefault
		}
	}
	if o.Duration == 0 && o.HeartbeatInterval == 0 && o.MemberDeadAfter == 0 && o.ForcePromoteAfter == 0 {
		o.HeartbeatInterval, o.MemberDeadAfter, o.ForcePromoteAfter = shortHeartbeatInterval, shortMemberDeadAfter, shortForcePromoteAfter
	}
	if o.Duration == 0 && o.MetaSnapshotEntries == 0 {
		o.MetaSnapshotEntries = shortMetaSnapshotEntries
	}
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	var problems []error
	if o.Scenario != ScenarioFull && o.Scenario != ScenarioDecommission {
		problems = append(problems, fmt.Errorf("%w: scenario %q: want %s or %s", ErrOptions, o.Scenario, ScenarioFull, ScenarioDecommission))
	}
	if o.Nodes < votersMin || o.Nodes > nodesMax || (o.Scenario == ScenarioDecommission && o.Nodes <= votersMin) {
		problems = append(problems, fmt.Errorf("%w: %d nodes: want %d to %d (more than %d to decommission one)", ErrOptions, o.Nodes, votersMin, nodesMax, votersMin))
	}
	if o.MetaSnapshotEntries < 0 {
		problems = append(problems, fmt.Errorf("%w: meta snapshot entries %d: want 0 (node default) or more", ErrOptions, o.MetaSnapshotEntries))
	}
	if o.Duration < 0 || o.Binary == "" || o.Dir == "" {
		problems = append(problems, fmt.Errorf("%w: duration must be >= 0 and binary and dir set", ErrOptions))
	}
	return o, errors.Join(problems...)
}

// serverTimings are the dead-after and force-promote delays the nodes
// run with, and whether the binary honours the variables that set them;
// metaSnapshotEntries is the metastore's snapshot interval asked of a
// binary that knows EnvMetaSnapshotEntries, 0 when not asked.
type serverTimings struct {
	honoured            bool
	memberDeadAfter     time.Duration
	forcePromoteAfter   time.Duration
	metaSnapshotEntries int
}

// timingsFor decides the nodes' timings: the asked ones if this build's
// configuration knows the variables, the defaults otherwise; it returns
// the variables to set.
func timingsFor(o Options) (serverTimings, []string) {
	defaults := config.Default()
	timings := serverTimings{honoured: envKnown(EnvHeartbeatInterval) && envKnown(EnvMemberDeadAfter) && envKnown(EnvForcePromoteAfter),
		memberDeadAfter:   time.Duration(defaults.Cluster.DeadAfterMs) * time.Millisecond,
		forcePromoteAfter: time.Duration(defaults.Moves.ForcePromoteAfterMs) * time.Millisecond}
	var env []string
	for _, setting := range []struct {
		name  string
		value time.Duration
		used  *time.Duration
	}{
		{EnvHeartbeatInterval, o.HeartbeatInterval, nil},
		{EnvMemberDeadAfter, o.MemberDeadAfter, &timings.memberDeadAfter},
		{EnvForcePromoteAfter, o.ForcePromoteAfter, &timings.forcePromoteAfter},
	} {
		if setting.value <= 0 {
			continue
		}
		env = append(env, fmt.Sprintf("%s=%d", setting.name, setting.value.Milliseconds()))
		if timings.honoured && setting.used != nil {
			*setting.used = setting.value
		}
	}
	if o.MetaSnapshotEntries > 0 && envKnown(EnvMetaSnapshotEntries) {
		env = append(env, fmt.Sprintf("%s=%d", EnvMetaSnapshotEntries, o.MetaSnapshotEntries))
		timings.metaSnapshotEntries = o.MetaSnapshotEntries
	}
	return timings, env
}

func envKnown(name string) bool { return slices.Contains(config.EnvNames(), name) }

// run is one soak run; only the scenario goroutine uses it.
type run struct {
	opts    Options
	pacing  pacing
	timings serverTimings
	// rng draws every choice of the scenario.
	rng     *rand.Rand
	began   time.Time
	cluster *cluster
	ledger  *ledger
	load    *load
	report  *Report
	// stopConsumers ends the consumers (set when they start).
	stopConsumers context.CancelFunc
}

// Run performs one soak run and returns its report. The error is set only
// when the run could not be carried out at all (bad options, a cluster
// that never started); a run whose audit or steps failed returns a report
// whose Failures say why.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	timings, timingEnv := timingsFor(opts)
	r := &run{opts: opts, pacing: pacingFor(opts.Duration), timings: timings, rng: rand.New(rand.NewPCG(opts.Seed, 0)),
		began: time.Now(), cluster: newCluster(opts.Binary, opts.Dir, timingEnv, opts.Logf),
		report: &Report{Scenario: opts.Scenario, Seed: opts.Seed, Nodes: opts.Nodes, Dir: opts.Dir}, stopConsumers: func() {}}
	defer r.cluster.stopAll()
	if err := r.setUp(ctx); err != nil {
		return r.report, err
	}
	r.scenario(ctx)
	r.finish(ctx)
	r.report.Elapsed = time.Since(r.began)
	return r.report, nil
}

func (r *run) logf(format string, args ...any) {
	r.opts.Logf("[%s] "+format, append([]any{time.Since(r.began).Round(time.Second)}, args...)...)
}

// setUp starts the cluster, creates the topics (the hot topic with its
// dead-letter topic and fan-out child), fills the cold topic and starts
// the load.
func (r *run) setUp(ctx context.Context) error {
	r.logf("starting %d nodes in %s (timings: member dead after %s, force-promote after %s, variables honoured: %t; metastore snapshot every %d entries, 0: node default)",
		r.opts.Nodes, r.opts.Dir, r.timings.memberDeadAfter, r.timings.forcePromoteAfter, r.timings.honoured, r.timings.metaSnapshotEntries)
	if err := r.cluster.startInitial(ctx, r.opts.Nodes); err != nil {
		return err
	}
	for _, topic := range []client.CreateTopicRequest{
		{Name: deadTopic, Partitions: deadPartitions, VisibilityTimeoutMs: visibilityTimeoutMs},
		{Name: hotTopic, Partitions: hotPartitions, VisibilityTimeoutMs: visibilityTimeoutMs, MaxDeliveries: hotMaxDeliveries,
			DeadLetterTopic: deadTopic},
		{Name: childTopic, Parent: hotTopic, VisibilityTimeoutMs: visibilityTimeoutMs},
		{Name: coldTopic, Partitions: coldPartitions, VisibilityTimeoutMs: visibilityTimeoutMs},
	} {
		if err := r.cluster.control(ctx, func(ctx context.Context, c *client.Client) error {
			_, err := c.CreateTopic(ctx, topic)
			return err
		}); err != nil {
			return fmt.Errorf("create topic %s: %w", topic.Name, err)
		}
	}
	ledger, err := newLedger(filepath.Join(r.opts.Dir, "ledger.ndjson"), r.began)
	if err != nil {
		return err
	}
	r.ledger, r.load = ledger, newLoad(r.cluster, ledger, r.opts.Seed)
	r.ledger.setStep("fill-cold")
	if err := r.load.fillCold(ctx); err != nil {
		return fmt.Errorf("fill the cold topic: %w", err)
	}
	return nil
}
