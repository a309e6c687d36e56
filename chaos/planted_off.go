//go:build !plantedbugs

package chaos

// Planted is constant false in every build without the plantedbugs tag:
// production binaries cannot plant a bug.
func Planted(Bug) bool { return false }
