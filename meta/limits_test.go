package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A create or a growth carrying placement limits is rejected at apply
// when it would pass them (two creates that each passed their proposer's
// check cannot both apply), and changes nothing; the limits survive the
// command codec.
func TestPlacementLimitsAtApply(t *testing.T) {
	s := stateWith(t, baseSetup()...) // topic "t": one partition on m1, one on m2
	limits := PlacementLimits{TopicsMax: 2, PartitionsPerNodeMax: 2}
	withLimits := func(c CreateTopic) CreateTopic { c.Limits = limits; return c }

	requireLimit(t, s, withLimits(createTopic("u", "m1", "m1")), LimitPartitionsPerMember)
	require.NoError(t, withLimits(createTopic("u", "m1", "m3")).apply(s))
	requireLimit(t, s, withLimits(createTopic("v", "m3")), LimitTopics)
	require.NoError(t, createTopic("v", "m3").apply(s), "no limits, no bound")

	grow := 4
	requireLimit(t, s, AlterTopic{Name: "u", Partitions: &grow, NewOwners: []string{"m2", "m2"}, Limits: limits}, LimitPartitionsPerMember)
	grow = 3
	require.NoError(t, AlterTopic{Name: "u", Partitions: &grow, NewOwners: []string{"m2"}, Limits: limits}.apply(s))

	encoded, err := EncodeCommand(ProposalID{}, withLimits(createTopic("w", "m1")))
	require.NoError(t, err)
	_, decoded, err := DecodeCommand(encoded)
	require.NoError(t, err)
	require.Equal(t, limits, decoded.(CreateTopic).Limits)
}

// requireLimit requires cmd to be rejected at the limit named, changing
// nothing.
func requireLimit(t *testing.T, s *State, cmd Command, limit Limit) {
	t.Helper()
	requireRejected(t, s, cmd, ErrLimitReached)
	var limitError *LimitError
	require.ErrorAs(t, cmd.apply(s), &limitError) // again: a rejection changes nothing
	require.Equal(t, limit, limitError.Limit)
}
