package auth

import (
	"bytes"

	"narad/meta"
)

// Current returns the caller id in the users view published now, and
// whether its credential still holds there: false when the user was
// deleted, deleted and created again under its name, or its password
// changed since id was verified. The Identity returned carries the
// grants of now. A request that waited (a parked long poll) is checked
// again with it before its answer hands over anything: verified before
// the change, it would otherwise outlive it.
func (a *Authenticator) Current(id Identity) (Identity, bool) {
	user, known := a.users.Load().User(id.Username)
	if !known || user.CreatedAtMs != id.CreatedAtMs || !bytes.Equal(user.PasswordHash, id.passwordHash) {
		return Identity{}, false
	}
	return identityOf(user), true
}

// identityOf is the Identity of a user of a view, with the password hash
// its credential is checked against.
func identityOf(user meta.User) Identity {
	return Identity{Username: user.Username, Root: user.Root, Grants: user.Grants, CreatedAtMs: user.CreatedAtMs,
		passwordHash: user.PasswordHash}
}
