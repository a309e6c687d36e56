//go:build invariants

package lease

// invariantChecksEnabled runs CheckInvariants after every mutating call.
const invariantChecksEnabled = true
