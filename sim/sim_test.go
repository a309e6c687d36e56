package sim

import (
	"flag"
	"fmt"
	"os"
	"testing"
	"time"
)

var (
	seedFlag     = flag.Uint64("seed", 1, "the seed to run (with -seeds, the first of the sweep)")
	seedsFlag    = flag.Int("seeds", 0, "sweep this many seeds starting at -seed (0: run -seed only)")
	durationFlag = flag.Duration("duration", 30*time.Second, "simulated time of the safety phase per seed")
	faultsFlag   = flag.String("faults", "all", "fault profile: none, crash, disk, network, all")
)

func optionsFromFlags(t *testing.T, seed uint64) Options {
	t.Helper()
	profile, err := ProfileByName(*faultsFlag)
	if err != nil {
		t.Fatal(err)
	}
	opts := DefaultOptions(seed)
	opts.Faults = profile
	opts.SafetyMs = durationFlag.Milliseconds()
	if testing.Verbose() && *seedsFlag == 0 {
		opts.Verbose = os.Stdout
	}
	return opts
}

// TestSim runs -seed, or sweeps -seeds seeds from -seed, and prints the
// trace hash of each run and a summary line of the sweep.
func TestSim(t *testing.T) {
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
// workload or the faults.
const markSweepSeedsMin = 50

func sweep(t *testing.T, first uint64, count int) {
	var failed, lost, duplicated int
	var simMs int64
	marks := map[string]int{}
	start := time.Now()
	for seed := first; seed < first+uint64(count); seed++ {
		report := Run(optionsFromFlags(t, seed))
		simMs += report.SimMs
		lost += report.Lost
		duplicated += report.Duplicated
		for _, mark := range report.Marks {
			marks[mark.Name] += mark.Count
		}
		if report.Failure != nil {
			failed++
			t.Error(report.FailureText())
		}
	}
	fmt.Printf("sim: seeds=%d failed=%d lost=%d duplicated=%d sim_s=%.0f wall_s=%.1f\n",
		count, failed, lost, duplicated, float64(simMs)/1000, time.Since(start).Seconds())
	missing := MissingMarks(marks)
	fmt.Printf("sim: coverage marks reached %d of %d; never reached: %v\n", len(ExpectedMarks)-len(missing), len(ExpectedMarks), missing)
	if count >= markSweepSeedsMin && *faultsFlag == "all" && len(missing) > 0 {
		t.Errorf("coverage marks never reached in %d seeds: %v", count, missing)
	}
}
