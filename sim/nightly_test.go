package sim

import (
	"flag"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"narad/chaos"
)

var (
	nightlyFlag     = flag.Duration("nightly", 0, "TestNightly: rotate the worlds on fresh seeds for this long (0: skip the test)")
	nightlySeedFlag = flag.Uint64("nightly-seed", 0, "TestNightly: the first seed (0: drawn from today's date, UTC)")
)

// nightlyWorld is one world the nightly rotates through: its node count,
// scenarios and fault profile.
type nightlyWorld struct {
	nodes                             int
	moves, users, deadLetters, fanout bool
	// deadLettersAimed and agedOut add the doomed dead-letter topics
	// (deadletters_doomed.go) and the aged-out fan-out world
	// (fanout_agedout.go), each the only world to reach its mark.
	deadLettersAimed, agedOut bool
	profile                   Profile
}

func (w nightlyWorld) String() string {
	scenarios := ""
	if w.moves {
		scenarios += " moves"
	}
	if w.users {
		scenarios += " users"
	}
	if w.deadLetters {
		scenarios += " deadletters"
	}
	if w.fanout {
		scenarios += " fanout"
	}
	if w.deadLettersAimed {
		scenarios += " deadletters-aimed"
	}
	if w.agedOut {
		scenarios += " fanout-aged-out"
	}
	return fmt.Sprintf("nodes=%d%s faults=%s", w.nodes, scenarios, w.profile.Name)
}

// nightlyWorlds lists the worlds in the order the nightly runs them: a
// single node, three and five nodes with moves, under every fault profile;
// then a three-node world with the users scenario, dead letters on one
// node and on three with moves, fan-out children on three nodes with
// moves, doomed dead-letter topics on three nodes with moves, and the
// aged-out fan-out world on one node (an hour of simulated time, about
// ten seconds). Run i of the nightly is world i modulo
// the list, with seed first+i.
func nightlyWorlds() []nightlyWorld {
	var worlds []nightlyWorld
	for _, profile := range profiles {
		worlds = append(worlds,
			nightlyWorld{nodes: 1, profile: profile},
			nightlyWorld{nodes: 3, moves: true, profile: profile},
			nightlyWorld{nodes: 5, moves: true, profile: profile})
	}
	return append(worlds, nightlyWorld{nodes: 3, users: true, profile: ProfileAll},
		nightlyWorld{nodes: 1, deadLetters: true, profile: ProfileAll},
		nightlyWorld{nodes: 3, moves: true, deadLetters: true, profile: ProfileAll},
		nightlyWorld{nodes: 3, moves: true, fanout: true, profile: ProfileAll},
		nightlyWorld{nodes: 3, moves: true, deadLetters: true, deadLettersAimed: true, profile: ProfileAll},
		nightlyWorld{nodes: 1, fanout: true, agedOut: true, profile: ProfileAll})
}

func (w nightlyWorld) options(seed uint64) Options {
	opts := DefaultOptions(seed)
	opts.Nodes, opts.Moves, opts.Users, opts.DeadLetters, opts.Faults = w.nodes, w.moves, w.users, w.deadLetters, w.profile
	opts.Fanout, opts.DeadLettersAimed, opts.FanoutAgedOut = w.fanout, w.deadLettersAimed, w.agedOut
	if w.agedOut {
		opts.SafetyMs = AgedOutSafetyMs
	}
	opts.Weather = WeatherAuto // as TestSim's sweeps: a seeded half of the moves worlds
	return opts
}

// agedOutRoundsPerRun: the aged-out world (an hour of simulated time, ten
// times a moves world's wall time) runs in one rotation of this many, so
// that it takes a few percent of the nightly, not a quarter; it reaches
// its mark in every run.
const agedOutRoundsPerRun = 10

// nightlySeedPerDay spaces the seeds of two days' nightlies: a day's first
// seed is its date (YYYYMMDD) times this, so no two nightlies of a year
// share a seed unless one runs this many worlds.
const nightlySeedPerDay = 1_000_000

// nightlyFirstSeed is -nightly-seed, or the first seed of today.
func nightlyFirstSeed() uint64 {
	if *nightlySeedFlag != 0 {
		return *nightlySeedFlag
	}
	now := time.Now().UTC() //determinism:ok only picks the first seed, printed so that a run can be repeated
	date := uint64(now.Year())*10_000 + uint64(now.Month())*100 + uint64(now.Day())
	return date * nightlySeedPerDay
}

// nightlyStats sums the runs of a nightly. A worker process writes its
// own as JSON (nightly_procs_test.go) and the nightly merges them.
type nightlyStats struct {
	Runs   int
	SimMs  int64
	WallS  float64
	Marks  map[string]int
	Fired  map[string]int
	Failed []Report
	// SimMsByNodes and WallSByNodes sum simulated and wall time by world
	// size, for the speed of each (simulated seconds per wall second of
	// one process).
	SimMsByNodes map[int]int64
	WallSByNodes map[int]float64
	RunsByNodes  map[int]int
	// MovesRuns and MovesMarks count the runs of the worlds
	// nightlyMoveMarks are required of, and the marks they reached.
	MovesRuns  int
	MovesMarks map[string]int
}

func newNightlyStats() *nightlyStats {
	return &nightlyStats{Marks: map[string]int{}, Fired: map[string]int{}, SimMsByNodes: map[int]int64{},
		WallSByNodes: map[int]float64{}, RunsByNodes: map[int]int{}, MovesMarks: map[string]int{}}
}

func (s *nightlyStats) add(report Report) {
	s.Runs++
	s.SimMs += report.SimMs
	s.WallS += report.WallSeconds
	s.SimMsByNodes[report.Nodes] += report.SimMs
	s.WallSByNodes[report.Nodes] += report.WallSeconds
	s.RunsByNodes[report.Nodes]++
	moves := countsForNightlyMoveMarks(report)
	if moves {
		s.MovesRuns++
	}
	for _, mark := range report.Marks {
		s.Marks[mark.Name] += mark.Count
		if moves {
			s.MovesMarks[mark.Name] += mark.Count
		}
	}
	for _, site := range sitesFiredIn(report) {
		s.Fired[site.Name] += site.Count
	}
	if report.Failure != nil {
		s.Failed = append(s.Failed, report)
	}
}

// TestNightly is `make nightly`: for -nightly of wall time it runs fresh
// seeds from -nightly-seed, rotating the worlds of nightlyWorlds, and
// ends with the coverage marks reached, the fault sites fired and the
// reproduce command of every failed run. Each run is deterministic per
// seed; the wall clock only decides when to stop starting runs. The runs
// are shared among -nightly-procs processes (one per CPU by default;
// nightly_procs_test.go), since one run uses one CPU.
func TestNightly(t *testing.T) {
	if *nightlyFlag <= 0 {
		t.Skip("the nightly runs only with -nightly=DURATION (make nightly)")
	}
	first, procs := nightlyFirstSeed(), nightlyProcs()
	if *nightlyWorkerFlag >= 0 {
		runNightlyWorker(t, first, procs)
		return
	}
	fmt.Printf("nightly: first seed %d, %d worlds in rotation, for %s in %d processes (reproduce the whole sequence with -nightly-seed=%d)\n",
		first, len(nightlyWorlds()), *nightlyFlag, procs, first)
	began := time.Now() //determinism:ok measures the nightly's wall time only
	var stats *nightlyStats
	if procs == 1 {
		stats = nightlyRuns(first, 0, 1)
	} else {
		stats = nightlyInWorkers(t, first, procs)
	}
	stats.print()
	printNightlyThroughput(stats, procs, time.Since(began))
	if len(stats.Failed) > 0 {
		t.Errorf("%d of %d nightly runs failed; the reproduce commands are above", len(stats.Failed), stats.Runs)
	}
	if missing := stats.missingRequired(len(nightlyWorlds())); len(missing) > 0 {
		t.Errorf("marks a sweep requires were never reached in %d runs: %v", stats.Runs, missing)
	}
	if missing, _ := nightlyMoveMarksMissing(stats.MovesRuns, stats.MovesMarks); len(missing) > 0 {
		t.Errorf("marks the nightly requires of its moves worlds were never reached in %d runs of them: %v", stats.MovesRuns, missing)
	}
}

// nightlyRuns runs, until -nightly has passed since it began, the runs i
// of the rotation with i modulo procs equal to worker (every run when
// procs is 1): run i is world i modulo the rotation, with seed first+i.
// It always makes its first run.
func nightlyRuns(first uint64, worker, procs int) *nightlyStats {
	worlds := nightlyWorlds()
	stats := newNightlyStats()
	deadline := time.Now().Add(*nightlyFlag) //determinism:ok bounds the nightly's wall time only
	for i := worker; i == worker || time.Now().Before(deadline); i += procs {
		world := worlds[i%len(worlds)]
		if world.agedOut && (i/len(worlds))%agedOutRoundsPerRun != 0 {
			continue
		}
		report := Run(world.options(first + uint64(i)))
		stats.add(report)
		if report.Failure != nil {
			fmt.Printf("nightly: run %d (%s) failed:\n%s", i, world, report.FailureText())
		}
	}
	return stats
}

// nightlyRoundsForMarks is how many times the nightly must have run every
// world before a required mark never reached fails it (a short nightly
// only reports them).
const nightlyRoundsForMarks = markSweepSeedsMin

// missingRequired lists the required marks never reached, once the
// nightly ran every one of its worlds nightlyRoundsForMarks times; the
// rare moves marks have a rule of their own (nightlyMoveMarks).
func (s *nightlyStats) missingRequired(worlds int) []chaos.Mark {
	if s.Runs < worlds*nightlyRoundsForMarks {
		return nil
	}
	rare := nightlyMoveMarkList()
	required := slices.DeleteFunc(requiredMarks(), func(mark chaos.Mark) bool { return slices.Contains(rare, mark) })
	return MissingMarks(s.Marks, required)
}

func (s *nightlyStats) print() {
	fmt.Printf("nightly: runs=%d failed=%d sim_s=%.0f wall_s=%.1f sim_per_wall=%.0f\n",
		s.Runs, len(s.Failed), float64(s.SimMs)/1000, s.WallS, float64(s.SimMs)/1000/max(s.WallS, 0.001))
	for _, nodes := range slices.Sorted(maps.Keys(s.RunsByNodes)) {
		fmt.Printf("nightly: nodes=%d runs=%d sim_s=%.0f wall_s=%.1f sim_per_wall=%.0f\n", nodes, s.RunsByNodes[nodes],
			float64(s.SimMsByNodes[nodes])/1000, s.WallSByNodes[nodes], float64(s.SimMsByNodes[nodes])/1000/max(s.WallSByNodes[nodes], 0.001))
	}
	all := allMarks()
	missing := MissingMarks(s.Marks, all)
	fmt.Printf("marks: reached %d of %d; never reached: %v\n", len(all)-len(missing), len(all), missing)
	s.printNightlyMoveMarks()
	sites := registeredSiteNames()
	var neverFired []string
	for _, site := range sites {
		if s.Fired[site] == 0 {
			neverFired = append(neverFired, site)
		}
	}
	fmt.Printf("sites: fired %d of %d; never fired: %v\n", len(sites)-len(neverFired), len(sites), neverFired)
	for _, report := range s.Failed {
		fmt.Println(reproduceLine(report))
	}
}

// allMarks is every mark a run can reach: the core's registry and the
// simulator's own marks that a sweep requires, each once, sorted.
func allMarks() []chaos.Mark {
	marks := slices.Concat(chaos.Registered, requiredMarks())
	slices.Sort(marks)
	return slices.Compact(marks)
}

// reproduceLine is the reproduce command of a failed run, from its
// failure text.
func reproduceLine(report Report) string {
	for line := range strings.Lines(report.FailureText()) {
		if strings.HasPrefix(line, "reproduce: ") {
			return strings.TrimSuffix(line, "\n")
		}
	}
	return fmt.Sprintf("reproduce: seed %d (no reproduce command in its failure text)", report.Seed)
}

// TestNightlyRotatesEveryWorld: the rotation has one, three and five
// nodes, moves in clusters, every fault profile in each size, and no
// world twice.
func TestNightlyRotatesEveryWorld(t *testing.T) {
	worlds := nightlyWorlds()
	seen := map[string]bool{}
	for _, world := range worlds {
		if seen[world.String()] {
			t.Errorf("world %s is twice in the rotation", world)
		}
		seen[world.String()] = true
	}
	for _, nodes := range []int{1, 3, 5} {
		for _, profile := range profiles {
			moves := nodes > 1
			if !seen[nightlyWorld{nodes: nodes, moves: moves, profile: profile}.String()] {
				t.Errorf("no world of %d nodes (moves %t) with faults %s", nodes, moves, profile.Name)
			}
		}
	}
}

// TestNightlyReproduceLineIsTheFailuresCommand: a failed run's line names
// its seed and world as the failure text does.
func TestNightlyReproduceLineIsTheFailuresCommand(t *testing.T) {
	report := Report{Seed: 42, Nodes: 5, Moves: true, Profile: "network", SafetyMs: 30_000,
		Failure: &Failure{Checker: "single-writer", Detail: "two writers"}}
	line := reproduceLine(report)
	for _, want := range []string{"reproduce: go test ./sim", "-seed=42", "-nodes=5", "-moves=true", "-faults=network"} {
		if !strings.Contains(line, want) {
			t.Errorf("reproduce line %q lacks %q", line, want)
		}
	}
	if strings.Contains(line, "\n") {
		t.Errorf("reproduce line %q spans lines", line)
	}
}
