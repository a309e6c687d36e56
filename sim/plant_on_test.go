//go:build plantedbugs

package sim

import (
	"testing"

	"narad/chaos"
)

// plantFromFlag plants -plant's bug for the test, and removes it after.
func plantFromFlag(t *testing.T) {
	if *plantFlag == "" {
		return
	}
	bug, ok := bugNamed(*plantFlag)
	if !ok {
		t.Fatalf("-plant %q: no planted bug of that name", *plantFlag)
	}
	chaos.Plant(bug)
	t.Cleanup(func() { chaos.Plant(0) })
}
