package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// A change refused at a metastore limit is 409 with the advice that fits
// the limit: nodes help with partitions per member, not with a parent's
// children nor the count of users.
func TestALimitReachedSaysWhatMakesRoom(t *testing.T) {
	for _, c := range []struct {
		limit        meta.Limit
		text, advice string
	}{
		{meta.LimitChildren, `topic "mp" has its limit of 108 children`, "detach or delete one of its children first"},
		{meta.LimitUsers, "the cluster holds its limit of 10 users", "delete a user first"},
		{meta.LimitUsersBytes, "the users of the cluster would hold 17 bytes (names, password hashes, grants), at most 16", "delete a user or give fewer or shorter patterns"},
		{meta.LimitTopics, "the cluster holds its limit of 5 topics", "delete a topic first"},
		{meta.LimitPartitionsPerMember, "member n1 would own more than its limit of 4 partitions", "add nodes or delete topics"},
		// the advice follows the limit, not words of the text (a node may be named "users")
		{meta.LimitPartitionsPerMember, "member users would own more than its limit of 4 partitions", "add nodes or delete topics"},
	} {
		err := fmt.Errorf("wrapped: %w", &meta.LimitError{Limit: c.limit, Text: c.text})
		require.ErrorIs(t, err, meta.ErrLimitReached)
		for _, answer := range []*msg.Error{applyError("t", err), fanoutApplyError(err)} {
			require.Equal(t, msg.CodeConflict, answer.Code)
			require.Equal(t, c.text+"; "+c.advice, answer.Message)
		}
	}
}

// The schemas of all topics past their bound refuse a create, an alter
// or an attach with 413, as docs/api.md#alter-a-topic says, in words
// without the metastore package's prefix ("meta: ").
func TestSchemaSpaceIsTooLarge(t *testing.T) {
	err := fmt.Errorf("%w: the schemas of all topics would hold 33554433 bytes, at most 33554432", meta.ErrSchemaSpace)
	for _, answer := range []*msg.Error{applyError("t", err), fanoutApplyError(err)} {
		require.Equal(t, msg.CodeTooLarge, answer.Code, "%s", answer.Message)
		require.Equal(t, "no room for another schema version: the schemas of all topics would hold 33554433 bytes, at most 33554432", answer.Message)
	}
}
