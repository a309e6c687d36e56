//go:build !invariants

package invariant

// Enabled is set in a build with the "invariants" tag: Costly runs its
// checks. Build with -tags invariants to turn them on.
const Enabled = false
