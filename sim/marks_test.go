package sim

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/chaos"
)

// notYetRequired lists the core's marks that no sweep requires, with why.
// A mark leaves this set when a sweep starts requiring it; the set is
// meant to empty.
var notYetRequired = map[chaos.Mark]string{}

// requiredMarks returns every mark some sweep definition requires.
func requiredMarks() []chaos.Mark {
	lists := [][]chaos.Mark{ExpectedMarks, ExpectedSingleNodeMarks, ExpectedClusterMarks, ExpectedDiskPressureMarks, ExpectedLateSyncMarks, ExpectedMoveMarks, ciMoveMarks, MoveFaultMarks(), ExpectedDeadLetterMarks,
		ExpectedDeadLetterAimedMarks, ExpectedFanoutMarks, FanoutFaultMarks(), ExpectedFanoutAgedOutMarks, nightlyMoveMarkList()}
	return slices.Concat(lists...)
}

// TestEveryRegisteredMarkIsRequiredOrExcused: each mark of the core's
// registry is required by a sweep or listed in notYetRequired with a
// reason, never both; and notYetRequired names registered marks only.
func TestEveryRegisteredMarkIsRequiredOrExcused(t *testing.T) {
	required := requiredMarks()
	for _, mark := range chaos.Registered {
		reason, excused := notYetRequired[mark]
		isRequired := slices.Contains(required, mark)
		switch {
		case !isRequired && !excused:
			t.Errorf("%s is required by no sweep and not listed in notYetRequired", mark)
		case isRequired && excused:
			t.Errorf("%s is required by a sweep: remove it from notYetRequired", mark)
		case excused && reason == "":
			t.Errorf("%s is listed in notYetRequired without a reason", mark)
		}
	}
	for mark := range notYetRequired {
		require.Contains(t, chaos.Registered, mark, "notYetRequired names a mark the registry does not declare")
	}
}
