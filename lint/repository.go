package lint

import (
	"bufio"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// errNoModule means no go.mod was found above the starting directory.
var errNoModule = errors.New("lint: no go.mod found in any parent directory")

// deterministicComponents are the top-level directories rules 1 and 2
// check: the deterministic core, and the simulator that drives it, whose
// runs must replay exactly from their seed.
var deterministicComponents = map[string]bool{"node": true, "meta": true, "rebalance": true, "storage": true, "sim": true, "invariant": true}

// sourceFile is one parsed .go file of the repository. All fields are set
// once by parseSourceFile and never change.
type sourceFile struct {
	// name is the slash-separated path relative to the module root, e.g.
	// "storage/osfs.go". It is also the file name in the token.FileSet.
	name string
	// dir is the slash-separated directory relative to the module root;
	// "." for the root itself.
	dir string
	// importPath is the import path of the package in dir.
	importPath string
	// isTest reports a _test.go file.
	isTest bool
	// syntax is the parsed file, with comments. Never nil: a file that
	// does not parse is recorded in repository.parseErrors instead.
	syntax *ast.File
}

// component is the concept a file belongs to: the first element of its
// directory.
func (f *sourceFile) component() string { return componentOf(f.dir) }

// isDeterministic reports a non-test file of the core or the simulator.
func (f *sourceFile) isDeterministic() bool {
	return !f.isTest && deterministicComponents[f.component()]
}

// repository is the parsed source of one module. Built once by
// loadRepository; read-only afterwards.
type repository struct {
	// root is the absolute OS path of the directory holding go.mod.
	root string
	// modulePath is the module path declared in go.mod.
	modulePath string
	// fileSet holds the positions of every file in files.
	fileSet *token.FileSet
	// files are the parsed files, sorted by name.
	files []*sourceFile
	// parseErrors are the files that did not parse, as violations.
	parseErrors []violation
}

// componentOf maps a slash-separated directory to its component.
func componentOf(dir string) string {
	first, _, _ := strings.Cut(dir, "/")
	return first
}

// findModuleRoot walks up from dir to the first directory holding go.mod.
func findModuleRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errNoModule
		}
		dir = parent
	}
}

// readModulePath returns the path of the module statement of root/go.mod.
func readModulePath(root string) (string, error) {
	file, err := os.Open(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`), nil
		}
	}
	if err := scanner.Err(); err != nil {
		return "", err
	}
	return "", fmt.Errorf("lint: %s/go.mod has no module statement", root)
}

// loadRepository parses every .go file of the module rooted at root.
func loadRepository(root string) (*repository, error) {
	modulePath, err := readModulePath(root)
	if err != nil {
		return nil, err
	}
	names, err := listGoFiles(root)
	if err != nil {
		return nil, err
	}
	repo := &repository{root: root, modulePath: modulePath, fileSet: token.NewFileSet()}
	for _, name := range names {
		if err := repo.parseSourceFile(name); err != nil {
			return nil, err
		}
	}
	return repo, nil
}

// listGoFiles returns the slash-separated names, relative to root and
// sorted, of the .go files that belong to the module's packages.
func listGoFiles(root string) ([]string, error) {
	var names []string
	err := filepath.WalkDir(root, func(osPath string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			return skipDirectory(root, osPath, entry.Name())
		}
		if strings.HasSuffix(entry.Name(), ".go") {
			rel, err := filepath.Rel(root, osPath)
			names = append(names, filepath.ToSlash(rel))
			return err
		}
		return nil
	})
	sort.Strings(names)
	return names, err
}

// skipDirectory returns fs.SkipDir for directories the go command ignores
// in ./... patterns, and for nested modules.
func skipDirectory(root, osPath, name string) error {
	if osPath == root {
		return nil
	}
	if name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return fs.SkipDir
	}
	if _, err := os.Stat(filepath.Join(osPath, "go.mod")); err == nil {
		return fs.SkipDir
	}
	return nil
}

// parseSourceFile parses one file and adds it to the repository. A syntax
// error is recorded as a violation, not returned: it is a finding about the
// repository, not a failure of the linter.
func (r *repository) parseSourceFile(name string) error {
	source, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	syntax, err := parser.ParseFile(r.fileSet, name, source, parser.ParseComments)
	if err != nil {
		r.parseErrors = append(r.parseErrors, violation{file: name, line: 1, rule: "parse",
			message: fmt.Sprintf("file does not parse, so no rule can check it: %v", err)})
		return nil
	}
	dir := path.Dir(name)
	r.files = append(r.files, &sourceFile{name: name, dir: dir, importPath: r.importPathOf(dir),
		isTest: strings.HasSuffix(name, "_test.go"), syntax: syntax})
	return nil
}

// importPathOf returns the import path of the package in a slash-separated
// directory relative to the root.
func (r *repository) importPathOf(dir string) string {
	if dir == "." {
		return r.modulePath
	}
	return r.modulePath + "/" + dir
}

// narad reports whether importPath is a package of this module, and returns
// its directory relative to the root.
func (r *repository) narad(importPath string) (string, bool) {
	if importPath == r.modulePath {
		return ".", true
	}
	dir, found := strings.CutPrefix(importPath, r.modulePath+"/")
	return dir, found
}

// position returns file:line of a node's position.
func (r *repository) position(pos token.Pos) (string, int) {
	position := r.fileSet.Position(pos)
	return position.Filename, position.Line
}
