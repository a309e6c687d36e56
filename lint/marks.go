package lint

import (
	"go/ast"
	"strconv"
	"strings"
)

// chaosImportPath is the package of the coverage marks, relative to the
// module.
const chaosImportPath = "chaos"

// simComponent is the simulator: deterministic, but it names marks of
// its own (built from the fault and the phase), which it declares itself.
const simComponent = "sim"

// markConstantPrefix starts the name of every constant of the marks'
// registry (chaos/marks.go).
const markConstantPrefix = "Mark"

// checkCoverageMarks applies rule 5: every call of chaos.Reached in the
// core names a constant of the registry, chaos.Mark<Name>, so that the
// registry is the whole list of marks the sweeps check.
func checkCoverageMarks(repo *repository) []violation {
	var violations []violation
	forEachCoreChaosUser(repo, func(file *sourceFile, name string) {
		ast.Inspect(file.syntax, func(node ast.Node) bool {
			if call, ok := node.(*ast.CallExpr); ok && isCall(call, name, "Reached") && !isMarkConstant(call, name) {
				file, line := repo.position(call.Pos())
				violations = append(violations, violation{file: file, line: line, rule: "coverage-mark",
					message: "chaos.Reached in the core takes a constant of the registry (chaos.Mark...), declared in chaos/marks.go"})
			}
			return true
		})
	})
	return sortViolations(violations)
}

// forEachCoreChaosUser calls visit with every file of the core (the
// simulator aside) that imports package chaos, and the name it uses for it.
func forEachCoreChaosUser(repo *repository, visit func(file *sourceFile, chaosName string)) {
	for _, file := range repo.files {
		if !file.isDeterministic() || file.component() == simComponent {
			continue
		}
		if name, imported := chaosLocalName(repo, file); imported {
			visit(file, name)
		}
	}
}

// chaosLocalName returns the name file refers to package chaos by.
func chaosLocalName(repo *repository, file *sourceFile) (string, bool) {
	for _, spec := range file.syntax.Imports {
		importPath, err := strconv.Unquote(spec.Path.Value)
		if err != nil || importPath != repo.modulePath+"/"+chaosImportPath {
			continue
		}
		if spec.Name != nil {
			return spec.Name.Name, true
		}
		return chaosImportPath, true
	}
	return "", false
}

// isCall reports whether call calls pkg.function.
func isCall(call *ast.CallExpr, pkg, function string) bool {
	selector, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || selector.Sel.Name != function {
		return false
	}
	ident, ok := selector.X.(*ast.Ident)
	return ok && ident.Name == pkg
}

// isMarkConstant reports whether call's one argument is pkg.Mark<Name>.
func isMarkConstant(call *ast.CallExpr, pkg string) bool {
	if len(call.Args) != 1 {
		return false
	}
	selector, ok := call.Args[0].(*ast.SelectorExpr)
	if !ok || !strings.HasPrefix(selector.Sel.Name, markConstantPrefix) || selector.Sel.Name == markConstantPrefix {
		return false
	}
	ident, ok := selector.X.(*ast.Ident)
	return ok && ident.Name == pkg
}
