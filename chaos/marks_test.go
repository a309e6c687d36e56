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
	declared := map[string]Mark{}
	for name, value := range declaredConstants(t, "marks.go", "Mark") {
		declared[name] = Mark(value)
	}
	return declared
}

// declaredConstants returns the value of every string constant of the
// named type declared in file (of this package), by constant name.
func declaredConstants(t *testing.T, file, typeName string) map[string]string {
	t.Helper()
	syntax, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	require.NoError(t, err)
	declared := map[string]string{}
	for _, decl := range syntax.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value := spec.(*ast.ValueSpec)
			if ident, ok := value.Type.(*ast.Ident); !ok || ident.Name != typeName {
				continue
			}
			text, err := strconv.Unquote(value.Values[0].(*ast.BasicLit).Value)
			require.NoError(t, err)
			declared[value.Names[0].Name] = text
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
