//go:build invariants

package move

// invariantChecksEnabled makes Plan check its result with checkResult.
const invariantChecksEnabled = true
