package lint

import (
	"fmt"
	"go/ast"
	"strconv"
	"strings"
)

// harnessComponents are the drivers, harnesses and tools the protocol
// packages node, meta and rebalance must never depend on.
var harnessComponents = map[string]bool{
	"sim": true, "fuzz": true, "host": true, "httpapi": true, "cmd": true, "auth": true,
	"soak": true, "proc": true, "client": true, "lint": true,
}

// protocolComponents are the core components above storage.
var protocolComponents = map[string]bool{"node": true, "meta": true, "rebalance": true}

// leafComponents import no other narad package: the assertion helper,
// which every package may use.
var leafComponents = map[string]bool{"invariant": true}

// storageImportsAllowed are the components storage may import: itself,
// the fault sites and coverage marks of chaos, and the assertion helper.
var storageImportsAllowed = map[string]bool{"storage": true, "chaos": true, "invariant": true}

// checkImportGraph applies rule 3 to the imports of every non-test file.
// Test files may import anything the go command accepts: a test of node may
// well drive it through sim.
func checkImportGraph(repo *repository) []violation {
	var violations []violation
	for _, file := range repo.files {
		if file.isTest {
			continue
		}
		for _, spec := range file.syntax.Imports {
			if v, found := importViolation(repo, file, spec); found {
				violations = append(violations, v)
			}
		}
	}
	return sortViolations(violations)
}

// importViolation judges one import of a non-test file.
func importViolation(repo *repository, file *sourceFile, spec *ast.ImportSpec) (violation, bool) {
	importPath, err := strconv.Unquote(spec.Path.Value)
	if err != nil {
		return violation{}, false // the parser accepted it, so it is a valid string literal
	}
	dir, isNarad := repo.narad(importPath)
	if !isNarad {
		return violation{}, false
	}
	reason := forbiddenImport(file.component(), componentOf(dir))
	if reason == "" {
		reason = forbiddenWithinNode(file.dir, dir)
	}
	name, line := repo.position(spec.Pos())
	return violation{file: name, line: line, rule: "import-graph",
		message: fmt.Sprintf("%s imports %s: %s", file.importPath, importPath, reason)}, reason != ""
}

// forbiddenImport returns why a package of component from may not import a
// package of component to, or "" if it may
// (docs/architecture.md#dependency-direction).
func forbiddenImport(from, to string) string {
	switch {
	case from == to:
		return ""
	case from == "msg":
		return "msg is the vocabulary everything speaks: it imports no package of this module"
	case leafComponents[from]:
		return from + " imports no other narad package: every package may import it"
	case to == "cmd":
		return "nobody imports cmd/...: it is wiring only"
	case to == "sim" || to == "fuzz":
		return "only tests import sim and fuzz"
	case from == "storage" && !storageImportsAllowed[to]:
		return "storage imports no other narad package except chaos and invariant"
	case protocolComponents[from] && harnessComponents[to]:
		return "the core never imports the drivers, harnesses, client or lint"
	case (from == "meta" || from == "rebalance") && to == "node":
		return "imports point down (node -> rebalance, meta): meta and rebalance never import node"
	}
	return ""
}

// forbiddenWithinNode returns why the package in directory fromDir may not
// import the one in toDir, for the rule inside component node: a
// sub-package of node (lease, movedest, movesource, route) is a part
// node is built of, with its own small inputs and outputs, so it never
// imports node itself.
func forbiddenWithinNode(fromDir, toDir string) string {
	if strings.HasPrefix(fromDir, "node/") && toDir == "node" {
		return "no sub-package of node imports node: it takes its inputs as its own types"
	}
	return ""
}
