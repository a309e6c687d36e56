package lint

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// eventComponents are the packages whose events reach the operator's log.
var eventComponents = map[string]bool{"node": true, "host": true}

// eventsDocument is where an operator looks an event up.
const eventsDocument = "docs/operations.md"

// checkEventsDocumented applies rule 8: every event kind the node or the
// host raises with a literal kind (observer.Event("kind", ...)) is named,
// in backquotes, in eventsDocument, so that an operator who reads one in
// a log finds it (an audit found 39 of 86 kinds documented).
func checkEventsDocumented(repo *repository) ([]violation, error) {
	document, err := os.ReadFile(filepath.Join(repo.root, filepath.FromSlash(eventsDocument)))
	if err != nil {
		return nil, err
	}
	var violations []violation
	for _, file := range repo.files {
		if file.isTest || !eventComponents[file.component()] {
			continue
		}
		ast.Inspect(file.syntax, func(node ast.Node) bool {
			kind, ok := literalEventKind(node)
			if ok && !strings.Contains(string(document), "`"+kind+"`") {
				name, line := repo.position(node.Pos())
				violations = append(violations, violation{file: name, line: line, rule: "event-documented",
					message: "the event " + kind + " is not named in " + eventsDocument + " (Node events): say what it means and its level there"})
			}
			return true
		})
	}
	return sortViolations(violations), nil
}

// literalEventKind returns the kind of a call X.Event("kind", ...).
func literalEventKind(node ast.Node) (string, bool) {
	call, ok := node.(*ast.CallExpr)
	if !ok || len(call.Args) == 0 {
		return "", false
	}
	selector, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || selector.Sel.Name != "Event" {
		return "", false
	}
	literal, ok := ast.Unparen(call.Args[0]).(*ast.BasicLit)
	if !ok || literal.Kind != token.STRING {
		return "", false
	}
	kind, err := strconv.Unquote(literal.Value)
	return kind, err == nil
}
