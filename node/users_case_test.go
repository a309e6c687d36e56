package node

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/meta"
	"narad/msg"
)

// A create refused because another user's name differs only in case is
// a 409 that names the other user, not only "user already exists".
func TestAUserCaseTwinIsAConflictThatNamesTheOther(t *testing.T) {
	twin := userApplyError("Admin", fmt.Errorf("%w: %s", meta.ErrUserNameCase, `user "admin" differs from "Admin" only in case`))
	require.Equal(t, msg.CodeConflict, msg.CodeOf(twin))
	require.Contains(t, twin.Error(), `user "admin" differs from "Admin" only in case`)
	require.NotContains(t, twin.Error(), "meta:")
	plain := userApplyError("bob", fmt.Errorf("%w: %s", meta.ErrUserExists, `user "bob"`))
	require.Equal(t, msg.CodeConflict, msg.CodeOf(plain))
	require.Contains(t, plain.Error(), "user already exists", "a plain duplicate reads as before")
}
