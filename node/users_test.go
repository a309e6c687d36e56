package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
)

// changeUsers runs a user change through the node and returns its reply.
func (h *harness) changeUsers(cmd meta.Command) Reply {
	h.t.Helper()
	h.nextID++
	h.node.ChangeUsers(h.nextID, cmd)
	h.flush()
	reply, ok := h.replies[h.nextID]
	require.True(h.t, ok, "user change %T got no reply", cmd)
	return reply
}

func TestRootSeededOnceWhileNoUserExists(t *testing.T) {
	h := newHarness(t)
	require.Empty(t, h.node.Users(), "a node without a seed hash seeds nothing")
	h.cfg.RootSeedHash = []byte("seed-1")
	h.restart()
	h.tick(10)
	users := h.node.Users()
	require.Len(t, users, 1)
	require.Equal(t, meta.User{Username: RootUsername, PasswordHash: []byte("seed-1"), Root: true,
		CreatedAtMs: users[0].CreatedAtMs, UpdatedAtMs: users[0].UpdatedAtMs}, users[0])
	require.True(t, h.node.RootSeeded())
	version := h.node.UsersVersion()

	h.cfg.RootSeedHash = []byte("seed-2")
	h.restart()
	h.tick(10)
	require.False(t, h.node.RootSeeded(), "users exist: no second seed")
	require.Equal(t, version, h.node.UsersVersion())
	root, _ := h.node.meta.State().User(RootUsername)
	require.Equal(t, []byte("seed-1"), root.PasswordHash)
}

func TestChangeUsers(t *testing.T) {
	h := newHarness(t)
	grants := []meta.Grant{{Action: "produce", Patterns: []string{"orders*"}}}
	require.NoError(t, h.changeUsers(meta.PutUser{Username: "ann", PasswordHash: []byte("h1"), Grants: grants, CreateOnly: true}).Err)
	require.Equal(t, CodeConflict, CodeOf(h.changeUsers(meta.PutUser{Username: "ann", PasswordHash: []byte("h"), CreateOnly: true}).Err))
	require.NoError(t, h.changeUsers(meta.SetPassword{Username: "ann", PasswordHash: []byte("h2")}).Err)
	require.NoError(t, h.changeUsers(meta.SetGrants{Username: "ann"}).Err)
	ann, _ := h.node.meta.State().User("ann")
	require.Equal(t, []byte("h2"), ann.PasswordHash)
	require.Empty(t, ann.Grants)
	require.Equal(t, h.nowMs, ann.UpdatedAtMs, "the node stamps the change with its clock")
	require.Equal(t, CodeNotFound, CodeOf(h.changeUsers(meta.DeleteUser{Username: "bob"}).Err))
	require.NoError(t, h.changeUsers(meta.DeleteUser{Username: "ann"}).Err)
	require.Equal(t, CodeInvalid, CodeOf(h.changeUsers(meta.DeleteTopic{Name: "t"}).Err))

	h.cfg.RootSeedHash = []byte("seed")
	h.restart()
	h.tick(10)
	require.Equal(t, CodeForbidden, CodeOf(h.changeUsers(meta.DeleteUser{Username: RootUsername}).Err))
	require.Equal(t, CodeForbidden, CodeOf(h.changeUsers(meta.SetGrants{Username: RootUsername}).Err))
}

func TestCreatorBecomesOwner(t *testing.T) {
	h := newHarness(t)
	info := h.createTopic("orders", func(r *CreateTopic) { r.CreatedBy = "ann" })
	require.Equal(t, "ann", info.Owner)
}
