//go:build !invariants

package rebalance

// invariantChecksEnabled makes Plan check its result with checkResult;
// build with -tags invariants to turn it on.
const invariantChecksEnabled = false
