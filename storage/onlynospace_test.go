package storage

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/require"
)

// OnlyNoSpace holds for a full disk as an FS reports it, wrapped or
// joined with more of the same, and not for a join that carries another
// failure too, though errors.Is(err, ErrNoSpace) holds for that one.
func TestOnlyNoSpaceTellsAFullDiskFromAFullDiskAndMore(t *testing.T) {
	osNoSpace := errors.Join(ErrNoSpace, &fs.PathError{Op: "write", Path: "p/x.tmp", Err: errors.New("no space left on device")})
	osIO := errors.Join(ErrIO, &fs.PathError{Op: "fsync", Path: "p/y", Err: errors.New("input/output error")})
	for name, err := range map[string]error{
		"sentinel":               ErrNoSpace,
		"as the os FS maps it":   osNoSpace,
		"wrapped":                fmt.Errorf("fan-out cursors of p: %w", osNoSpace),
		"joined with more of it": errors.Join(osNoSpace, fmt.Errorf("again: %w", ErrNoSpace)),
	} {
		require.True(t, OnlyNoSpace(err), name)
	}
	for name, err := range map[string]error{
		"nil":                       nil,
		"another failure":           osIO,
		"no space and an io error":  errors.Join(osNoSpace, osIO),
		"no space and a close":      errors.Join(osNoSpace, errors.New("close p/x.tmp: bad file descriptor")),
		"wrapped no space and more": fmt.Errorf("round: %w", errors.Join(ErrNoSpace, osIO)),
	} {
		require.False(t, OnlyNoSpace(err), name)
		if err != nil && name != "another failure" {
			require.ErrorIs(t, err, ErrNoSpace, "%s: errors.Is alone would take it for a full disk", name)
		}
	}
}
