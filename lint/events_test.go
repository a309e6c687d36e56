package lint

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEveryNodeEventIsDocumented(t *testing.T) {
	violations, err := checkEventsDocumented(repositoryUnderTest(t))
	require.NoError(t, err)
	reportViolations(t, violations)
}

func TestTheEventsRuleFindsAnUndocumentedKind(t *testing.T) {
	repo := writeModule(t, map[string]string{
		"docs/operations.md": "# Operations\n\n- `disk-low`: the disk is short.\n",
		"node/disk.go": "package node\n\ntype observer interface{ Event(kind, detail string) }\n\n" +
			"func f(o observer) {\n\to.Event(\"disk-low\", \"\")\n\to.Event(\"disk-gone\", \"\") // \"not-an-event\"\n}\n",
		"node/disk_test.go": "package node\n\nfunc g(o observer) { o.Event(\"only-in-a-test\", \"\") }\n",
		"host/host.go":      "package host\n",
	})
	violations, err := checkEventsDocumented(repo)
	require.NoError(t, err)
	require.Len(t, violations, 1, "%v", violations)
	require.Equal(t, "node/disk.go", violations[0].file)
	require.Equal(t, 7, violations[0].line)
	require.Contains(t, violations[0].message, "disk-gone")
}
