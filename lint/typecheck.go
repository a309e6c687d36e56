package lint

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/build/constraint"
	"go/importer"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
)

// typeErrorsShownMax bounds how many type errors of one package a violation
// quotes; the rest are counted.
const typeErrorsShownMax = 3

// platformTags are build tags the go command sets from the platform and
// toolchain, not custom tags. Type-checking under one of them as a custom
// tag would mix the files of two platforms.
var platformTags = map[string]bool{
	"aix": true, "android": true, "darwin": true, "dragonfly": true, "freebsd": true, "hurd": true,
	"illumos": true, "ios": true, "js": true, "linux": true, "nacl": true, "netbsd": true,
	"openbsd": true, "plan9": true, "solaris": true, "wasip1": true, "windows": true, "zos": true,
	"386": true, "amd64": true, "amd64p32": true, "arm": true, "armbe": true, "arm64": true,
	"arm64be": true, "loong64": true, "mips": true, "mipsle": true, "mips64": true, "mips64le": true,
	"mips64p32": true, "mips64p32le": true, "ppc": true, "ppc64": true, "ppc64le": true,
	"riscv": true, "riscv64": true, "s390": true, "s390x": true, "sparc": true, "sparc64": true,
	"wasm": true, "unix": true, "cgo": true, "gc": true, "gccgo": true, "ignore": true,
}

// typedPackage is one core package type-checked under one build
// configuration. Built by typeCheckCore, read-only afterwards.
type typedPackage struct {
	// dir is the slash-separated package directory relative to the root.
	dir string
	// files are the files of dir the configuration builds.
	files []*sourceFile
	// info holds the types of files' expressions and what identifiers use.
	info *types.Info
}

// deterministicPackages groups the non-test files of the core and the
// simulator by directory.
func deterministicPackages(repo *repository) map[string][]*sourceFile {
	packages := map[string][]*sourceFile{}
	for _, file := range repo.files {
		if file.isDeterministic() {
			packages[file.dir] = append(packages[file.dir], file)
		}
	}
	return packages
}

// buildConfigurations returns, for each set of custom build tags (joined
// with commas, "" for the default build), the core directories to check
// under it: every directory under the default build, and a directory that
// mentions custom tags also under each of them alone and all together.
func buildConfigurations(packages map[string][]*sourceFile) map[string][]string {
	configurations := map[string][]string{}
	for _, dir := range sortedKeys(packages) {
		configurations[""] = append(configurations[""], dir)
		tags := customTags(packages[dir])
		for _, tag := range tags {
			configurations[tag] = append(configurations[tag], dir)
		}
		if len(tags) > 1 {
			all := strings.Join(tags, ",")
			configurations[all] = append(configurations[all], dir)
		}
	}
	return configurations
}

// customTags returns the sorted custom tags in the //go:build lines of files.
func customTags(files []*sourceFile) []string {
	found := map[string]bool{}
	for _, file := range files {
		for _, expression := range buildConstraints(file.syntax) {
			collectTags(expression, found)
		}
	}
	var tags []string
	for _, tag := range sortedKeys(found) {
		custom := !platformTags[tag] && !strings.HasPrefix(tag, "go1.") && !strings.HasPrefix(tag, "goexperiment.")
		if custom {
			tags = append(tags, tag)
		}
	}
	return tags
}

// collectTags adds every tag a build constraint mentions to found.
func collectTags(expression constraint.Expr, found map[string]bool) {
	switch expression := expression.(type) {
	case *constraint.TagExpr:
		found[expression.Tag] = true
	case *constraint.NotExpr:
		collectTags(expression.X, found)
	case *constraint.AndExpr:
		collectTags(expression.X, found)
		collectTags(expression.Y, found)
	case *constraint.OrExpr:
		collectTags(expression.X, found)
		collectTags(expression.Y, found)
	}
}

// buildConstraints parses the //go:build lines above the package clause.
func buildConstraints(syntax *ast.File) []constraint.Expr {
	var expressions []constraint.Expr
	for _, group := range syntax.Comments {
		if group.Pos() > syntax.Package {
			break
		}
		for _, comment := range group.List {
			if !constraint.IsGoBuild(comment.Text) {
				continue
			}
			if expression, err := constraint.Parse(comment.Text); err == nil {
				expressions = append(expressions, expression)
			}
		}
	}
	return expressions
}

// typeCheckCore type-checks the given core directories under one set of
// custom tags. Packages that do not type-check are returned as violations:
// a rule cannot vouch for code it cannot type.
func typeCheckCore(repo *repository, tags string, dirs []string, packages map[string][]*sourceFile) ([]typedPackage, []violation, error) {
	exports, err := listExports(repo.root, tags, dirs)
	if err != nil {
		return nil, nil, err
	}
	imports := importer.ForCompiler(repo.fileSet, "gc", exports.open)
	var typed []typedPackage
	var violations []violation
	for _, dir := range dirs {
		files, err := filesBuilt(repo, tags, packages[dir])
		if err != nil {
			return nil, nil, err
		}
		if len(files) == 0 {
			continue // every file of dir is for other build tags
		}
		checked, problem := typeCheckPackage(repo, imports, dir, files)
		typed = append(typed, checked)
		if problem != "" {
			violations = append(violations, typeCheckViolation(files[0], tags, problem))
		}
	}
	return typed, violations, nil
}

// typeCheckViolation reports a core package that does not type-check.
func typeCheckViolation(first *sourceFile, tags, problem string) violation {
	return violation{file: first.name, line: 1, rule: "typecheck",
		message: fmt.Sprintf("package %s (build tags %q) does not type-check, so the map-range rule cannot check it: %s",
			first.importPath, tags, problem)}
}

// filesBuilt keeps the files the build with the given custom tags includes.
func filesBuilt(repo *repository, tags string, files []*sourceFile) ([]*sourceFile, error) {
	context := build.Default
	if tags != "" {
		context.BuildTags = strings.Split(tags, ",")
	}
	var built []*sourceFile
	for _, file := range files {
		osPath := filepath.Join(repo.root, filepath.FromSlash(file.name))
		match, err := context.MatchFile(filepath.Dir(osPath), filepath.Base(osPath))
		if err != nil {
			return nil, err
		}
		if match {
			built = append(built, file)
		}
	}
	return built, nil
}

// typeCheckPackage type-checks one package from its parsed files and
// returns its type information and a summary of its type errors, if any.
func typeCheckPackage(repo *repository, imports types.Importer, dir string, files []*sourceFile) (typedPackage, string) {
	var typeErrors []string
	config := types.Config{
		Importer:    imports,
		FakeImportC: true,
		Error:       func(err error) { typeErrors = append(typeErrors, err.Error()) },
	}
	info := &types.Info{
		Types: map[ast.Expr]types.TypeAndValue{},
		Defs:  map[*ast.Ident]types.Object{},
		Uses:  map[*ast.Ident]types.Object{},
	}
	syntax := make([]*ast.File, len(files))
	for i, file := range files {
		syntax[i] = file.syntax
	}
	_, _ = config.Check(files[0].importPath, repo.fileSet, syntax, info) // errors arrive through config.Error
	return typedPackage{dir: dir, files: files, info: info}, summarizeTypeErrors(typeErrors)
}

// summarizeTypeErrors quotes the first few errors and counts the rest.
func summarizeTypeErrors(typeErrors []string) string {
	if len(typeErrors) <= typeErrorsShownMax {
		return strings.Join(typeErrors, "; ")
	}
	shown := strings.Join(typeErrors[:typeErrorsShownMax], "; ")
	return fmt.Sprintf("%s; and %d more", shown, len(typeErrors)-typeErrorsShownMax)
}

// exportFiles maps import paths to the export data files the go command
// compiled for them.
type exportFiles map[string]string

// errNoExportData means the go command produced no export data for an
// import, usually because that package does not compile.
var errNoExportData = errors.New("lint: no export data (does the package compile?)")

// open is the lookup function of the gc importer.
func (e exportFiles) open(importPath string) (io.ReadCloser, error) {
	file, found := e[importPath]
	if !found || file == "" {
		return nil, fmt.Errorf("%w: %s", errNoExportData, importPath)
	}
	return os.Open(file)
}

// listedPackage is the part of `go list -json` output listExports reads.
type listedPackage struct {
	ImportPath string
	Export     string
}

// listExports asks the go command to compile the dependencies of dirs under
// the given custom tags and returns where it put their export data. The
// build cache makes this cheap after the first run (and `go vet` has
// usually filled it already).
func listExports(root, tags string, dirs []string) (exportFiles, error) {
	arguments := goListArguments(tags, dirs)
	command := exec.Command("go", arguments...)
	command.Dir = root
	var stderr bytes.Buffer
	command.Stderr = &stderr
	output, err := command.Output()
	if err != nil {
		return nil, fmt.Errorf("lint: go %s: %w\n%s", strings.Join(arguments, " "), err, stderr.String())
	}
	return decodeExports(output)
}

// goListArguments builds the go list command line of listExports. With -e
// a package that does not compile is listed without export data instead
// of failing the command; its importers then fail to type-check, which is
// reported as a finding.
func goListArguments(tags string, dirs []string) []string {
	arguments := []string{"list", "-e", "-export", "-deps", "-json=ImportPath,Export"}
	if tags != "" {
		arguments = append(arguments, "-tags="+tags)
	}
	for _, dir := range dirs {
		arguments = append(arguments, "./"+dir)
	}
	return arguments
}

// decodeExports reads the stream of JSON objects `go list -json` prints.
func decodeExports(output []byte) (exportFiles, error) {
	exports := exportFiles{}
	decoder := json.NewDecoder(bytes.NewReader(output))
	for decoder.More() {
		var listed listedPackage
		if err := decoder.Decode(&listed); err != nil {
			return nil, fmt.Errorf("lint: reading go list output: %w", err)
		}
		exports[listed.ImportPath] = listed.Export
	}
	return exports, nil
}

// sortedKeys returns the keys of a string-keyed map in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}
