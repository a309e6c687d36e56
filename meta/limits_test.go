package meta

import (
	"fmt"
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

// The users of a cluster are bounded in bytes together (UsersBytesMax)
// when the command carries the bound: 90 users of 64 grants of 256 long
// patterns would otherwise make a snapshot image past the raft message
// bound, which no replica could install. A change that does not grow a
// user passes even over the bound; the bound survives the codec.
func TestUsersBytesAtApply(t *testing.T) {
	s := stateWith(t, baseSetup()...)
	patterns := make([]string, patternsPerGrantMax)
	for i := range patterns {
		patterns[i] = fmt.Sprintf("%0200d*", i)
	}
	big := []Grant{{Action: "produce", Patterns: patterns}, {Action: "consume", Patterns: patterns}}
	bytesMax := 5 * userBytes(&User{Username: "user-0", PasswordHash: []byte("hash"), Grants: big}) / 2
	put := func(name string) PutUser {
		return PutUser{Username: name, PasswordHash: []byte("hash"), Grants: big, CreateOnly: true, NowMs: 1, UsersBytesMax: bytesMax}
	}
	require.NoError(t, put("user-0").apply(s))
	require.NoError(t, put("user-1").apply(s))
	requireLimit(t, s, put("user-2"), LimitUsersBytes)
	unbounded := put("user-2")
	unbounded.UsersBytesMax = 0
	require.NoError(t, unbounded.apply(s), "an entry without the bound applies as it did")
	require.Greater(t, s.UsersBytes(), bytesMax)

	requireLimit(t, s, SetGrants{Username: "user-0", Grants: append(big, Grant{Action: "admin"}), NowMs: 2, UsersBytesMax: bytesMax}, LimitUsersBytes)
	require.NoError(t, SetGrants{Username: "user-0", Grants: big[:1], NowMs: 2, UsersBytesMax: bytesMax}.apply(s), "a change that shrinks passes over the bound")

	for _, cmd := range []Command{put("x"), SetGrants{Username: "x", Grants: big, UsersBytesMax: bytesMax}} {
		encoded, err := EncodeCommand(ProposalID{}, cmd)
		require.NoError(t, err)
		_, decoded, err := DecodeCommand(encoded)
		require.NoError(t, err)
		require.Equal(t, cmd, decoded)
	}
}
