//go:build !plantedbugs

package sim

import "testing"

// plantFromFlag refuses -plant: a build without the plantedbugs tag
// cannot plant a bug.
func plantFromFlag(t *testing.T) {
	if *plantFlag != "" {
		t.Fatalf("-plant %s needs a test binary built with -tags plantedbugs", *plantFlag)
	}
}
