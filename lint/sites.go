package lint

import (
	"go/ast"
	"go/token"
)

// siteTypeName is the type of the fault sites in package chaos, and the
// prefix of every constant of its registry.
const siteTypeName = "Site"

// sitesRegistryFile declares the fault sites, relative to the module.
const sitesRegistryFile = "chaos/sites.go"

// checkFaultSites applies rule 7: in the core, chaos.Buggify never takes a
// string literal and no chaos.Site is made by conversion, so every site
// the core can fire is a constant of the registry in chaos/sites.go; and
// every constant of the registry is named by the core, so that no site is
// listed without a caller.
func checkFaultSites(repo *repository) []violation {
	var violations []violation
	named := map[string]bool{}
	forEachCoreChaosUser(repo, func(file *sourceFile, name string) {
		ast.Inspect(file.syntax, func(node ast.Node) bool {
			if call, ok := node.(*ast.CallExpr); ok && madeUpSite(call, name) {
				file, line := repo.position(call.Pos())
				violations = append(violations, violation{file: file, line: line, rule: "fault-site",
					message: "a fault site of the core is a constant of the registry (chaos.Site...), declared in chaos/sites.go"})
			}
			if selector, ok := node.(*ast.SelectorExpr); ok && isSiteConstant(selector, name) {
				named[selector.Sel.Name] = true
			}
			return true
		})
	})
	violations = append(violations, sitesWithoutCaller(repo, named)...)
	return sortViolations(violations)
}

// madeUpSite reports a call that makes a site outside the registry: a
// conversion to chaos.Site, or chaos.Buggify of a string literal.
func madeUpSite(call *ast.CallExpr, pkg string) bool {
	if isCall(call, pkg, siteTypeName) {
		return true
	}
	if !isCall(call, pkg, "Buggify") || len(call.Args) != 1 {
		return false
	}
	literal, ok := ast.Unparen(call.Args[0]).(*ast.BasicLit)
	return ok && literal.Kind == token.STRING
}

// isSiteConstant reports whether selector names something of pkg (only
// the registry's constants are then looked up).
func isSiteConstant(selector *ast.SelectorExpr, pkg string) bool {
	ident, ok := selector.X.(*ast.Ident)
	return ok && ident.Name == pkg
}

// sitesWithoutCaller reports each constant of the registry that no core
// file names.
func sitesWithoutCaller(repo *repository, named map[string]bool) []violation {
	var violations []violation
	for _, file := range repo.files {
		if file.name != sitesRegistryFile {
			continue
		}
		for _, spec := range siteConstants(file.syntax) {
			if named[spec.Name] {
				continue
			}
			name, line := repo.position(spec.Pos())
			violations = append(violations, violation{file: name, line: line, rule: "fault-site",
				message: "fault site chaos." + spec.Name + " is registered, but no code of the core passes it to chaos.Buggify"})
		}
	}
	return violations
}

// siteConstants returns the names of the constants of type Site a file
// declares.
func siteConstants(file *ast.File) []*ast.Ident {
	var names []*ast.Ident
	for _, decl := range file.Decls {
		gen, ok := decl.(*ast.GenDecl)
		if !ok || gen.Tok != token.CONST {
			continue
		}
		for _, spec := range gen.Specs {
			value, ok := spec.(*ast.ValueSpec)
			if ident, typed := value.Type.(*ast.Ident); ok && typed && ident.Name == siteTypeName {
				names = append(names, value.Names...)
			}
		}
	}
	return names
}
