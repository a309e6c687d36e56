package lint

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// eventKindPattern matches a node event raised with a literal kind, as
// node code raises them: observer.Event("kind", ...).
var eventKindPattern = regexp.MustCompile(`\.Event\("([a-z0-9-]+)"`)

// eventSourceDirs are the packages whose events reach the operator's log.
var eventSourceDirs = []string{"node", "host"}

// eventsDocument is where an operator looks an event up.
const eventsDocument = "docs/operations.md"

// checkEventsDocumented applies rule 8: every event kind the node or the
// host raises with a literal kind is named, in backquotes, in
// eventsDocument, so that an operator who reads one in a log finds it
// (an audit found 39 of 86 kinds documented).
func checkEventsDocumented(root string) ([]violation, error) {
	document, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(eventsDocument)))
	if err != nil {
		return nil, err
	}
	var found []violation
	for _, dir := range eventSourceDirs {
		names, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			return nil, err
		}
		sort.Strings(names)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			violations, err := undocumentedEvents(root, name, string(document))
			if err != nil {
				return nil, err
			}
			found = append(found, violations...)
		}
	}
	return sortViolations(found), nil
}

// undocumentedEvents reports the event kinds raised in one file that the
// document does not name.
func undocumentedEvents(root, name, document string) ([]violation, error) {
	source, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	relative, err := filepath.Rel(root, name)
	if err != nil {
		return nil, err
	}
	var found []violation
	for index, line := range strings.Split(string(source), "\n") {
		for _, match := range eventKindPattern.FindAllStringSubmatch(line, -1) {
			if !strings.Contains(document, "`"+match[1]+"`") {
				found = append(found, violation{file: filepath.ToSlash(relative), line: index + 1, rule: "event-documented",
					message: "the event " + match[1] + " is not named in " + eventsDocument + " (Node events): say what it means and its level there"})
			}
		}
	}
	return found, nil
}
