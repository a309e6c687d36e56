package meta

import (
	"maps"
	"slices"
)

// apply creates or replaces the user. A user becomes root only when it is
// created and no root exists; the root keeps its root flag and grants.
func (c PutUser) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	existing, exists := s.users[c.Username]
	if err := c.checkReplace(s, existing, exists); err != nil {
		return err
	}
	if !exists && c.NameFoldChecked {
		if other := s.userNameFolded(c.Username); other != "" {
			return rejectf(ErrUserNameCase, "user %q differs from %q only in case", other, c.Username)
		}
	}
	if !exists && c.UsersMax > 0 && len(s.users) >= c.UsersMax {
		return limitf(LimitUsers, "the cluster holds its limit of %d users", c.UsersMax)
	}
	user := &User{Username: c.Username, PasswordHash: slices.Clone(c.PasswordHash), Root: c.Root,
		Grants: cloneGrants(c.Grants), CreatedAtMs: c.NowMs, UpdatedAtMs: c.NowMs}
	if err := s.checkUsersBytes(existing, user, c.UsersBytesMax); err != nil {
		return err
	}
	if exists {
		user.CreatedAtMs = existing.CreatedAtMs
	}
	s.users[c.Username] = user
	s.markUser(c.Username)
	return nil
}

// checkReplace applies the rules of creating versus replacing a user.
func (c PutUser) checkReplace(s *State, existing *User, exists bool) error {
	switch {
	case c.IfNoUsers && len(s.users) > 0:
		return rejectf(ErrUserExists, "users exist; %q is not seeded", c.Username)
	case exists && c.CreateOnly:
		return rejectf(ErrUserExists, "user %q", c.Username)
	case exists && existing.Root && (!c.Root || !grantsEqual(existing.Grants, c.Grants)):
		return rejectf(ErrUserIsRoot, "user %q keeps its root flag and grants", c.Username)
	case exists && !existing.Root && c.Root:
		return rejectf(ErrUserIsRoot, "existing user %q cannot become root", c.Username)
	case !exists && c.Root && s.hasRoot():
		return rejectf(ErrUserExists, "a root user already exists; %q cannot be created as root", c.Username)
	}
	return nil
}

// apply deletes a user other than the root. The user's topics lose their
// owner (only admins manage them then): ownership is the user's name, and
// a user created again under the name must not inherit them.
func (c DeleteUser) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	user, err := s.checkedUser(c.Username, c.UserCreatedAtMs)
	if err != nil {
		return err
	}
	if user.Root {
		return rejectf(ErrUserIsRoot, "user %q", c.Username)
	}
	delete(s.users, c.Username)
	s.markUser(c.Username)
	for _, name := range slices.Sorted(maps.Keys(s.topics)) {
		if topic := s.topics[name]; topic.CreatedBy == c.Username {
			topic.CreatedBy = ""
			s.markTopic(name)
		}
	}
	return nil
}

// apply replaces the grants of a user other than the root.
func (c SetGrants) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	user, err := s.checkedUser(c.Username, c.UserCreatedAtMs)
	if err != nil {
		return err
	}
	if user.Root {
		return rejectf(ErrUserIsRoot, "user %q", c.Username)
	}
	if err := s.checkUsersBytes(user, &User{Username: user.Username, PasswordHash: user.PasswordHash, Grants: c.Grants}, c.UsersBytesMax); err != nil {
		return err
	}
	user.Grants, user.UpdatedAtMs = cloneGrants(c.Grants), c.NowMs
	s.markUser(c.Username)
	return nil
}

// apply replaces the password hash of a user.
func (c SetPassword) apply(s *State) error {
	if err := c.Validate(); err != nil {
		return err
	}
	user, err := s.checkedUser(c.Username, c.UserCreatedAtMs)
	if err != nil {
		return err
	}
	user.PasswordHash, user.UpdatedAtMs = slices.Clone(c.PasswordHash), c.NowMs
	s.markUser(c.Username)
	return nil
}

// checkedUser returns the user a change names: ErrUserNotFound if there
// is none, ErrUserChanged if createdAtMs is set and the user holding the
// name was created at another time (deleted and created again since the
// change was checked).
func (s *State) checkedUser(username string, createdAtMs int64) (*User, error) {
	user, exists := s.users[username]
	switch {
	case !exists:
		return nil, rejectf(ErrUserNotFound, "user %q", username)
	case createdAtMs != 0 && user.CreatedAtMs != createdAtMs:
		return nil, rejectf(ErrUserChanged, "user %q was created at %d ms, the change was checked against the one created at %d ms",
			username, user.CreatedAtMs, createdAtMs)
	}
	return user, nil
}

// checkCreator refuses a creation asked by a user (createdAtMs set: the
// time the proposer saw it created) that no longer exists as that user.
func (s *State) checkCreator(username string, createdAtMs int64) error {
	if createdAtMs == 0 {
		return nil
	}
	if _, err := s.checkedUser(username, createdAtMs); err != nil {
		return rejectf(ErrUserChanged, "user %q, who asked, was deleted before the change applied", username)
	}
	return nil
}

// HasRoot reports whether a root user exists.
func (s *State) HasRoot() bool { return s.hasRoot() }

func (s *State) hasRoot() bool {
	for _, user := range s.users { //determinism:ok the loop only answers yes or no
		if user.Root {
			return true
		}
	}
	return false
}

// grantsEqual compares two grant lists in order.
func grantsEqual(a, b []Grant) bool {
	return slices.EqualFunc(a, b, func(x, y Grant) bool {
		return x.Action == y.Action && slices.Equal(x.Patterns, y.Patterns)
	})
}

// checkUsersBytes refuses, when max is not 0, a change of the user before
// (nil for a new one) into after that makes the users of the cluster hold
// more than max bytes (userBytes). A change that does not grow the user
// passes: users of entries from before the bound may hold more.
func (s *State) checkUsersBytes(before, after *User, max int) error {
	if max == 0 {
		return nil
	}
	grown := userBytes(after)
	if before != nil {
		grown -= userBytes(before)
	}
	if grown <= 0 {
		return nil
	}
	if total := s.UsersBytes() + grown; total > max {
		return limitf(LimitUsersBytes, "the users of the cluster would hold %d bytes (names, password hashes, grants), at most %d", total, max)
	}
	return nil
}

// UsersBytes sums userBytes over every user: the total UsersBytesMax
// bounds.
func (s *State) UsersBytes() int {
	total := 0
	for _, user := range s.users { //determinism:ok a sum does not depend on order
		total += userBytes(user)
	}
	return total
}

// userBytes is what a user holds in the state and its snapshot image:
// its name, password hash, and grants, with a few bytes of framing for
// each grant and pattern.
func userBytes(u *User) int {
	const userFraming, grantFraming, patternFraming = 64, 16, 4
	total := userFraming + len(u.Username) + len(u.PasswordHash)
	for _, grant := range u.Grants {
		total += grantFraming + len(grant.Action)
		for _, pattern := range grant.Patterns {
			total += patternFraming + len(pattern)
		}
	}
	return total
}

// userNameFolded returns the least user name, other than name, equal to
// it once ASCII letters are folded (user names are ASCII), or "".
func (s *State) userNameFolded(name string) string {
	found := ""
	for existing := range s.users { //determinism:ok the least one is kept
		if existing != name && equalFoldASCII(existing, name) && (found == "" || existing < found) {
			found = existing
		}
	}
	return found
}
