package sim

import (
	"flag"
	"slices"

	"narad/chaos"
)

// plantFlag plants a bug in every run of TestSim, so that the catch a
// planted-bug test prints can be run again alone (its reproduce line).
// Only a test binary built with -tags plantedbugs can plant one
// (plantFromFlag).
var plantFlag = flag.String("plant", "", "TestSim: plant this bug (as the planted-bug tests name it) in every run; needs -tags plantedbugs")

// bugNamed is the planted bug of that name, among every list of them.
func bugNamed(name string) (chaos.Bug, bool) {
	all := slices.Concat(chaos.Bugs, chaos.FanoutBugs, chaos.ClusterBugs, chaos.ClusterBugsNotRequired)
	for _, bug := range all {
		if bug.String() == name {
			return bug, true
		}
	}
	return 0, false
}
