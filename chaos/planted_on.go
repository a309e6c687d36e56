//go:build plantedbugs

package chaos

// planted is the bug a test planted; only test binaries built with the
// plantedbugs tag have this file.
var planted Bug

// Planted reports whether bug is planted.
func Planted(bug Bug) bool { return planted == bug }

// Plant plants bug (0 removes it). Call it only between simulator runs.
func Plant(bug Bug) { planted = bug }
