package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
)

// TestIsMoveCommandSkipsOnlyWhatIsNoMove: the type byte tells the four
// move commands moveCommandOf names (the first four here) from the others.
func TestIsMoveCommandSkipsOnlyWhatIsNoMove(t *testing.T) {
	commands := []meta.Command{
		meta.SetTarget{Topic: "t", ExpectedOwner: "n1", Target: "n2"},
		meta.CompleteMove{Topic: "t", ExpectedOwner: "n1", ExpectedTarget: "n2"},
		meta.ForcePromote{Topic: "t", ExpectedOwner: "n1", ExpectedTarget: "n2"},
		meta.AbortMove{Topic: "t"},
		meta.MemberHeartbeat{ID: "n1"},
		meta.CreateTopic{Name: "t", Owners: []string{"n1"}},
		meta.DeleteTopic{Name: "t"},
		meta.SetDraining{ID: "n1"},
	}
	for i, command := range commands {
		data, err := meta.EncodeCommand(meta.ProposalID{}, command)
		require.NoError(t, err)
		require.Equal(t, i < 4, isMoveCommand(data), fmt.Sprintf("%T", command))
	}
	require.False(t, isMoveCommand(nil))
}
