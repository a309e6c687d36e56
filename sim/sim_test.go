package sim

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"narad/chaos"
)

var (
	seedFlag         = flag.Uint64("seed", 1, "the seed to run (with -seeds, the first of the sweep)")
	seedsFlag        = flag.Int("seeds", 0, "sweep this many seeds starting at -seed (0: run -seed only)")
	durationFlag     = flag.Duration("duration", 30*time.Second, "simulated time of the safety phase per seed")
	faultsFlag       = flag.String("faults", "all", "fault profile: none, crash, disk, network, all")
	nodesFlag        = flag.Int("nodes", 1, "nodes in the world: 1, or a cluster of 3 or 5")
	movesFlag        = flag.Bool("moves", false, "in a cluster, add the moves scenario: scale-up, decommission, move-phase faults, write storms")
	sitesFlag        = flag.String("sites", "auto", "the core's fault sites: auto (on in a seeded half of the runs), on, off")
	usersFlag        = flag.Bool("users", false, "in a cluster, add the users scenario: root seeds on every node, user changes at random nodes")
	deadFlag         = flag.Bool("deadletters", false, "give the topic a dead-letter topic and a small max_deliveries, with a consumer of the dead letters")
	aimedFlag        = flag.Bool("deadletters-aimed", false, "with -deadletters in a cluster, add topics deleted while their dead letters are being written, whose forwarded writes are lost")
	fanoutFlag       = flag.Bool("fanout", false, "add the fan-out scenario: a fan-out child and a delay child of the topic, checked at the end")
	agedOutFlag      = flag.Bool("fanout-aged-out", false, "with -fanout on one node, give the topic an hour's retention and fail the copy child's disk for longer (the safety phase lasts at least AgedOutSafetyMs)")
	mediaFlag        = flag.Bool("media-clusters", true, "let three-node moves worlds draw the media fault (=false turns it off there)")
	diskPressureFlag = flag.Bool("disk-pressure", true, "run nodes short of disk in a seeded 30 % of the cluster worlds with disk faults (=false turns it off)")
	lateSyncsFlag    = flag.Bool("late-syncs", true, "in a seeded half of the runs, run each Ready's partition rounds some time into the round, after the inputs the node takes meanwhile, as the node contract's pipelining lets a driver do (=false turns it off)")
	weatherFlag      = flag.String("weather", "auto", "in a moves world, fault spells and lulls in the safety phase: auto (in a seeded half of the runs), on, off")
	hashesFlag       = flag.Bool("hashes", false, "in a sweep, print each seed's trace hash (seed=S hash=H, and the failed checker if any), to compare two builds seed by seed")
)

func optionsFromFlags(t *testing.T, seed uint64) Options {
	t.Helper()
	profile, err := ProfileByName(*faultsFlag)
	if err != nil {
		t.Fatal(err)
	}
	sites, err := SitesModeByName(*sitesFlag)
	if err != nil {
		t.Fatal(err)
	}
	weather, err := WeatherModeByName(*weatherFlag)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions(seed)
	opts.Sites = sites
	opts.Weather = weather
	opts.Nodes = *nodesFlag
	opts.Moves = *movesFlag
	opts.Users = *usersFlag
	opts.DeadLetters = *deadFlag
	opts.DeadLettersAimed = *aimedFlag
	opts.Fanout = *fanoutFlag
	opts.FanoutAgedOut = *agedOutFlag
	opts.MediaInClusters = *mediaFlag
	opts.DiskPressure = *diskPressureFlag
	opts.LateSyncs = *lateSyncsFlag
	opts.Faults = profile
	opts.SafetyMs = durationFlag.Milliseconds()
	if opts.FanoutAgedOut && opts.Nodes == 1 {
		opts.SafetyMs = max(opts.SafetyMs, AgedOutSafetyMs)
	}
	if testing.Verbose() && *seedsFlag == 0 {
		opts.Verbose = os.Stdout
	}
	if err := ignoredFlags(opts); err != nil {
		t.Fatal(err)
	}
	return opts
}

// ignoredFlags refuses a world the flags do not make: a node count the
// simulator has no world of, or a flag set on that the world ignores (a
// sweep that seems to test a scenario while it runs without it; sim
// review). The reproduce lines name every flag, the false ones too.
func ignoredFlags(opts Options) error {
	if err := worldError(opts, "-"); err != nil {
		return err
	}
	if !*mediaFlag && !(opts.Nodes == 3 && opts.Moves) {
		return fmt.Errorf("-media-clusters=false changes only three-node moves worlds")
	}
	return nil
}

// worldError refuses options that make no world of the simulator (a node
// count it has none of) or set a scenario on that their world ignores;
// dash is how the names are written: "-" for TestSim's flags, "" for a
// seed line's words.
func worldError(opts Options, dash string) error {
	switch {
	case opts.Nodes != 1 && opts.Nodes != 3 && opts.Nodes != 5:
		return fmt.Errorf("%snodes=%d: the simulator has worlds of 1, 3 and 5 nodes", dash, opts.Nodes)
	case opts.Nodes == 1 && (opts.Moves || opts.Users):
		return fmt.Errorf("%[1]smoves and %[1]susers need a cluster: add %[1]snodes=3 or %[1]snodes=5", dash)
	case opts.DeadLettersAimed && (!opts.DeadLetters || opts.Nodes == 1):
		return fmt.Errorf("%[1]sdeadletters-aimed needs %[1]sdeadletters in a cluster", dash)
	case opts.FanoutAgedOut && (!opts.Fanout || opts.Nodes != 1):
		return fmt.Errorf("%[1]sfanout-aged-out needs %[1]sfanout on one node", dash)
	case opts.Weather == WeatherOn && !opts.Moves:
		return fmt.Errorf("%[1]sweather=on needs %[1]smoves", dash)
	}
	return nil
}

// TestSim runs -seed, or sweeps -seeds seeds from -seed, and prints the
// trace hash of each run and a summary line of the sweep.
func TestSim(t *testing.T) {
	plantFromFlag(t)
	if *seedsFlag == 0 {
		report := Run(optionsFromFlags(t, *seedFlag))
		fmt.Printf("trace-hash: %016x\n%s\n", report.TraceHash, report.Summary())
		if report.Failure != nil {
			t.Fatal(report.FailureText())
		}
		return
	}
	sweep(t, *seedFlag, *seedsFlag)
}

// markSweepSeedsMin is the sweep size from which every expected coverage
// mark must have been reached: a mark never hit shows a blind spot of the
// workload or the faults. A sweep of a cluster world must be
// markSweepClusterSeedsMin seeds: its rarest required mark,
// storage-segment-paged-in (a read of a sealed segment paged out, which
// needs a partition of more sealed segments than a cluster's spread of
// records often makes), is missed by some sweeps of 60 seeds (from
// 7420200 with -nodes=3 -moves), and a blind spot is shown by a sweep
// that is not, not by chance.
const (
	markSweepSeedsMin        = 50
	markSweepClusterSeedsMin = 200
)

// markSweepSeedsMinOf is the sweep size from which a sweep of opts's
// world must reach every expected mark.
func markSweepSeedsMinOf(opts Options) int {
	if opts.Nodes > 1 {
		return markSweepClusterSeedsMin
	}
	return markSweepSeedsMin
}

func sweep(t *testing.T, first uint64, count int) {
	var observe []func(uint64, Report)
	if *hashesFlag {
		observe = append(observe, printSeedHash)
	}
	stats := runSweep(t, first, count, func(seed uint64) Options { return optionsFromFlags(t, seed) }, observe...)
	stats.print("sim")
	expected := sweepExpectedMarks(optionsFromFlags(t, first))
	missing := MissingMarks(stats.marks, expected)
	if *movesFlag && *nodesFlag > 1 {
		fmt.Print(fanoutMatrix(stats.marks))
	}
	fmt.Printf("sim: coverage marks reached %d of %d; never reached: %v\n", len(expected)-len(missing), len(expected), missing)
	neverFired := NeverFiredSites(stats.sitesFired)
	fmt.Printf("sim: sites: fired %d of %d in %d runs with sites on; never fired: %v\n",
		len(chaos.Sites())-len(neverFired), len(chaos.Sites()), stats.sitesOnRuns, neverFired)
	if count >= markSweepSeedsMinOf(optionsFromFlags(t, first)) && *faultsFlag == "all" && len(missing) > 0 {
		t.Errorf("coverage marks never reached in %d seeds: %v", count, missing)
	}
}

// printSeedHash prints one line per seed of a sweep, so that two builds
// (a mutant and the unmutated code) can be compared seed by seed: equal
// hashes mean the runs took the same course.
func printSeedHash(seed uint64, report Report) {
	line := fmt.Sprintf("seed=%d hash=%s", seed, formatHash(report.TraceHash))
	if report.Failure != nil {
		line += " failed=" + report.Failure.Checker
	}
	fmt.Println(line)
}

// sweepExpectedMarks lists the marks a long sweep of runs like opts must
// reach with every fault.
func sweepExpectedMarks(opts Options) []chaos.Mark {
	expected := slices.Clone(ExpectedMarks)
	if opts.Nodes > 1 {
		expected = append(expected, ExpectedClusterMarks...)
	}
	if opts.Nodes > 1 && opts.DiskPressure {
		expected = append(expected, ExpectedDiskPressureMarks...)
	}
	if opts.LateSyncs {
		expected = append(expected, ExpectedLateSyncMarks...)
	}
	if singleNodeMediaSweep(opts) {
		expected = append(expected, ExpectedSingleNodeMarks...)
	}
	if opts.DeadLetters && opts.DeadLettersAimed && opts.Nodes > 1 {
		expected = append(expected, ExpectedDeadLetterAimedMarks...)
	}
	if opts.Fanout && opts.FanoutAgedOut && opts.Nodes == 1 {
		expected = append(expected, ExpectedFanoutAgedOutMarks...)
	}
	return expected
}

// sweepStats sums the reports of a sweep.
type sweepStats struct {
	seeds, failed, lost, duplicated int
	movesCompleted, movesAborted    int
	simMs                           int64
	wall                            time.Duration
	marks                           map[string]int
	// sitesFired sums the fault sites' firings by site; sitesOnRuns
	// counts the runs with the sites on.
	sitesFired  map[string]int
	sitesOnRuns int
	failoversMs []int64
	// lateJoinsMs are the late joins' times to serving, after compaction.
	lateJoinsMs []int64
	// mediaRuns counts the runs a media fault hit; zeroedRuns those where
	// one zeroed the last frames of a segment.
	mediaRuns, zeroedRuns int
	// porcupineUnknown counts the runs whose log history porcupine could
	// not finish in its budget (the one-pass check decided them).
	porcupineUnknown int
}

// runSweep runs count seeds from first, each with the options of its
// seed, and reports every failure; observe, if given, sees every report.
func runSweep(t *testing.T, first uint64, count int, options func(seed uint64) Options, observe ...func(uint64, Report)) sweepStats {
	stats := sweepStats{seeds: count, marks: map[string]int{}, sitesFired: map[string]int{}}
	start := time.Now()
	for seed := first; seed < first+uint64(count); seed++ {
		report := Run(options(seed))
		stats.simMs += report.SimMs
		stats.lost += report.Lost
		stats.duplicated += report.Duplicated
		stats.movesCompleted += report.MovesCompleted
		stats.movesAborted += report.MovesAborted
		for _, see := range observe {
			see(seed, report)
		}
		stats.failoversMs = append(stats.failoversMs, report.FailoversMs...)
		if report.LateJoinMs >= 0 && report.LateJoinCompactedAt > 0 {
			stats.lateJoinsMs = append(stats.lateJoinsMs, report.LateJoinMs)
		}
		for _, mark := range report.Marks {
			stats.marks[mark.Name] += mark.Count
		}
		if slices.ContainsFunc(report.Faults, func(fault chaos.Count) bool { return fault.Name == "media-corrupt" || fault.Name == "media-zeroed" }) {
			stats.mediaRuns++
		}
		if slices.ContainsFunc(report.Faults, func(fault chaos.Count) bool { return fault.Name == "media-zeroed" }) {
			stats.zeroedRuns++
		}
		for _, site := range report.SitesFired {
			stats.sitesFired[site.Name] += site.Count
		}
		if report.SitesOn {
			stats.sitesOnRuns++
		}
		if report.PorcupineUnknown {
			stats.porcupineUnknown++
		}
		if report.Failure != nil {
			stats.failed++
			t.Error(report.FailureText())
		}
	}
	stats.wall = time.Since(start)
	return stats
}

func (s sweepStats) print(name string) {
	fmt.Printf("%s: seeds=%d failed=%d lost=%d duplicated=%d moves=%d aborted=%d sim_s=%.0f wall_s=%.1f sim_per_wall=%.0f\n",
		name, s.seeds, s.failed, s.lost, s.duplicated, s.movesCompleted, s.movesAborted, float64(s.simMs)/1000, s.wall.Seconds(),
		float64(s.simMs)/1000/max(s.wall.Seconds(), 0.001))
	if len(s.failoversMs) > 0 {
		sorted := slices.Sorted(slices.Values(s.failoversMs))
		fmt.Printf("%s: failovers=%d min_ms=%d median_ms=%d max_ms=%d\n",
			name, len(sorted), sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1])
	}
	if s.porcupineUnknown > 0 {
		fmt.Printf("%s: porcupine ran out of its budget in %d runs; the one-pass log check decided them\n", name, s.porcupineUnknown)
	}
	if s.mediaRuns > 0 {
		fmt.Printf("%s: media faults hit %d runs (%d zeroed the end of a segment); nodes skipped %d corrupt records\n",
			name, s.mediaRuns, s.zeroedRuns, s.marks[string(chaos.MarkNodeCorruptRecordSkipped)])
	}
	if len(s.lateJoinsMs) > 0 {
		sorted := slices.Sorted(slices.Values(s.lateJoinsMs))
		fmt.Printf("%s: joins after compaction=%d min_ms=%d median_ms=%d max_ms=%d\n",
			name, len(sorted), sorted[0], sorted[len(sorted)/2], sorted[len(sorted)-1])
	}
}
