package sim

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/node"
)

// TestTheStateCheckerStartsAPartitionOfANewCreationEmpty: a partition
// that opens for a topic created again under its name may recover below
// what the deleted creation made durable in the same directory; one of
// the same creation may not.
func TestTheStateCheckerStartsAPartitionOfANewCreationEmpty(t *testing.T) {
	old, recreated := meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 1}, meta.TopicIdentity{Incarnation: 2, CreatedAtMs: 2}
	for _, c := range []struct {
		identity  meta.TopicIdentity
		wantsFail bool
	}{{recreated, false}, {old, true}} {
		w := removalWorld()
		r := &partitionRecord{key: "n1:topics/t/p00000", durableHWM: 5, durableCommitted: 2, identity: old}
		w.checker.recovered(w, r, node.PartitionState{Dir: "topics/t/p00000", Topic: "t", Identity: c.identity})
		require.Equal(t, c.wantsFail, w.failure != nil, "identity %+v: %v", c.identity, w.failure)
		if !c.wantsFail {
			require.Zero(t, r.durableHWM, "the new creation's record starts empty")
			require.Equal(t, recreated, r.identity)
		}
	}
}
