package node

import (
	"narad/msg"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
)

// changeUsers runs a user change through the node and returns its reply.
func (h *harness) changeUsers(cmd meta.Command) msg.Reply {
	h.t.Helper()
	h.nextID++
	h.node.ChangeUsers(h.nextID, cmd)
	h.flush()
	reply, ok := h.replies[h.nextID]
	require.True(h.t, ok, "user change %T got no reply", cmd)
	return reply
}

func TestRootSeededOnce(t *testing.T) {
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
	require.False(t, h.node.RootSeeded(), "a root exists: no second seed")
	require.Equal(t, version, h.node.UsersVersion())
	root, _ := h.node.meta.State().User(RootUsername)
	require.Equal(t, []byte("seed-1"), root.PasswordHash)
}

// TestRootSeededBesideUsersCreatedWithSecurityOff: users created while
// security was off (no seed hash: every caller is a nameless root) do not
// keep the root from being seeded once security is on. It was seeded
// only while no user existed, so turning security on left the cluster
// without an admin, and said nothing.
func TestRootSeededBesideUsersCreatedWithSecurityOff(t *testing.T) {
	h := newHarness(t)
	grants := []meta.Grant{{Action: "produce", Patterns: []string{"orders*"}}}
	require.NoError(t, h.changeUsers(meta.PutUser{Username: "ann", PasswordHash: []byte("h1"), Grants: grants, CreateOnly: true}).Err)
	h.tick(10)
	require.False(t, h.node.meta.State().HasRoot(), "no seed without security")

	h.cfg.RootSeedHash = []byte("seed")
	h.restart()
	h.tick(10)
	require.True(t, h.node.RootSeeded())
	root, found := h.node.meta.State().User(RootUsername)
	require.True(t, found)
	require.True(t, root.Root)
	require.Equal(t, []byte("seed"), root.PasswordHash)
	ann, found := h.node.meta.State().User("ann")
	require.True(t, found, "the other users stay")
	require.Equal(t, grants, ann.Grants)
}

// eventRecorder keeps the node's events.
type eventRecorder struct {
	NopObserver
	events []string
}

func (r *eventRecorder) Event(kind, _ string) { r.events = append(r.events, kind) }

// TestNoRootSeededOverAUserHoldingItsName: a user that is not root but
// holds the root's name (created with security off) cannot become root,
// so no root is seeded; the node says so once and stops proposing.
func TestNoRootSeededOverAUserHoldingItsName(t *testing.T) {
	h := newHarness(t)
	require.NoError(t, h.changeUsers(meta.PutUser{Username: RootUsername, PasswordHash: []byte("h1"), CreateOnly: true}).Err)
	version := h.node.UsersVersion()
	events := &eventRecorder{}
	h.observer = events
	h.cfg.RootSeedHash = []byte("seed")
	h.restart()
	for range 5 {
		h.tick(10)
	}
	require.False(t, h.node.RootSeeded())
	require.False(t, h.node.meta.State().HasRoot())
	require.Equal(t, version, h.node.UsersVersion(), "nothing was applied")
	require.Equal(t, []string{"root-seed-skipped"}, events.events)
}

func TestChangeUsers(t *testing.T) {
	h := newHarness(t)
	grants := []meta.Grant{{Action: "produce", Patterns: []string{"orders*"}}}
	require.NoError(t, h.changeUsers(meta.PutUser{Username: "ann", PasswordHash: []byte("h1"), Grants: grants, CreateOnly: true}).Err)
	require.Equal(t, msg.CodeConflict, msg.CodeOf(h.changeUsers(meta.PutUser{Username: "ann", PasswordHash: []byte("h"), CreateOnly: true}).Err))
	require.NoError(t, h.changeUsers(meta.SetPassword{Username: "ann", PasswordHash: []byte("h2")}).Err)
	require.NoError(t, h.changeUsers(meta.SetGrants{Username: "ann"}).Err)
	ann, _ := h.node.meta.State().User("ann")
	require.Equal(t, []byte("h2"), ann.PasswordHash)
	require.Empty(t, ann.Grants)
	require.Equal(t, h.nowMs, ann.UpdatedAtMs, "the node stamps the change with its clock")
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(h.changeUsers(meta.DeleteUser{Username: "bob"}).Err))
	require.NoError(t, h.changeUsers(meta.DeleteUser{Username: "ann"}).Err)
	require.Equal(t, msg.CodeInvalid, msg.CodeOf(h.changeUsers(meta.DeleteTopic{Name: "t"}).Err))

	h.cfg.RootSeedHash = []byte("seed")
	h.restart()
	h.tick(10)
	require.Equal(t, msg.CodeForbidden, msg.CodeOf(h.changeUsers(meta.DeleteUser{Username: RootUsername}).Err))
	require.Equal(t, msg.CodeForbidden, msg.CodeOf(h.changeUsers(meta.SetGrants{Username: RootUsername}).Err))
}

func TestCreatorBecomesOwner(t *testing.T) {
	h := newHarness(t)
	info := h.createTopic("orders", func(r *msg.CreateTopic) { r.CreatedBy = "ann" })
	require.Equal(t, "ann", info.Owner)
}

// carriesSeed reports whether a peer message carries a root seed entry
// proposed with hash.
func carriesSeed(env msg.Envelope, hash string) bool {
	raft, ok := env.Message.(msg.RaftMessage)
	if !ok {
		return false
	}
	for _, entry := range raft.Message.Entries {
		if _, cmd, err := meta.DecodeCommand(entry.Data); err == nil {
			if put, isPut := cmd.(meta.PutUser); isPut && put.Root && string(put.PasswordHash) == hash {
				return true
			}
		}
	}
	return false
}

// TestRootSeedAcrossALeaderChange: every node carries a seed; the first
// leader's seed never reaches a follower and that leader is cut off; the
// next leader seeds with its own. Back in the cluster, the first leader's
// seed is discarded: one root, with the second seed, on every replica.
func TestRootSeedAcrossALeaderChange(t *testing.T) {
	c := newClusterHarness(t, 3)
	for _, id := range c.ids {
		cfg := c.configs[id]
		cfg.RootSeedHash = []byte("seed-" + id)
		c.configs[id] = cfg
		require.NoError(t, c.nodes[id].Abandon())
		c.start(id)
	}
	var first string
	c.drop = func(env msg.Envelope) bool {
		if first == "" && carriesSeed(env, "seed-"+env.From) {
			first = env.From
		}
		return first != "" && (env.From == first || env.To == first)
	}
	for range 100 {
		if c.tick(100); first != "" {
			break
		}
	}
	require.NotEmpty(t, first, "a leader proposed its seed")
	second := ""
	for range 200 {
		c.tick(100)
		if leader, ok := c.leader(); ok && leader != first && len(c.nodes[leader].Users()) > 0 {
			second = leader
			break
		}
	}
	require.NotEmpty(t, second, "another leader seeded")
	c.drop = nil
	for range 100 {
		c.tick(100)
	}
	for _, id := range c.ids {
		users := c.nodes[id].Users()
		require.Len(t, users, 1, "%s", id)
		require.Equal(t, "seed-"+second, string(users[0].PasswordHash), "%s holds the second leader's seed", id)
	}
	require.True(t, c.nodes[second].RootSeeded())
	require.False(t, c.nodes[first].RootSeeded(), "the first leader's seed never applied")
}

// TestATopicChangeGuardedByAnotherOwnerIsForbidden: a topic change whose
// caller was checked as the owner of a topic that another user owns by
// the time it applies (deleted and created again under its name) is
// refused with 403 and changes nothing; guarded by the owner, it applies.
func TestATopicChangeGuardedByAnotherOwnerIsForbidden(t *testing.T) {
	h := newHarness(t)
	h.createTopic("t", func(r *msg.CreateTopic) { r.CreatedBy = "bob" })
	h.createTopic("c", func(r *msg.CreateTopic) { r.CreatedBy = "bob" })
	retention := int64(7_200_000)
	for _, req := range []msg.Request{
		msg.DeleteTopic{Name: "t", ExpectedOwner: "ann"},
		msg.AlterTopic{Name: "t", RetentionMs: &retention, ExpectedOwner: "ann"},
		msg.AttachChild{Parent: "t", Child: "c", ExpectedOwner: "ann"},
		msg.CreateTopic{Name: "d", Parent: "t", CreatedBy: "ann", ExpectedOwner: "ann"},
	} {
		e := h.fail(req, msg.CodeForbidden)
		require.Contains(t, e.Message, "owner", "%T", req)
	}
	require.NoError(t, h.do(msg.AttachChild{Parent: "t", Child: "c", ExpectedOwner: "bob"}).Err)
	h.fail(msg.DetachChild{Parent: "t", Child: "c", ExpectedOwner: "ann"}, msg.CodeForbidden)
	require.NoError(t, h.do(msg.DetachChild{Parent: "t", Child: "c", ExpectedOwner: "bob"}).Err)
	require.NoError(t, h.do(msg.DeleteTopic{Name: "t", ExpectedOwner: "bob"}).Err)
}
