package sim

import (
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// determinismSeeds is the sample of seeds run twice; a map-ordered loop
// diverged on one seed in twelve when measured, so one seed proves little.
const determinismSeeds = 12

func shortOptions(seed uint64) Options {
	opts := DefaultOptions(seed)
	opts.SafetyMs = 8_000
	return opts
}

// TestSameSeedSameTrace runs each seed of a sample twice and compares the
// trace hashes and reports.
func TestSameSeedSameTrace(t *testing.T) {
	for seed := uint64(1); seed <= determinismSeeds; seed++ {
		first, second := Run(shortOptions(seed)), Run(shortOptions(seed))
		require.Nil(t, first.Failure, "seed %d", seed)
		require.Equal(t, first.TraceHash, second.TraceHash, "seed %d diverged", seed)
		require.Equal(t, first.Summary()[:80], second.Summary()[:80])
	}
}

// TestNoStateLeaksBetweenRuns runs A, B, A in one process: package-level
// state left by B must not change A.
func TestNoStateLeaksBetweenRuns(t *testing.T) {
	a1 := Run(shortOptions(101))
	Run(shortOptions(202))
	a2 := Run(shortOptions(101))
	require.Equal(t, a1.TraceHash, a2.TraceHash)
}

// TestSameTraceAcrossProcesses runs a seed in a child process (this test
// binary, running TestSim) and compares its printed trace hash with this
// process's.
func TestSameTraceAcrossProcesses(t *testing.T) {
	if os.Getenv("NARAD_SIM_CHILD") != "" {
		t.Skip("already the child")
	}
	opts := DefaultOptions(7)
	opts.SafetyMs = durationFlag.Milliseconds()
	here := Run(opts)
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSim$", "-test.v", "-seed=7", "-faults=all",
		"-duration="+durationFlag.String())
	cmd.Env = append(os.Environ(), "NARAD_SIM_CHILD=1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	match := regexp.MustCompile(`trace-hash: ([0-9a-f]{16})`).FindSubmatch(out)
	require.NotNil(t, match, "child printed no trace hash:\n%s", out)
	require.Equal(t, string(match[1]), formatHash(here.TraceHash))
}
