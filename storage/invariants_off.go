//go:build !invariants

package storage

// invariantsEnabled switches on the costly cross-structure checks (build
// with -tags invariants). Cheap checks are always on.
const invariantsEnabled = false
