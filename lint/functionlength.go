package lint

import (
	"fmt"
	"go/ast"
	"go/token"
)

// functionBodyLinesMax is the longest a function body may be, in lines
// between its braces, unless grandfathered (docs/style.md#shape-and-naming).
const functionBodyLinesMax = 70

// functionLength is one function of the repository and its body length.
type functionLength struct {
	// key is "file:Name" (or "file:Recv.Name", "file:(*Recv).Name"), the
	// form the grandfather map uses.
	key string
	// file and line locate the func keyword (or the var name of a
	// package-level function literal).
	file string
	line int
	// bodyLines counts the lines strictly between the body's braces.
	bodyLines int
}

// checkFunctionLength applies rule 4: a body longer than
// functionBodyLinesMax fails unless grandfather lists it at a length it has
// not grown past. grandfather maps a key to the length recorded when it was
// grandfathered; entries that are stale (gone, back under the limit, or
// shorter than recorded) fail too, so the ratchet only tightens.
func checkFunctionLength(repo *repository, grandfather map[string]int) []violation {
	found := map[string]int{}
	var violations []violation
	for _, function := range measureFunctions(repo) {
		found[function.key] = function.bodyLines
		if v, failed := judgeFunction(function, grandfather); failed {
			violations = append(violations, v)
		}
	}
	violations = append(violations, staleGrandfathered(grandfather, found)...)
	return sortViolations(violations)
}

// judgeFunction returns the violation of one function, if any.
func judgeFunction(function functionLength, grandfather map[string]int) (violation, bool) {
	recorded, listed := grandfather[function.key]
	v := violation{file: function.file, line: function.line, rule: "function-length"}
	switch {
	case function.bodyLines <= functionBodyLinesMax || (listed && function.bodyLines <= recorded):
		return v, false
	case listed:
		v.message = fmt.Sprintf("%s is %d lines long and grew past its grandfathered %d: the ratchet only goes down; split it",
			function.key, function.bodyLines, recorded)
	default:
		v.message = fmt.Sprintf("%s is %d lines long, over the limit of %d: split it (push ifs up, fors down)",
			function.key, function.bodyLines, functionBodyLinesMax)
	}
	return v, true
}

// staleGrandfathered reports grandfather entries that no longer hold their
// function at the recorded length.
func staleGrandfathered(grandfather, found map[string]int) []violation {
	var violations []violation
	for _, key := range sortedKeys(grandfather) {
		length, exists := found[key]
		if message := staleMessage(key, grandfather[key], length, exists); message != "" {
			violations = append(violations, violation{file: "lint/lint_test.go", line: 1, rule: "function-length", message: message})
		}
	}
	return violations
}

// staleMessage says how to update a stale grandfather entry, or "" if the
// entry still holds.
func staleMessage(key string, recorded, length int, exists bool) string {
	switch {
	case !exists:
		return fmt.Sprintf("grandfathered function %s no longer exists: remove its entry", key)
	case length <= functionBodyLinesMax:
		return fmt.Sprintf("grandfathered function %s is now %d lines, within the limit: remove its entry", key, length)
	case length < recorded:
		return fmt.Sprintf("grandfathered function %s shrank to %d lines: lower its entry from %d to %d", key, length, recorded, length)
	}
	return ""
}

// measureFunctions returns every function of the non-test, non-generated
// files: declared functions and methods, and function literals assigned to
// package-level variables.
func measureFunctions(repo *repository) []functionLength {
	var functions []functionLength
	for _, file := range repo.files {
		if file.isTest || ast.IsGenerated(file.syntax) {
			continue
		}
		for _, declaration := range file.syntax.Decls {
			functions = append(functions, measureDeclaration(repo, file, declaration)...)
		}
	}
	return functions
}

// measureDeclaration measures the functions of one top-level declaration.
func measureDeclaration(repo *repository, file *sourceFile, declaration ast.Decl) []functionLength {
	switch declaration := declaration.(type) {
	case *ast.FuncDecl:
		if declaration.Body == nil {
			return nil // implemented in assembly
		}
		return []functionLength{measure(repo, file, functionName(declaration), declaration.Pos(), declaration.Body)}
	case *ast.GenDecl:
		return measureFunctionLiterals(repo, file, declaration)
	}
	return nil
}

// measureFunctionLiterals measures `var name = func() {...}` declarations.
func measureFunctionLiterals(repo *repository, file *sourceFile, declaration *ast.GenDecl) []functionLength {
	var functions []functionLength
	for _, spec := range declaration.Specs {
		value, isValue := spec.(*ast.ValueSpec)
		if !isValue {
			continue
		}
		for i, expression := range value.Values {
			literal, isLiteral := expression.(*ast.FuncLit)
			if isLiteral && i < len(value.Names) {
				name := value.Names[i]
				functions = append(functions, measure(repo, file, name.Name, name.Pos(), literal.Body))
			}
		}
	}
	return functions
}

// measure builds the functionLength of one body.
func measure(repo *repository, file *sourceFile, name string, pos token.Pos, body *ast.BlockStmt) functionLength {
	_, line := repo.position(pos)
	_, openLine := repo.position(body.Lbrace)
	_, closeLine := repo.position(body.Rbrace)
	return functionLength{
		key:       file.name + ":" + name,
		file:      file.name,
		line:      line,
		bodyLines: max(0, closeLine-openLine-1),
	}
}

// functionName returns Name, Recv.Name or (*Recv).Name.
func functionName(declaration *ast.FuncDecl) string {
	if declaration.Recv == nil || len(declaration.Recv.List) == 0 {
		return declaration.Name.Name
	}
	receiver := declaration.Recv.List[0].Type
	pointer := false
	if star, isStar := receiver.(*ast.StarExpr); isStar {
		receiver, pointer = star.X, true
	}
	typeName := receiverTypeName(receiver)
	if pointer {
		return "(*" + typeName + ")." + declaration.Name.Name
	}
	return typeName + "." + declaration.Name.Name
}

// receiverTypeName strips type parameters from a receiver type.
func receiverTypeName(receiver ast.Expr) string {
	switch receiver := receiver.(type) {
	case *ast.Ident:
		return receiver.Name
	case *ast.IndexExpr:
		return receiverTypeName(receiver.X)
	case *ast.IndexListExpr:
		return receiverTypeName(receiver.X)
	case *ast.ParenExpr:
		return receiverTypeName(receiver.X)
	}
	return "?"
}
