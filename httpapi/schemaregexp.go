package httpapi

import (
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"sync/atomic"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The regular expressions of a schema (pattern, patternProperties, and
// the instances of format "regex" where formats are asserted) are Go
// regexps: matching is linear in the text, but with a factor of the
// compiled program's size, and a counted repetition expands into as many
// instructions as it counts ("[a-z]{1000}" is a thousand). One 11 KB
// pattern compiled to about a million instructions (41 MiB, over a
// second), and matching it against a 1 MiB string took a core for tens
// of seconds. So each regexp's size is estimated from its parse tree
// before it is compiled and bounded, the regexps of one schema are
// bounded together, and the work of matching one (the text's length
// times the program's size) is counted in the produce's validation work
// (schemawork.go).
const (
	// schemaRegexpInstsMax bounds the estimated instructions of one
	// regular expression of a schema (or of a payload string checked by
	// format "regex"): about 10 ms to compile and under a MiB of memory.
	schemaRegexpInstsMax = 10_000
	// schemaRegexpInstsTotalMax bounds the estimated instructions of all
	// the regular expressions of one schema together (a few MiB cached).
	schemaRegexpInstsTotalMax = 100_000
	// schemaBytesPerRegexpInst estimates the memory a compiled regexp
	// keeps per instruction (about 41 bytes measured, and the match
	// machines it pools), for the cache's byte bound.
	schemaBytesPerRegexpInst = 64
	// regexpStepsPerWork is how many (text byte, instruction) steps of a
	// match count as one unit of validation work (about a microsecond:
	// a match that keeps every instruction alive took about 32 ns a step).
	regexpStepsPerWork = 32
)

// schemaRegexp is a compiled regexp of a schema with its estimated
// size, which the validation work charges for each match.
type schemaRegexp struct {
	*regexp.Regexp
	insts int
}

// regexpWork is the validation work one match of re against a text of
// textBytes may cost: the text's length (plus one) times the program's
// size, the bound of Go's NFA, in units of regexpStepsPerWork.
func regexpWork(re jsonschema.Regexp, textBytes int) uint64 {
	insts := schemaRegexpInstsMax // a regexp compiled elsewhere: charged at the bound
	if bounded, ok := re.(*schemaRegexp); ok {
		insts = bounded.insts
	}
	return 1 + mulSaturating(uint64(textBytes)+1, uint64(insts))/regexpStepsPerWork
}

// newSchemaRegexpEngine returns the regexp engine of one compile: it
// refuses a regexp over schemaRegexpInstsMax, and while compiling (until
// compiled is set) the schema's regexps past schemaRegexpInstsTotalMax
// together. Used afterwards for format "regex" while validating, it
// applies the first bound only.
func newSchemaRegexpEngine(compiled *atomic.Bool) jsonschema.RegexpEngine {
	// Every compile counts, also a repeated expression (each is compiled
	// and kept apart). The compiler asks for each regexp of the schema
	// twice: its meta-schema checks it (format "regex"), then the
	// schema keeps it; hence the bound counted twice.
	var total atomic.Int64
	return func(expression string) (jsonschema.Regexp, error) {
		insts, err := regexpInsts(expression)
		if err != nil {
			return nil, err
		}
		if insts > schemaRegexpInstsMax {
			return nil, fmt.Errorf("regular expression too large: it would compile to about %d instructions, at most %d (a counted repetition {n} counts n times)", insts, schemaRegexpInstsMax)
		}
		if !compiled.Load() && total.Add(int64(insts)) > 2*schemaRegexpInstsTotalMax {
			return nil, fmt.Errorf("the regular expressions of the schema are too large together: at most %d instructions (a counted repetition {n} counts n times)", schemaRegexpInstsTotalMax)
		}
		re, err := regexp.Compile(expression)
		if err != nil {
			return nil, err
		}
		return &schemaRegexp{Regexp: re, insts: insts}, nil
	}
}

// regexpInsts parses expression as Go's regexp package does and
// estimates from its tree, before anything is expanded, an upper bound
// of the instructions of its compiled program.
func regexpInsts(expression string) (int, error) {
	tree, err := syntax.Parse(expression, syntax.Perl)
	if err != nil {
		return 0, err
	}
	return int(min(treeInsts(tree), math.MaxInt32)), nil
}

// treeInsts bounds the instructions of the program of re (saturating
// well above any bound; the parser limits the nesting to 1,000 levels).
func treeInsts(re *syntax.Regexp) uint64 {
	const saturated = 1 << 40
	var sub uint64
	for _, child := range re.Sub {
		sub = min(sub+treeInsts(child), saturated)
	}
	switch re.Op {
	case syntax.OpLiteral:
		return uint64(len(re.Rune)) + 1
	case syntax.OpRepeat:
		count := re.Max
		if count < re.Min {
			count = re.Min + 1 // {n,}: n copies and a star
		}
		return min(uint64(count+1)*(sub+1), saturated)
	}
	return sub + uint64(len(re.Sub)) + 2
}

// schemaRegexpBytes estimates the memory of the compiled regexps of the
// schemas of a graph, for the cache's byte bound.
func schemaRegexpBytes(schemas []*jsonschema.Schema) int64 {
	var insts int64
	add := func(re jsonschema.Regexp) {
		if bounded, ok := re.(*schemaRegexp); ok {
			insts += int64(bounded.insts)
		}
	}
	for _, s := range schemas {
		if s.Pattern != nil {
			add(s.Pattern)
		}
		for pattern := range s.PatternProperties {
			add(pattern)
		}
	}
	return insts * schemaBytesPerRegexpInst
}
