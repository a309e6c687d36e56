package lint

import (
	"cmp"
	"fmt"
	"slices"
)

// violation is one finding of one rule. Built by a rule, never changed.
type violation struct {
	// file is the slash-separated path relative to the module root.
	file string
	// line is the 1-based line the finding is about.
	line int
	// rule names the rule (see doc.go), so a reader can find it.
	rule string
	// message says what is wrong and what to do instead.
	message string
}

// String formats the violation as "file:line: [rule] message", which
// editors and terminals turn into a link to the line.
func (v violation) String() string {
	return fmt.Sprintf("%s:%d: [%s] %s", v.file, v.line, v.rule, v.message)
}

// sortViolations orders violations by file, line, rule and message, and
// drops exact duplicates (a rule run under several build configurations
// can find the same thing twice).
func sortViolations(violations []violation) []violation {
	slices.SortFunc(violations, func(a, b violation) int {
		return cmp.Or(cmp.Compare(a.file, b.file), cmp.Compare(a.line, b.line),
			cmp.Compare(a.rule, b.rule), cmp.Compare(a.message, b.message))
	})
	return slices.Compact(violations)
}
