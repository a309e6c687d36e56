package lint

import (
	"fmt"
	"go/ast"
	"strconv"
)

// osFile is the one core file allowed to import os, syscall and
// golang.org/x/sys/unix: the
// production implementation of storage.FS.
const osFile = "storage/osfs.go"

// watchedPackages maps each import path whose identifiers rule 1 inspects to
// the name the package declares, used when the import is not renamed.
var watchedPackages = map[string]string{
	"time":          "time",
	"context":       "context",
	"math/rand":     "rand",
	"math/rand/v2":  "rand",
	"io/ioutil":     "ioutil",
	"path/filepath": "filepath",
}

// clockFunctions read the wall clock or start a timer goroutine. The
// context deadlines are on the list because they do both.
var clockFunctions = map[string]map[string]bool{
	"time": {"Now": true, "Sleep": true, "After": true, "AfterFunc": true, "NewTimer": true,
		"NewTicker": true, "Tick": true, "Since": true, "Until": true},
	"context": {"WithTimeout": true, "WithDeadline": true, "WithTimeoutCause": true,
		"WithDeadlineCause": true},
}

// seededRandomNames are the identifiers of math/rand and math/rand/v2 the
// core may use: constructors of a seeded generator and the types such a
// generator is passed around as. Everything else in those packages draws
// from the process-wide generator, so it is denied by default.
var seededRandomNames = map[string]bool{
	"New": true, "NewPCG": true, "NewChaCha8": true, "NewSource": true, "NewZipf": true,
	"Rand": true, "Source": true, "Source64": true, "PCG": true, "ChaCha8": true, "Zipf": true,
}

// filesystemFunctions of path/filepath read the disk behind storage.FS's back.
var filesystemFunctions = map[string]bool{
	"Walk": true, "WalkDir": true, "Glob": true, "EvalSymlinks": true, "Abs": true,
}

// osImports may not be imported by the core; the value says whether
// storage/osfs.go may import it.
var osImports = map[string]bool{"os": true, "syscall": true, "golang.org/x/sys/unix": true, "os/exec": false, "net": false}

// exemptibleComponents may mark a reviewed exception to rule 1 with
// exemptionMarker and a reason, on the line or the line above: the
// simulator, a driver that reaches the os and the wall clock for its
// harness (the metastores' temporary files, pinning crypto/rand to the
// seed, the speed report), never for what a run computes. The core has no
// exceptions.
var exemptibleComponents = map[string]bool{"sim": true}

// checkDeterminism applies rule 1 to every non-test file of the core and
// the simulator.
func checkDeterminism(repo *repository) []violation {
	var violations []violation
	for _, file := range repo.files {
		if !file.isDeterministic() {
			continue
		}
		found := checkCoreFile(repo, file)
		if exemptibleComponents[file.component()] {
			found = withoutExemptions(repo, file, found)
		}
		violations = append(violations, found...)
	}
	return sortViolations(violations)
}

// withoutExemptions drops the violations of file that carry an exemption
// with a reason on their line or the line above; an exemption without a
// reason is itself reported.
func withoutExemptions(repo *repository, file *sourceFile, violations []violation) []violation {
	exemptions := exemptionsByLine(repo, file.syntax)
	var kept []violation
	for _, v := range violations {
		reason, exempt := exemptions[v.line]
		if !exempt {
			reason, exempt = exemptions[v.line-1]
		}
		switch {
		case !exempt:
			kept = append(kept, v)
		case reason == "":
			v.message = exemptionMarker + " needs a reason saying why the exception cannot change a run"
			kept = append(kept, v)
		}
	}
	return kept
}

// fileChecker carries what rule 1 needs while it walks one file.
type fileChecker struct {
	repo *repository
	file *sourceFile
	// localNames maps the name a watched package is referred to by in this
	// file to its import path.
	localNames map[string]string
	violations []violation
}

// checkCoreFile applies rule 1 to one file of the core or the simulator.
func checkCoreFile(repo *repository, file *sourceFile) []violation {
	checker := &fileChecker{repo: repo, file: file, localNames: map[string]string{}}
	for _, spec := range file.syntax.Imports {
		checker.checkImport(spec)
	}
	ast.Inspect(file.syntax, checker.visit)
	return checker.violations
}

// report records a violation at node.
func (c *fileChecker) report(node ast.Node, rule, format string, args ...any) {
	file, line := c.repo.position(node.Pos())
	c.violations = append(c.violations, violation{file: file, line: line, rule: rule,
		message: fmt.Sprintf(format, args...)})
}

// checkImport flags forbidden imports and records the local names of the
// watched ones.
func (c *fileChecker) checkImport(spec *ast.ImportSpec) {
	importPath, err := strconv.Unquote(spec.Path.Value)
	if err != nil {
		return // the parser accepted it, so it is a valid string literal
	}
	c.checkImportPath(spec, importPath)
	name, watched := watchedPackages[importPath]
	if !watched {
		return
	}
	if spec.Name != nil {
		name = spec.Name.Name
	}
	if name == "." {
		c.report(spec, "dot-import", "dot import of %q hides its calls from this lint; import it by name", importPath)
	}
	c.localNames[name] = importPath
}

// checkImportPath flags crypto/rand and the os-level packages.
func (c *fileChecker) checkImportPath(spec *ast.ImportSpec, importPath string) {
	if importPath == "crypto/rand" {
		c.report(spec, "crypto-rand", "the core imports crypto/rand: randomness must come from the seeded *rand.Rand passed in")
		return
	}
	allowedInOSFile, forbidden := osImports[importPath]
	if forbidden && !(allowedInOSFile && c.file.name == osFile) {
		c.report(spec, "os-import", "the core imports %q: I/O goes through storage.FS (only %s may import os, syscall and golang.org/x/sys/unix)", importPath, osFile)
	}
}

// visit is the ast.Inspect callback of rule 1.
func (c *fileChecker) visit(node ast.Node) bool {
	switch node := node.(type) {
	case *ast.GoStmt:
		c.report(node, "go-statement", "go statement in the core: the core is driven by Step/Tick and starts no goroutines")
	case *ast.SelectorExpr:
		c.checkSelector(node)
	}
	return true
}

// checkSelector flags pkg.Name references to forbidden functions of the
// watched packages, whether called or taken as a value.
func (c *fileChecker) checkSelector(selector *ast.SelectorExpr) {
	ident, isIdent := selector.X.(*ast.Ident)
	if !isIdent || ident.Obj != nil {
		return // not a package name: a local declaration shadows it
	}
	importPath, watched := c.localNames[ident.Name]
	if !watched {
		return
	}
	name := selector.Sel.Name
	switch importPath {
	case "time", "context":
		c.checkClock(selector, importPath, name)
	case "math/rand", "math/rand/v2":
		c.checkRandom(selector, importPath, name)
	case "io/ioutil", "path/filepath":
		c.checkBackdoor(selector, importPath, name)
	}
}

// checkClock flags a clock or timer function.
func (c *fileChecker) checkClock(selector *ast.SelectorExpr, importPath, name string) {
	if clockFunctions[importPath][name] {
		c.report(selector, "clock", "%s.%s in the core reads the wall clock or starts a timer: time arrives as Tick input, deadlines are fields", importPath, name)
	}
}

// checkRandom flags anything of math/rand that is not a seeded generator.
func (c *fileChecker) checkRandom(selector *ast.SelectorExpr, importPath, name string) {
	if !seededRandomNames[name] {
		c.report(selector, "global-rand", "%s.%s in the core uses the process-wide generator: draw from the seeded *rand.Rand passed in", importPath, name)
	}
}

// checkBackdoor flags io/ioutil (every function of it wraps os) and the
// path/filepath functions that touch the disk. storage/osfs.go may use
// them: it is the file allowed to reach the os.
func (c *fileChecker) checkBackdoor(selector *ast.SelectorExpr, importPath, name string) {
	touchesDisk := importPath == "io/ioutil" || filesystemFunctions[name]
	if touchesDisk && c.file.name != osFile {
		c.report(selector, "os-backdoor", "%s.%s in the core reaches the os: I/O goes through storage.FS", importPath, name)
	}
}
