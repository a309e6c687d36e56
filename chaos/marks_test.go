package chaos

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// declaredMarks returns the value of every constant of type Mark declared
// in marks.go, by name.
func declaredMarks(t *testing.T) map[string]Mark {
	t.Helper()
	file, err := parser.ParseFile(token.NewFileSet(), "marks.go", nil, 0)
	require.NoError(t, err)
	declared := map[string]Mark{}
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			if ident, ok := value.Type.(*ast.Ident); !ok || ident.Name != "Mark" {
				continue
			}
			text, err := strconv.Unquote(value.Values[0].(*ast.BasicLit).Value)
			require.NoError(t, err)
			declared[value.Names[0].Name] = Mark(text)
		}
	}
	return declared
}

// TestRegistryListsEveryDeclaredMarkOnce: Registered holds each constant
// of marks.go exactly once, and no two constants share a name.
func TestRegistryListsEveryDeclaredMarkOnce(t *testing.T) {
	declared := declaredMarks(t)
	require.NotEmpty(t, declared)
	var values []Mark
	for _, mark := range declared {
		values = append(values, mark)
	}
	slices.Sort(values)
	require.Equal(t, len(values), len(slices.Compact(slices.Clone(values))), "two constants name the same mark")
	registered := slices.Sorted(slices.Values(Registered))
	require.Equal(t, values, registered, "Registered lists exactly the marks declared in marks.go")
}

func TestReachedCountsMarksByName(t *testing.T) {
	Record(nil, 0)
	defer Reset()
	Reached(MarkNodeRedelivery)
	Reached(MarkNodeRedelivery)
	require.Equal(t, []Count{{string(MarkNodeRedelivery), 2}}, Marks())
}
