package sim

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDiskSweepsFailOpensReadsAndRemoves: the disk profile's write
// failures arm, in half of them, one to three failures of an open, a read
// or a removal (the simulated disk had no fault for those, so the paths
// of a sealed segment reopened, a read that fails and a retention that
// cannot remove never ran here: storage review); a short sweep arms each
// kind and passes.
func TestDiskSweepsFailOpensReadsAndRemoves(t *testing.T) {
	armed := map[string]int{}
	for seed := range uint64(6) {
		opts := DefaultOptions(6275000 + seed)
		opts.Faults = ProfileDisk
		r := Run(opts)
		require.Nil(t, r.Failure, "seed %d: %s", opts.Seed, r.Summary())
		for _, fault := range r.Faults {
			armed[fault.Name] += fault.Count
		}
	}
	for _, kind := range []string{"open", "read", "remove"} {
		require.Positive(t, armed[kind+"-failure-armed"], "%s failures armed in six seeds", kind)
	}
}
