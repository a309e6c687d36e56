package sim

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"narad/meta"
	"narad/msg"
	"narad/node"
)

// Timing and shape of the users scenario.
const (
	usersChangeMsMin = 200
	usersChangeMsMax = 1_200
	// usersSettleMsMax bounds the wait, after the liveness probes, for
	// every replica's users to equal the committed log's.
	usersSettleMsMax = 10_000
	// usersRaceOneIn: one change in this many is raced against the
	// deletion and re-creation of its user (usersScenario.race).
	usersRaceOneIn = 4
)

// usersNames are the users the scenario creates, changes and deletes;
// "U1" is "u1" in other case, which a create of this release refuses
// while the other exists (meta.PutUser.NameFoldChecked).
var usersNames = []string{"u1", "u2", "u3", "U1"}

// usersScenario sends user changes (node.ChangeUsers, as the HTTP layer
// does) to random nodes through the safety phase, while faults change
// leaders and restart nodes; every node carries a root seed of its own.
// The checkers: the committed log seeds the root at most once (at once),
// exactly once by the end, and every replica's users converge to the
// users of the committed log.
type usersScenario struct {
	w *World
	// rng is the scenario's own stream, so that it reshuffles nothing else.
	rng *rand.Rand
	// sent counts the changes handed to a node.
	sent int
}

func newUsersScenario(w *World) *usersScenario {
	return &usersScenario{w: w, rng: newRand(w.opts.Seed, usersStream)}
}

// rootSeedOf is the root password hash node id proposes; the simulator
// needs no real hash, only one that tells the seeds apart.
func rootSeedOf(id string) []byte { return []byte("seed-of-" + id) }

// start schedules the first change.
func (s *usersScenario) start() {
	s.w.at(int64(usersChangeMsMin+s.rng.IntN(usersChangeMsMax-usersChangeMsMin)), s.next)
}

// next sends one change to a random node and schedules the following one,
// until the safety phase ends. Now and then it races a change against the
// deletion and re-creation of its user at another node.
func (s *usersScenario) next() {
	if s.w.phase != phaseSafety {
		return
	}
	target := s.w.clientNode(s.rng)
	if s.rng.IntN(usersRaceOneIn) == 0 {
		s.race(target)
	} else {
		s.send(target, s.draw())
	}
	s.w.at(int64(usersChangeMsMin+s.rng.IntN(usersChangeMsMax-usersChangeMsMin)), s.next)
}

// send hands cmd to target, stamped with the creation time of its user as
// target sees it (checkedAgainst), as the HTTP layer does.
func (s *usersScenario) send(target *simNode, cmds ...meta.Command) {
	if !target.up() {
		return
	}
	s.sent += len(cmds)
	target.input(func() {
		for _, cmd := range cmds {
			cmd := checkedAgainst(cmd, target.node.Users())
			target.nextID++
			target.userChanges[target.nextID] = fmt.Sprintf("%T %s", cmd, userOf(cmd))
			s.w.tracef("%s user change #%d %T %s", target.id, target.nextID, cmd, userOf(cmd))
			target.node.ChangeUsers(target.nextID, cmd)
		}
	})
}

// race sends a change of a user to target and, at once, its deletion and
// re-creation to another node: whichever applies first, the change must
// never reach the re-created user (meta.ErrUserChanged).
func (s *usersScenario) race(target *simNode) {
	name := usersNames[s.rng.IntN(len(usersNames))]
	change := []meta.Command{
		meta.SetPassword{Username: name, PasswordHash: []byte("hash-raced")},
		meta.SetGrants{Username: name, Grants: []meta.Grant{{Action: "consume", Patterns: []string{"raced*"}}}},
		meta.DeleteUser{Username: name},
	}[s.rng.IntN(3)]
	s.send(target, change)
	other := s.w.clientNode(s.rng)
	s.send(other, meta.DeleteUser{Username: name},
		meta.PutUser{Username: name, PasswordHash: []byte("hash-recreated"), Grants: []meta.Grant{{Action: "produce", Patterns: []string{"t0*"}}}, CreateOnly: true})
}

// draw picks a change: mostly creations and edits of the scenario's
// users, sometimes one the root refuses.
func (s *usersScenario) draw() meta.Command {
	name := usersNames[s.rng.IntN(len(usersNames))]
	grants := []meta.Grant{{Action: "produce", Patterns: []string{fmt.Sprintf("t%d*", s.rng.IntN(3))}}}
	hash := []byte(fmt.Sprintf("hash-%d", s.rng.IntN(4)))
	switch s.rng.IntN(6) {
	case 0, 1:
		return meta.PutUser{Username: name, PasswordHash: hash, Grants: grants, CreateOnly: true, NameFoldChecked: true}
	case 2:
		return meta.SetGrants{Username: name, Grants: grants}
	case 3:
		return meta.SetPassword{Username: name, PasswordHash: hash}
	case 4:
		return meta.DeleteUser{Username: name}
	}
	return meta.DeleteUser{Username: node.RootUsername}
}

// checkedAgainst stamps a change with the creation time of the user it
// names in the node's view, as the HTTP API does after its checks: a
// change that applies after the user was deleted and created again must
// fail (meta.ErrUserChanged), which the shadow view checks too.
func checkedAgainst(cmd meta.Command, users []meta.User) meta.Command {
	i := slices.IndexFunc(users, func(user meta.User) bool { return user.Username == userOf(cmd) })
	if i < 0 {
		return cmd
	}
	createdAtMs := users[i].CreatedAtMs
	switch c := cmd.(type) {
	case meta.SetGrants:
		c.UserCreatedAtMs = createdAtMs
		return c
	case meta.SetPassword:
		c.UserCreatedAtMs = createdAtMs
		return c
	case meta.DeleteUser:
		c.UserCreatedAtMs = createdAtMs
		return c
	}
	return cmd
}

func userOf(cmd meta.Command) string {
	switch c := cmd.(type) {
	case meta.PutUser:
		return c.Username
	case meta.SetGrants:
		return c.Username
	case meta.SetPassword:
		return c.Username
	case meta.DeleteUser:
		return c.Username
	}
	return ""
}

// replyUserChange traces the answer to a user change; false when id is
// not one.
func (n *simNode) replyUserChange(reply msg.Reply) bool {
	what, ok := n.userChanges[reply.ID]
	if !ok {
		return false
	}
	delete(n.userChanges, reply.ID)
	n.w.tracef("%s user change #%d %s: %v", n.id, reply.ID, what, reply.Err)
	return true
}

// shadowUsers is the committed log's users, as meta applies the changes
// the scenario and the seeds make.
type shadowUsers struct {
	users map[string]meta.User
	// seeds counts the root seeds applied.
	seeds int
	// recreatedRefused counts the changes refused because the user they
	// were checked against was deleted and created again meanwhile.
	recreatedRefused int
}

// apply applies a user change of the committed log; it reports a second
// seed as a failure.
func (l *metaLog) applyUser(command meta.Command) {
	u := &l.users
	switch c := command.(type) {
	case meta.PutUser:
		_, exists := u.users[c.Username]
		if (c.IfNoUsers && len(u.users) > 0) || (exists && c.CreateOnly) || (c.Root && !exists && u.hasRoot()) ||
			(!exists && c.NameFoldChecked && u.caseTwin(c.Username)) {
			return
		}
		createdAtMs := c.NowMs
		if existing, ok := u.users[c.Username]; ok {
			createdAtMs = existing.CreatedAtMs
		}
		u.users[c.Username] = meta.User{Username: c.Username, PasswordHash: c.PasswordHash, Root: c.Root, Grants: c.Grants, CreatedAtMs: createdAtMs}
		if c.Root {
			u.seeds++
			l.w.tracef("meta-view: root seeded (%s)", c.PasswordHash)
		}
		if u.seeds > 1 {
			l.w.fail("users", "the root was seeded %d times", u.seeds)
		}
	case meta.DeleteUser:
		if user, exists := u.users[c.Username]; exists && !user.Root && u.sameUser(user, c.UserCreatedAtMs) {
			delete(u.users, c.Username)
			for topic, creator := range l.creators { //determinism:ok each is cleared alone
				if creator == c.Username {
					l.creators[topic] = ""
				}
			}
		}
	case meta.SetGrants:
		if user, exists := u.users[c.Username]; exists && !user.Root && u.sameUser(user, c.UserCreatedAtMs) {
			user.Grants = c.Grants
			u.users[c.Username] = user
		}
	case meta.SetPassword:
		if user, exists := u.users[c.Username]; exists && u.sameUser(user, c.UserCreatedAtMs) {
			user.PasswordHash = c.PasswordHash
			u.users[c.Username] = user
		}
	}
}

// sameUser reports whether a change checked against the user created at
// createdAtMs (0: unchecked) may apply to user; counts the refusals.
func (u *shadowUsers) sameUser(user meta.User, createdAtMs int64) bool {
	if createdAtMs != 0 && createdAtMs != user.CreatedAtMs {
		u.recreatedRefused++
		return false
	}
	return true
}

func (u *shadowUsers) hasRoot() bool {
	return slices.ContainsFunc(slices.Collect(maps.Values(u.users)), func(user meta.User) bool { return user.Root })
}

// describe renders users by name without timestamps, for comparison.
func describeUsers(users []meta.User) string {
	sorted := slices.SortedFunc(slices.Values(users), func(a, b meta.User) int {
		if a.Username < b.Username {
			return -1
		}
		if a.Username > b.Username {
			return 1
		}
		return 0
	})
	text := ""
	for _, user := range sorted {
		text += fmt.Sprintf("%s root=%t hash=%s grants=%v; ", user.Username, user.Root, user.PasswordHash, user.Grants)
	}
	return text
}

// usersDiverged names a running replica whose users differ from the
// committed log's, or "" when every one agrees.
func (w *World) usersDiverged() string {
	want := describeUsers(slices.Collect(maps.Values(w.metaLog.users.users)))
	for _, n := range w.activeNodes() {
		if !n.up() {
			return n.id + " is down"
		}
		if got := describeUsers(n.node.Users()); got != want {
			return fmt.Sprintf("%s holds [%s], the committed log [%s]", n.id, got, want)
		}
	}
	return ""
}

// checkUsers is the end-of-run check of the users scenario: exactly one
// seed, and every replica's users equal the committed log's.
func (w *World) checkUsers() {
	if w.users == nil {
		return
	}
	deadlineMs := w.nowMs + usersSettleMsMax
	w.loop(func() bool { return w.usersDiverged() != "" && w.nowMs < deadlineMs })
	if diverged := w.usersDiverged(); w.failure == nil && diverged != "" {
		w.fail("users", "replicas' users did not converge: %s", diverged)
	}
	if w.failure == nil && w.metaLog.users.seeds != 1 {
		w.fail("users", "the root was seeded %d times, want once", w.metaLog.users.seeds)
	}
	w.tracef("users: %d changes sent, %d refused for a user created again; final users [%s]", w.users.sent, w.metaLog.users.recreatedRefused, describeUsers(slices.Collect(maps.Values(w.metaLog.users.users))))
}

// userChangesSent is how many changes the users scenario sent.
func (w *World) userChangesSent() int {
	if w.users == nil {
		return 0
	}
	return w.users.sent
}

// caseTwin reports whether another user's name is name in other case (a
// create that checks for one is refused: meta.PutUser.NameFoldChecked).
func (u *shadowUsers) caseTwin(name string) bool {
	for existing := range u.users { //determinism:ok the answer is yes or no
		if existing != name && strings.ToLower(existing) == strings.ToLower(name) {
			return true
		}
	}
	return false
}
