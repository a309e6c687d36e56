//go:build !invariants

package lease

// invariantChecksEnabled runs CheckInvariants after every mutating call;
// build with -tags invariants to turn it on.
const invariantChecksEnabled = false
