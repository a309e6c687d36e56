package auth

import "narad/meta"

// Users is an immutable view of the users at one version of the
// metastore. Nothing changes it after NewUsers; its users must not be
// modified by callers.
type Users struct {
	// version is the metastore's users version the view was taken at.
	version uint64
	// byName holds every user of sorted, by name.
	byName map[string]meta.User
	// sorted lists the users by name.
	sorted []meta.User
}

// NewUsers takes a view of users (sorted by name, as the node returns
// them) at version. It keeps the slice: the caller hands it over.
func NewUsers(version uint64, users []meta.User) *Users {
	view := &Users{version: version, byName: make(map[string]meta.User, len(users)), sorted: users}
	for _, user := range users {
		view.byName[user.Username] = user
	}
	return view
}

// Version is the users version of the view.
func (u *Users) Version() uint64 { return u.version }

// User returns the named user.
func (u *Users) User(name string) (meta.User, bool) {
	user, ok := u.byName[name]
	return user, ok
}

// List returns the users sorted by name.
func (u *Users) List() []meta.User { return u.sorted }

// Len is the number of users.
func (u *Users) Len() int { return len(u.sorted) }
