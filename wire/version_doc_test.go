package wire

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The upgrade notes of the operations page name the wire version this
// release speaks, so an operator can tell which releases can run side by
// side; they said 12 while the codec spoke 15 (peer review).
func TestOperationsPageNamesTheWireVersion(t *testing.T) {
	page, err := os.ReadFile("../docs/operations.md")
	require.NoError(t, err)
	require.Contains(t, string(page), fmt.Sprintf("this release speaks version %d;", Version))
}
