package meta

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// A user whose name differs from another's only in case is refused when
// its create carries NameFoldChecked ("Admin" beside the root "admin"
// read as the root in the audit log and in user ls); an entry of an
// earlier release, without the flag, applies as it did, and a user
// replaced under its own name is no create.
func TestAUserNameDifferingOnlyInCaseIsRefused(t *testing.T) {
	s := newState()
	require.NoError(t, PutUser{Username: "admin", PasswordHash: []byte("hash"), Root: true, CreateOnly: true, NowMs: 1}.apply(s))
	err := PutUser{Username: "Admin", PasswordHash: []byte("hash"), CreateOnly: true, NowMs: 2, NameFoldChecked: true}.apply(s)
	require.ErrorIs(t, err, ErrUserExists)
	require.Contains(t, err.Error(), `user "admin" differs from "Admin" only in case`)
	_, found := s.User("Admin")
	require.False(t, found)

	require.NoError(t, PutUser{Username: "bob", PasswordHash: []byte("hash"), CreateOnly: true, NowMs: 3, NameFoldChecked: true}.apply(s))
	require.NoError(t, PutUser{Username: "bob", PasswordHash: []byte("new"), NowMs: 4, NameFoldChecked: true}.apply(s), "a replace is no create")
	require.NoError(t, PutUser{Username: "ADMIN", PasswordHash: []byte("hash"), CreateOnly: true, NowMs: 5}.apply(s), "an earlier release's entry applies as it did")
}
