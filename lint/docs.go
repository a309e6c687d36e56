package lint

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"unicode"
)

// textFileBytesMax bounds the files the documentation rules read; larger
// files are data, not prose or code.
const textFileBytesMax = 4 << 20

// docReferencePattern matches a reference into the repository's docs
// directory, such as docs/architecture.md#moves, in any text file.
var docReferencePattern = regexp.MustCompile(`docs/([A-Za-z0-9_.-]+\.md)(#[A-Za-z0-9_-]*)?`)

// markdownLinkPattern matches the target of a Markdown link: [text](target).
var markdownLinkPattern = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// outsideDocuments are names of documents that live outside the
// repository: a clone cannot follow a reference to them. They are spelled
// in pieces so that this file does not name them itself.
var outsideDocuments = []string{
	"DESIGN" + ".md", "API" + ".md", "STYLE" + ".md", "SIMULATION" + ".md",
	"/work/" + "shared", "../" + "shared/",
}

// textFile is one text file of the repository, read for the
// documentation rules.
type textFile struct {
	// name is the slash-separated path relative to the root.
	name string
	// lines are the file's lines, without their line ends.
	lines []string
}

// checkDocumentation applies rule 5: every docs/<file>.md#<anchor>
// reference in any text file names an existing file and heading, every
// relative Markdown link resolves, and no file names a document that
// lives outside the repository.
func checkDocumentation(root string) ([]violation, error) {
	files, err := listTextFiles(root)
	if err != nil {
		return nil, err
	}
	headings := headingIndex{root: root, slugs: map[string]map[string]bool{}}
	var found []violation
	for _, file := range files {
		for index, line := range file.lines {
			found = append(found, checkLine(&headings, file, index+1, line)...)
		}
	}
	return sortViolations(found), nil
}

// checkLine applies the documentation rules to one line.
func checkLine(headings *headingIndex, file textFile, lineNumber int, line string) []violation {
	var found []violation
	report := func(rule, format string, args ...any) {
		found = append(found, violation{file: file.name, line: lineNumber, rule: rule, message: fmt.Sprintf(format, args...)})
	}
	for _, name := range outsideDocuments {
		if strings.Contains(line, name) {
			report("outside-document", "%q is not in the repository; point into docs/ instead (docs/<file>.md#<heading>)", name)
		}
	}
	for _, match := range docReferencePattern.FindAllStringSubmatch(line, -1) {
		if problem := headings.resolve("docs/"+match[1], strings.TrimPrefix(match[2], "#")); problem != "" {
			report("doc-reference", "%s: %s", match[0], problem)
		}
	}
	if strings.HasSuffix(file.name, ".md") {
		for _, match := range markdownLinkPattern.FindAllStringSubmatch(line, -1) {
			if problem := headings.resolveLink(file.name, match[1]); problem != "" {
				report("doc-link", "%s: %s", match[1], problem)
			}
		}
	}
	return found
}

// headingIndex caches the heading anchors of the Markdown files it was
// asked about.
type headingIndex struct {
	root string
	// slugs maps a slash-separated file name to its anchors; nil when the
	// file does not exist.
	slugs map[string]map[string]bool
}

// resolve returns "" when name exists and, if anchor is not empty, has a
// heading with that anchor; otherwise it says what is missing.
func (h *headingIndex) resolve(name, anchor string) string {
	slugs, known := h.slugs[name]
	if !known {
		slugs = readAnchors(filepath.Join(h.root, filepath.FromSlash(name)))
		h.slugs[name] = slugs
	}
	switch {
	case slugs == nil:
		return fmt.Sprintf("no file %s in the repository", name)
	case anchor != "" && !slugs[anchor]:
		return fmt.Sprintf("%s has no heading with the anchor #%s", name, anchor)
	}
	return ""
}

// resolveLink checks a Markdown link target of the file from, relative to
// its directory; links with a scheme (https:, mailto:) are not checked.
func (h *headingIndex) resolveLink(from, target string) string {
	if strings.Contains(target, ":") {
		return ""
	}
	file, anchor, _ := strings.Cut(target, "#")
	name := from
	if file != "" {
		name = path.Clean(path.Join(path.Dir(from), file))
	}
	if !strings.HasSuffix(name, ".md") {
		if _, err := os.Stat(filepath.Join(h.root, filepath.FromSlash(name))); err != nil {
			return fmt.Sprintf("no file or directory %s in the repository", name)
		}
		return ""
	}
	return h.resolve(name, anchor)
}

// readAnchors returns the anchors of the headings of a Markdown file, nil
// when it cannot be read.
func readAnchors(osPath string) map[string]bool {
	data, err := os.ReadFile(osPath)
	if err != nil {
		return nil
	}
	return headingAnchors(strings.Split(string(data), "\n"))
}

// headingAnchors returns the anchor of every ATX heading outside fenced
// code blocks, as GitHub renders them: a repeated heading gets -1, -2, …
func headingAnchors(lines []string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	fenced := false
	for _, line := range lines {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fenced = !fenced
			continue
		}
		text, ok := headingText(line)
		if fenced || !ok {
			continue
		}
		slug := headingSlug(text)
		if count := seen[slug]; count > 0 {
			anchors[fmt.Sprintf("%s-%d", slug, count)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// headingText returns the text of an ATX heading line ("## Moves").
func headingText(line string) (string, bool) {
	level := len(line) - len(strings.TrimLeft(line, "#"))
	if level == 0 || level > 6 || (len(line) > level && line[level] != ' ') {
		return "", false
	}
	text := strings.TrimSpace(line[level:])
	return strings.TrimSpace(strings.TrimRight(text, "#")), true
}

// headingSlug is GitHub's anchor of a heading: lower case, letters,
// digits, underscores, hyphens and spaces kept, spaces made hyphens.
func headingSlug(text string) string {
	var slug strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			slug.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
			slug.WriteRune(r)
		}
	}
	return slug.String()
}

// listTextFiles reads every text file of the repository: the directories
// the go command would walk, testdata included (a seed list is prose too),
// and no file holding a NUL byte or larger than textFileBytesMax.
func listTextFiles(root string) ([]textFile, error) {
	var files []textFile
	err := filepath.WalkDir(root, func(osPath string, entry fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entry.IsDir() {
			if entry.Name() == "testdata" {
				return nil
			}
			return skipDirectory(root, osPath, entry.Name())
		}
		file, ok, err := readTextFile(root, osPath, entry)
		if ok {
			files = append(files, file)
		}
		return err
	})
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	return files, err
}

// readTextFile reads one file; ok is false for a file that is not text.
func readTextFile(root, osPath string, entry fs.DirEntry) (textFile, bool, error) {
	info, err := entry.Info()
	if err != nil || !info.Mode().IsRegular() || info.Size() > textFileBytesMax {
		return textFile{}, false, err
	}
	data, err := os.ReadFile(osPath)
	if err != nil || bytes.IndexByte(data, 0) >= 0 {
		return textFile{}, false, err
	}
	rel, err := filepath.Rel(root, osPath)
	lines := strings.Split(strings.ReplaceAll(string(data), "\r\n", "\n"), "\n")
	return textFile{name: filepath.ToSlash(rel), lines: lines}, true, err
}
