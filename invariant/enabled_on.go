//go:build invariants

package invariant

// Enabled is set in a build with the "invariants" tag: Costly runs its
// checks.
const Enabled = true
