package lint

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDocumentationReferencesResolve(t *testing.T) {
	violations, err := checkDocumentation(repositoryUnderTest(t).root)
	require.NoError(t, err)
	reportViolations(t, violations)
}

// The fixtures spell references in pieces, so that the repository-wide
// rule does not read them as references of this file.
const docsPrefix = "docs" + "/"

func TestHeadingAnchorsFollowGitHub(t *testing.T) {
	anchors := headingAnchors([]string{
		"# Narad documentation",
		"## The node contract",
		"### What `Tick` does",
		"## Moves",
		"## Moves",
		"```",
		"## Not a heading (fenced)",
		"```",
		"#Not a heading either",
		"## Faults (fault × phase), then 2 more ##",
	})
	for _, want := range []string{"narad-documentation", "the-node-contract", "what-tick-does", "moves", "moves-1",
		"faults-fault--phase-then-2-more"} {
		require.True(t, anchors[want], "anchor %q missing from %v", want, anchors)
	}
	require.Len(t, anchors, 6, "a fenced line or a line without a space after # is no heading: %v", anchors)
}

func TestDocumentationRuleFindsBrokenReferences(t *testing.T) {
	root := t.TempDir()
	write := func(name, content string) {
		path := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	write("go.mod", "module example\n")
	write(docsPrefix+"guide.md", "# Guide\n\n## Moves\n\nSee [moves](#moves), [gone](#gone), [other](other.md) and [up](../README.md).\n")
	write("a/a.go", "package a\n\n// See "+docsPrefix+"guide.md#moves and "+docsPrefix+"guide.md#nowhere.\n")
	write("b/b.go", "package b\n\n// See "+docsPrefix+"missing.md#x; the plan is in "+"DESIGN"+".md.\n")
	write("README.md", "Read "+docsPrefix+"guide.md.\n")

	violations, err := checkDocumentation(root)
	require.NoError(t, err)
	var got []string
	for _, v := range violations {
		got = append(got, v.String())
	}
	require.Equal(t, []string{
		"a/a.go:3: [doc-reference] " + docsPrefix + "guide.md#nowhere: " + docsPrefix + "guide.md has no heading with the anchor #nowhere",
		"b/b.go:3: [doc-reference] " + docsPrefix + "missing.md#x: no file " + docsPrefix + "missing.md in the repository",
		"b/b.go:3: [outside-document] \"DESIGN" + ".md\" is not in the repository; point into " + docsPrefix + " instead (" + docsPrefix + "<file>.md#<heading>)",
		docsPrefix + "guide.md:5: [doc-link] #gone: " + docsPrefix + "guide.md has no heading with the anchor #gone",
		docsPrefix + "guide.md:5: [doc-link] other.md: no file " + docsPrefix + "other.md in the repository",
	}, got)
}
