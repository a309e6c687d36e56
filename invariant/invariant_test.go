package invariant_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/invariant"
)

func TestCheckPanicsOnlyWhenBroken(t *testing.T) {
	require.NotPanics(t, func() { invariant.Check(true, "never %d", 1) })
	require.PanicsWithValue(t, "invariant broken: x: 3 above 2", func() { invariant.Check(false, "x: %d above %d", 3, 2) })
}

func TestBrokenAlwaysPanics(t *testing.T) {
	require.PanicsWithValue(t, "invariant broken: y", func() { invariant.Broken("y") })
}

func TestCostlyRunsOnlyInAnInvariantsBuild(t *testing.T) {
	ran := false
	invariant.Costly(func() error { ran = true; return nil })
	require.Equal(t, invariant.Enabled, ran, "Costly runs its check exactly when Enabled")
	failing := func() { invariant.Costly(func() error { return errors.New("z is wrong") }) }
	if invariant.Enabled {
		require.PanicsWithValue(t, "invariant broken: z is wrong", failing)
	} else {
		require.NotPanics(t, failing)
	}
}
