//go:build invariants

package rebalance

// invariantChecksEnabled makes Plan check its result with checkResult.
const invariantChecksEnabled = true
