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

// TestTheStateCheckerTakesADirectoryMadeAgainBetweenTwoLooksAsARecovery:
// a node that applies a topic's delete and its creation again in one step
// removes a partition directory it had open and opens the new creation's
// there before the checker looks again (seed 6721603). The directory is
// open at both looks; under another creation its empty state is a new
// partition's recovery, not a fall below the deleted one's durable
// records. Under the same creation the same state still fails.
func TestTheStateCheckerTakesADirectoryMadeAgainBetweenTwoLooksAsARecovery(t *testing.T) {
	old, recreated := meta.TopicIdentity{Incarnation: 1, CreatedAtMs: 1}, meta.TopicIdentity{Incarnation: 2, CreatedAtMs: 2}
	const dir = "topics/t/p00000"
	for _, c := range []struct {
		identity  meta.TopicIdentity
		wantsFail bool
	}{{recreated, false}, {old, true}} {
		w := removalWorld()
		n := w.nodes[0]
		r := record(n, dir) // as after a look at the deleted creation's open partition
		r.durableHWM, r.identity, r.seen, r.servedDurable, r.openIdentity = 1, old, true, true, old

		now := []node.PartitionState{{Dir: dir, Topic: "t", Identity: c.identity}}
		w.checker.checkOpenedServeDurable(n, now)
		w.checker.checkPartition(w, n, now[0])
		require.Equal(t, c.wantsFail, w.failure != nil, "identity %+v: %v", c.identity, w.failure)
		if c.wantsFail {
			require.Contains(t, w.failure.Error(), "fell below the durable 1")
			continue
		}
		require.Zero(t, r.durableHWM, "the new creation's record starts empty")
		require.Equal(t, recreated, r.identity)
		require.Equal(t, recreated, r.openIdentity)
	}
}
