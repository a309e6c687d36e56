package node

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"narad/meta"
	"narad/msg"
)

// RootUsername is the name of the root user the leader seeds.
const RootUsername = "admin"

// UsersVersion is the version of the users this replica applied: it
// changes with every applied user change, so a driver can republish its
// read-only copy of the users (Users) only when it changed.
func (n *Node) UsersVersion() uint64 { return n.meta.State().UsersVersion() }

// Users returns copies of the users this replica applied, sorted by name.
func (n *Node) Users() []meta.User { return n.meta.State().Users() }

// RootSeeded reports whether this node's seed of the root user (the
// RootSeedHash of its configuration) was applied.
func (n *Node) RootSeeded() bool { return n.rootSeeded }

// ChangeUsers proposes a user change for request id: a meta.PutUser,
// DeleteUser, SetGrants or SetPassword, whose NowMs the node sets. The
// reply (a nil result, or an *Error: CodeConflict for a user that exists,
// CodeNotFound, CodeForbidden for what the root user refuses) leaves once
// the change is applied on this replica. The driver checked who may ask.
func (n *Node) ChangeUsers(id msg.RequestID, cmd meta.Command) {
	if n.knowsRetired() {
		n.reply(id, nil, n.retiredError())
		return
	}
	var username string
	switch c := cmd.(type) {
	case meta.PutUser:
		c.NowMs, c.IfNoUsers, c.UsersMax, c.UsersBytesMax, username = n.nowMs, false, meta.UsersMax, meta.UsersBytesMax, c.Username
		cmd = c
	case meta.DeleteUser:
		username = c.Username
	case meta.SetGrants:
		c.NowMs, c.UsersBytesMax, username = n.nowMs, meta.UsersBytesMax, c.Username
		cmd = c
	case meta.SetPassword:
		c.NowMs, username = n.nowMs, c.Username
		cmd = c
	default:
		n.reply(id, nil, msg.Invalid("%T is not a user change", cmd))
		return
	}
	n.propose(id, proposalUser, username, cmd)
}

// userApplyError maps the rejection of a user change to a client error.
func userApplyError(username string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, meta.ErrUserNameCase):
		return msg.Conflict("%s", strings.TrimPrefix(err.Error(), meta.ErrUserNameCase.Error()+": "))
	case errors.Is(err, meta.ErrUserExists):
		return msg.Conflict("user already exists")
	case errors.Is(err, meta.ErrUserNotFound):
		return msg.NotFound("user %q not found", username)
	case errors.Is(err, meta.ErrUserIsRoot):
		return msg.Forbidden("the root user cannot be deleted or regranted")
	case errors.Is(err, meta.ErrLimitReached):
		return limitReached(err)
	case errors.Is(err, meta.ErrUserChanged):
		return msg.Conflict("user %q was deleted and created again meanwhile; nothing changed", username)
	}
	return applyError("", err)
}

// seedRoot proposes the root user while this node leads the metastore,
// its term's barrier is applied, no root user exists and no seed of its
// own is pending. The metastore creates a root only under a name no user
// holds (PutUser.CreateOnly) and while no root exists, so seeds of
// successive leaders apply at most once. Users may exist without a root:
// those created while security was off (every caller is then a nameless
// root); the root is seeded beside them, or the operator would have no
// admin once security is on. A user that is not root but holds the
// root's name (created with security off too) leaves the cluster without
// a seed: the node says so once.
func (n *Node) seedRoot() {
	if len(n.cfg.RootSeedHash) == 0 || n.rootSeeded || n.rootSeedSettled || !n.meta.IsLeader() || !n.meta.Barrier() || n.seedPending() {
		return
	}
	state := n.meta.State()
	if holder, taken := state.User(RootUsername); taken || state.HasRoot() {
		n.rootSeedSettled = true
		if taken && !holder.Root {
			n.observer.Event("root-seed-skipped", fmt.Sprintf("user %q exists and is not root (created with security off); no root user is seeded. "+
				"To get an admin: with security off, grant admin to a user (or delete %q), then turn security on", RootUsername, RootUsername))
		}
		return
	}
	n.propose(0, proposalSeedRoot, RootUsername, meta.PutUser{Username: RootUsername,
		PasswordHash: slices.Clone(n.cfg.RootSeedHash), Root: true, CreateOnly: true, NowMs: n.nowMs})
}

// seedPending reports whether a seed of this node awaits its outcome.
func (n *Node) seedPending() bool {
	for _, pending := range n.proposals { //determinism:ok the loop only answers yes or no
		if pending.kind == proposalSeedRoot {
			return true
		}
	}
	return false
}

// seededRoot records the outcome of this node's seed.
func (n *Node) seededRoot(err error) {
	if err != nil {
		n.observer.Event("root-seed-rejected", err.Error())
		return
	}
	n.rootSeeded = true
	n.observer.Event("root-seeded", fmt.Sprintf("node %s seeded the root user %q", n.cfg.NodeID, RootUsername))
}
