package lint

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// grandfathered lists the functions allowed to be longer than
// functionBodyLinesMax, keyed "file:Name" (methods "file:Recv.Name" or
// "file:(*Recv).Name"), with the body length they had when listed. Entries
// are only ever removed or lowered; the test fails when one is stale.
var grandfathered = map[string]int{}

// The repository is parsed once for all the tests of this file.
var (
	repositoryOnce   sync.Once
	repositoryLoaded *repository
	repositoryError  error
)

// repositoryUnderTest returns the parsed module this test runs in.
func repositoryUnderTest(t *testing.T) *repository {
	t.Helper()
	repositoryOnce.Do(func() {
		workingDir, err := os.Getwd()
		if err != nil {
			repositoryError = err
			return
		}
		root, err := findModuleRoot(workingDir)
		if err != nil {
			repositoryError = err
			return
		}
		repositoryLoaded, repositoryError = loadRepository(root)
	})
	require.NoError(t, repositoryError)
	return repositoryLoaded
}

// reportViolations fails the test once per violation, so every finding is
// listed with its file:line and rule.
func reportViolations(t *testing.T, violations []violation) {
	t.Helper()
	for _, v := range violations {
		t.Error(v.String())
	}
}

func TestRepositoryParses(t *testing.T) {
	repo := repositoryUnderTest(t)
	require.NotEmpty(t, repo.files, "the lint found no Go files under %s", repo.root)
	reportViolations(t, repo.parseErrors)
}

func TestCoreIsDeterministic(t *testing.T) {
	reportViolations(t, checkDeterminism(repositoryUnderTest(t)))
}

func TestCoreMapRangesAreOrdered(t *testing.T) {
	violations, err := checkMapRanges(repositoryUnderTest(t))
	require.NoError(t, err)
	reportViolations(t, violations)
}

func TestImportGraph(t *testing.T) {
	reportViolations(t, checkImportGraph(repositoryUnderTest(t)))
}

func TestFunctionLengthRatchet(t *testing.T) {
	reportViolations(t, checkFunctionLength(repositoryUnderTest(t), grandfathered))
}

func TestFindModuleRootWalksUp(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "go.mod"), []byte("module narad\n"), 0o644))
	deep := filepath.Join(root, "a", "b", "c")
	require.NoError(t, os.MkdirAll(deep, 0o755))

	found, err := findModuleRoot(deep)
	require.NoError(t, err)
	require.Equal(t, root, found)
}
