package sim

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStreamNumbersAreDistinct: no two parts of a run draw from the same
// random stream (two parts sharing one would draw the same numbers, and a
// change to one would move the other), and no single stream falls in the
// span of a per-node base.
func TestStreamNumbersAreDistinct(t *testing.T) {
	seen := map[uint64]bool{}
	for _, stream := range singleStreams {
		require.False(t, seen[stream], "stream %d is used twice", stream)
		seen[stream] = true
		for _, base := range perNodeStreamBases {
			require.False(t, stream >= base && stream < base+perNodeStreamSpan,
				"stream %d falls in the per-node streams from %d", stream, base)
		}
	}
	for i, base := range perNodeStreamBases {
		for _, other := range perNodeStreamBases[i+1:] {
			require.False(t, base < other+perNodeStreamSpan && other < base+perNodeStreamSpan,
				"the per-node streams from %d and %d overlap", base, other)
		}
	}
}

// TestEveryRandomStreamIsListed reads the package's source: every constant
// of the streams' block is in singleStreams or perNodeStreamBases (so the
// test above sees it), and every newRand call names a single stream, or a
// per-node base plus an index, by its constant, never by a literal.
func TestEveryRandomStreamIsListed(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	require.NoError(t, err)
	files := map[string]*ast.File{}
	for _, name := range names {
		if !strings.HasSuffix(name, "_test.go") {
			files[name], err = parser.ParseFile(fset, name, nil, 0)
			require.NoError(t, err)
		}
	}
	streams := streamConstants(t, files["streams.go"])
	listed := slices.Concat(singleStreams, perNodeStreamBases)
	for name, value := range streams {
		require.Contains(t, listed, value, "stream %s is in neither singleStreams nor perNodeStreamBases", name)
	}
	require.Len(t, listed, len(streams), "the lists hold a number no constant of the block names")
	calls := 0
	for name, file := range files {
		ast.Inspect(file, func(node ast.Node) bool {
			call, ok := node.(*ast.CallExpr)
			if !ok || !isIdent(call.Fun, "newRand") {
				return true
			}
			calls++
			require.Len(t, call.Args, 2, "%s", fset.Position(call.Pos()))
			stream, perNode := streamArgument(call.Args[1])
			value, known := streams[stream]
			require.True(t, known, "%s: newRand's stream is not a constant of streams.go", fset.Position(call.Pos()))
			require.Equal(t, perNode, slices.Contains(perNodeStreamBases, value),
				"%s: %s: a per-node base takes an index, a single stream none", name, stream)
			return true
		})
	}
	require.Positive(t, calls)
}

// streamConstants maps the names of the constants of the streams' block
// (the first const block of streams.go) to their values.
func streamConstants(t *testing.T, file *ast.File) map[string]uint64 {
	t.Helper()
	require.NotNil(t, file, "streams.go")
	streams := map[string]uint64{}
	for _, decl := range file.Decls {
		block, ok := decl.(*ast.GenDecl)
		if !ok || block.Tok != token.CONST || len(streams) > 0 {
			continue // only the first const block holds streams
		}
		for _, spec := range block.Specs {
			value := spec.(*ast.ValueSpec)
			for i, name := range value.Names {
				literal, ok := value.Values[i].(*ast.BasicLit)
				require.True(t, ok, "stream %s is not a literal number", name.Name)
				number, err := strconv.ParseUint(literal.Value, 0, 64)
				require.NoError(t, err)
				streams[name.Name] = number
			}
		}
	}
	return streams
}

// streamArgument names the constant newRand's stream argument is built on,
// and whether an index is added to it (uint64(base+index) or base+index).
func streamArgument(argument ast.Expr) (name string, indexed bool) {
	if conversion, ok := argument.(*ast.CallExpr); ok && isIdent(conversion.Fun, "uint64") && len(conversion.Args) == 1 {
		argument = conversion.Args[0]
	}
	if sum, ok := argument.(*ast.BinaryExpr); ok && sum.Op == token.ADD {
		argument, indexed = sum.X, true
	}
	if ident, ok := argument.(*ast.Ident); ok {
		return ident.Name, indexed
	}
	return "", indexed
}

func isIdent(expr ast.Expr, name string) bool {
	ident, ok := expr.(*ast.Ident)
	return ok && ident.Name == name
}
