package lint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEveryNodeEventIsDocumented(t *testing.T) {
	violations, err := checkEventsDocumented(repositoryUnderTest(t).root)
	require.NoError(t, err)
	reportViolations(t, violations)
}

func TestTheEventsRuleFindsAnUndocumentedKind(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write("docs/operations.md", "# Operations\n\n- `disk-low`: the disk is short.\n")
	write("node/disk.go", "package node\n\nfunc f(n *Node) {\n\tn.observer.Event(\"disk-low\", \"\")\n\tn.observer.Event(\"disk-gone\", \"\")\n}\n")
	write("node/disk_test.go", "package node\n\nfunc g(n *Node) { n.observer.Event(\"only-in-a-test\", \"\") }\n")
	write("host/host.go", "package host\n")
	violations, err := checkEventsDocumented(root)
	require.NoError(t, err)
	require.Len(t, violations, 1, "%v", violations)
	require.Equal(t, "node/disk.go", violations[0].file)
	require.Equal(t, 5, violations[0].line)
	require.Contains(t, violations[0].message, "disk-gone")
}
