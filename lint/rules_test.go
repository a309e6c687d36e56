package lint

// Tests of the rules themselves: each case writes a small module to a
// temporary directory and checks exactly which file:line and rule the
// linter reports.

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// ruleCase is one snippet module and the findings it must produce.
type ruleCase struct {
	name string
	// files maps slash-separated paths to their content.
	files map[string]string
	// want lists "file:line [rule]" findings, sorted; nil for none.
	want []string
}

// writeModule writes files into a fresh module named narad and parses it.
func writeModule(t *testing.T, files map[string]string) *repository {
	t.Helper()
	root := t.TempDir()
	files["go.mod"] = "module narad\n\ngo 1.26\n"
	for name, content := range files {
		osPath := filepath.Join(root, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(osPath), 0o755))
		require.NoError(t, os.WriteFile(osPath, []byte(content), 0o644))
	}
	repo, err := loadRepository(root)
	require.NoError(t, err)
	return repo
}

// findings reduces violations to "file:line [rule]", the part the cases
// pin down; messages are checked separately where they matter.
func findings(violations []violation) []string {
	var result []string
	for _, v := range violations {
		result = append(result, fmt.Sprintf("%s:%d [%s]", v.file, v.line, v.rule))
	}
	return result
}

// runRuleCases runs a rule over each case's module.
func runRuleCases(t *testing.T, cases []ruleCase, rule func(*testing.T, *repository) []violation) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			repo := writeModule(t, c.files)
			require.Empty(t, repo.parseErrors)
			violations := rule(t, repo)
			require.Equal(t, c.want, findings(violations), "violations:\n%s", joinViolations(violations))
		})
	}
}

// joinViolations formats violations one per line for failure messages.
func joinViolations(violations []violation) string {
	lines := make([]string, len(violations))
	for i, v := range violations {
		lines[i] = v.String()
	}
	return strings.Join(lines, "\n")
}

func determinismRule(_ *testing.T, repo *repository) []violation { return checkDeterminism(repo) }

func TestDeterminismRuleClock(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "time.Now in a comment or a string is fine", files: map[string]string{"node/a.go": `package node

import "time"

// Tick is called instead of time.Now(); never time.Sleep(x).
func Tick() (string, time.Duration) { return "time.Now()", time.Millisecond }
`}},
		{name: "renamed import tm.Now is flagged", files: map[string]string{"node/a.go": `package node

import tm "time"

func Now() tm.Time { return tm.Now() }
`}, want: []string{"node/a.go:5 [clock]"}},
		{name: "every clock and timer function is flagged, called or as a value", files: map[string]string{"meta/a.go": `package meta

import (
	"context"
	"time"
)

var clock = time.Now

func f(ctx context.Context) {
	time.Sleep(time.Second)
	<-time.After(time.Second)
	time.AfterFunc(time.Second, nil)
	time.NewTimer(time.Second)
	time.NewTicker(time.Second)
	time.Tick(time.Second)
	_ = time.Since(time.Time{}) + time.Until(time.Time{})
	context.WithTimeout(ctx, time.Second)
}
`}, want: []string{"meta/a.go:8 [clock]", "meta/a.go:11 [clock]", "meta/a.go:12 [clock]", "meta/a.go:13 [clock]",
			"meta/a.go:14 [clock]", "meta/a.go:15 [clock]", "meta/a.go:16 [clock]", "meta/a.go:17 [clock]",
			"meta/a.go:17 [clock]", "meta/a.go:18 [clock]"}},
		{name: "a local variable shadowing the package is not the clock", files: map[string]string{"rebalance/a.go": `package rebalance

import "time"

type fakeClock struct{}

func (fakeClock) Now() int { return 0 }

func f() (int, time.Duration) {
	time := fakeClock{}
	return time.Now(), 0
}
`}},
		{name: "dot import of time is flagged", files: map[string]string{"storage/a.go": `package storage

import . "time"

var D = Second
`}, want: []string{"storage/a.go:3 [dot-import]"}},
		{name: "tests and packages outside the core may read the clock", files: map[string]string{
			"node/a_test.go": "package node\n\nimport \"time\"\n\nvar start = time.Now()\n",
			"host/a.go":      "package host\n\nimport \"time\"\n\nvar start = time.Now()\n",
			"node/sub/b.go":  "package sub\n\nimport \"time\"\n\nvar start = time.Now()\n",
		}, want: []string{"node/sub/b.go:5 [clock]"}},
	}, determinismRule)
}

func TestDeterminismRuleGoroutinesAndRandomness(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "go statement is flagged", files: map[string]string{"node/a.go": `package node

func f() {
	go func() {}()
}
`}, want: []string{"node/a.go:4 [go-statement]"}},
		{name: "a seeded generator is fine", files: map[string]string{"node/a.go": `package node

import "math/rand/v2"

func New(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 2)) }

func draw(random *rand.Rand) int { return random.IntN(3) }
`}},
		{name: "global randomness of math/rand/v2 is flagged", files: map[string]string{"node/a.go": `package node

import "math/rand/v2"

func draw() int { return rand.IntN(3) }

var n = rand.N[int]
`}, want: []string{"node/a.go:5 [global-rand]", "node/a.go:7 [global-rand]"}},
		{name: "global randomness of math/rand is flagged, its types are fine", files: map[string]string{"rebalance/a.go": `package rebalance

import mathrand "math/rand"

func shuffle(r *mathrand.Rand, s mathrand.Source) []int {
	mathrand.Seed(1)
	return mathrand.Perm(3)
}
`}, want: []string{"rebalance/a.go:6 [global-rand]", "rebalance/a.go:7 [global-rand]"}},
		{name: "importing crypto/rand is flagged", files: map[string]string{"meta/a.go": `package meta

import _ "crypto/rand"
`}, want: []string{"meta/a.go:3 [crypto-rand]"}},
	}, determinismRule)
}

func TestDeterminismRuleOperatingSystem(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "os and syscall only in storage/osfs.go", files: map[string]string{
			"storage/osfs.go": "package storage\n\nimport (\n\t\"os\"\n\t\"syscall\"\n)\n\nvar _, _ = os.Stat, syscall.EIO\n",
			"storage/log.go":  "package storage\n\nimport \"os\"\n\nvar _ = os.Stat\n",
			"node/a.go":       "package node\n\nimport (\n\t\"net\"\n\t\"syscall\"\n)\n\nvar _, _ = net.Dial, syscall.EIO\n",
			"storage/sync.go": "package storage\n\nimport \"golang.org/x/sys/unix\"\n\nvar _ = unix.Syncfs\n",
		}, want: []string{"node/a.go:4 [os-import]", "node/a.go:5 [os-import]", "storage/log.go:3 [os-import]", "storage/sync.go:3 [os-import]"}},
		{name: "os/exec and net are not allowed even in storage/osfs.go", files: map[string]string{
			"storage/osfs.go": "package storage\n\nimport (\n\t\"net\"\n\t\"os/exec\"\n)\n\nvar _, _ = exec.Command, net.Dial\n",
		}, want: []string{"storage/osfs.go:4 [os-import]", "storage/osfs.go:5 [os-import]"}},
		{name: "io/ioutil and filepath.Walk are back doors to the os", files: map[string]string{"storage/a.go": `package storage

import (
	"io/ioutil"
	fp "path/filepath"
)

func f() {
	ioutil.ReadFile("x")
	fp.WalkDir("x", nil)
	_ = fp.Join("a", "b")
}
`}, want: []string{"storage/a.go:9 [os-backdoor]", "storage/a.go:10 [os-backdoor]"}},
	}, determinismRule)
}

func TestDeterminismRuleSimulator(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "the simulator is checked like the core", files: map[string]string{"sim/a.go": `package sim

import (
	"math/rand/v2"
	"time"
)

func f() int {
	go f()
	_ = time.Now()
	return rand.IntN(3)
}
`}, want: []string{"sim/a.go:9 [go-statement]", "sim/a.go:10 [clock]", "sim/a.go:11 [global-rand]"}},
		{name: "in the simulator an exemption with a reason is accepted, without one it is not", files: map[string]string{"sim/a.go": `package sim

import (
	"os"
	cryptorand "crypto/rand" //determinism:ok pins the reader to the seed
	"time"
)

func f() {
	_ = time.Now() //determinism:ok reported only
	//determinism:ok reported only
	_ = time.Now()
	_ = time.Now() //determinism:ok
	_, _ = cryptorand.Reader, os.Args
}
`}, want: []string{"sim/a.go:4 [os-import]", "sim/a.go:13 [clock]"}},
		{name: "the core takes no exemption from rule 1, and the simulator's tests are not checked", files: map[string]string{
			"node/a.go":     "package node\n\nimport \"time\"\n\nvar start = time.Now() //determinism:ok reported only\n",
			"sim/a_test.go": "package sim\n\nimport \"time\"\n\nvar start = time.Now()\n",
		}, want: []string{"node/a.go:5 [clock]"}},
	}, determinismRule)
}

func TestDeterminismMessageNamesTheRule(t *testing.T) {
	repo := writeModule(t, map[string]string{"node/a.go": "package node\n\nimport tm \"time\"\n\nvar start = tm.Now()\n"})
	violations := checkDeterminism(repo)
	require.Len(t, violations, 1)
	require.Equal(t, "node/a.go:5: [clock] time.Now in the core reads the wall clock or starts a timer: "+
		"time arrives as Tick input, deadlines are fields", violations[0].String())
}

func mapRangeRule(t *testing.T, repo *repository) []violation {
	violations, err := checkMapRanges(repo)
	require.NoError(t, err)
	return violations
}

func TestMapRangeRuleFlagsMapOrder(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "range over a map is flagged, over a slice is not", files: map[string]string{"node/a.go": `package node

type table map[string]int

func f(m table, s []int) (keys []string) {
	for key := range m {
		keys = append(keys, key)
	}
	for _, value := range map[int]int{} {
		_ = value
	}
	for range s {
	}
	for range m {
	}
	return keys
}
`}, want: []string{"node/a.go:6 [map-range]", "node/a.go:9 [map-range]"}},
		{name: "an exemption with a reason on the line or the line above is accepted", files: map[string]string{"meta/a.go": `package meta

func sum(m map[string]int) (total int) {
	//determinism:ok only sums
	for _, value := range m {
		total += value
	}
	for _, value := range m { //determinism:ok only sums
		total += value
	}
	//determinism:ok only sums

	for _, value := range m {
		total += value
	}
	//determinism:ok
	for _, value := range m {
		total += value
	}
	return total
}
`}, want: []string{"meta/a.go:13 [map-range]", "meta/a.go:17 [map-range]"}},
		{name: "maps iterators are flagged, sorted keys are not", files: map[string]string{"rebalance/a.go": `package rebalance

import (
	"maps"
	"slices"
)

func f(m map[string]int) {
	for key := range maps.Keys(m) {
		_ = key
	}
	for key, value := range maps.All(m) {
		_, _ = key, value
	}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		_ = key
	}
}
`}, want: []string{"rebalance/a.go:9 [map-range]", "rebalance/a.go:12 [map-range]"}},
		{name: "a type parameter constrained to maps is flagged", files: map[string]string{"storage/a.go": `package storage

func keys[M ~map[K]V, K comparable, V any](m M) (result []K) {
	for key := range m {
		result = append(result, key)
	}
	return result
}
`}, want: []string{"storage/a.go:4 [map-range]"}},
	}, mapRangeRule)
}

func TestMapRangeRuleScope(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "outside the core and in tests, map ranges are not checked", files: map[string]string{
			"host/a.go":      "package host\n\nfunc f(m map[int]int) {\n\tfor k := range m {\n\t\t_ = k\n\t}\n}\n",
			"node/a_test.go": "package node\n\nfunc f(m map[int]int) {\n\tfor k := range m {\n\t\t_ = k\n\t}\n}\n",
		}},
		{name: "files behind a custom build tag are checked too", files: map[string]string{
			"node/a.go": "package node\n\nvar m = map[int]int{}\n",
			"node/invariants.go": "//go:build invariants\n\npackage node\n\n" +
				"func check() {\n\tfor k := range m {\n\t\t_ = k\n\t}\n}\n",
		}, want: []string{"node/invariants.go:6 [map-range]"}},
		{name: "the simulator's map ranges are checked like the core's", files: map[string]string{
			"sim/a.go": "package sim\n\nfunc f(m map[int]int) {\n\tfor k := range m {\n\t\t_ = k\n\t}\n}\n",
		}, want: []string{"sim/a.go:4 [map-range]"}},
		{name: "a core package that does not type-check is reported", files: map[string]string{
			"node/a.go": "package node\n\nvar x int = \"not an int\"\n",
		}, want: []string{"node/a.go:1 [typecheck]"}},
	}, mapRangeRule)
}

func TestMapRangeSeesNaradImports(t *testing.T) {
	repo := writeModule(t, map[string]string{
		"storage/index.go": "package storage\n\ntype Index map[string]int64\n",
		"node/a.go": "package node\n\nimport \"narad/storage\"\n\n" +
			"func f(index storage.Index) {\n\tfor name := range index {\n\t\t_ = name\n\t}\n}\n",
	})
	require.Equal(t, []string{"node/a.go:6 [map-range]"}, findings(mapRangeRule(t, repo)))
}

func TestBuildConfigurationsFindCustomTags(t *testing.T) {
	repo := writeModule(t, map[string]string{
		"node/a.go":       "//go:build (invariants || chaos) && linux && !go1.30\n\npackage node\n",
		"meta/a.go":       "//go:build amd64\n\npackage meta\n",
		"node/b.go":       "package node\n",
		"host/a.go":       "//go:build soaktag\n\npackage host\n",
		"rebalance/go.go": "//go:build ignore\n\npackage main\n",
	})
	configurations := buildConfigurations(deterministicPackages(repo))
	require.Equal(t, map[string][]string{
		"":                 {"meta", "node", "rebalance"},
		"chaos":            {"node"},
		"invariants":       {"node"},
		"chaos,invariants": {"node"},
	}, configurations)
}

func importGraphRule(_ *testing.T, repo *repository) []violation { return checkImportGraph(repo) }

func TestImportGraphRule(t *testing.T) {
	imports := func(dir string, paths ...string) string {
		lines := []string{"package " + filepath.Base(dir), "", "import ("}
		for _, importPath := range paths {
			lines = append(lines, "\t_ \""+importPath+"\"")
		}
		return strings.Join(append(lines, ")"), "\n") + "\n"
	}
	runRuleCases(t, []ruleCase{
		{name: "storage imports only chaos, invariant and itself", files: map[string]string{
			"storage/a.go":       imports("storage", "narad/chaos", "narad/storage/memfs", "narad/node", "narad/soak", "fmt", "narad/invariant"),
			"storage/memfs/a.go": imports("memfs", "narad/meta"),
		}, want: []string{"storage/a.go:6 [import-graph]", "storage/a.go:7 [import-graph]", "storage/memfs/a.go:4 [import-graph]"}},
		{name: "node imports down, never the harnesses", files: map[string]string{
			"node/a.go": imports("node", "narad/meta", "narad/rebalance", "narad/storage", "narad/chaos",
				"narad/sim", "narad/fuzz", "narad/host", "narad/httpapi", "narad/cmd/narad", "narad/soak", "narad/client", "narad/lint"),
		}, want: []string{"node/a.go:8 [import-graph]", "node/a.go:9 [import-graph]", "node/a.go:10 [import-graph]",
			"node/a.go:11 [import-graph]", "node/a.go:12 [import-graph]", "node/a.go:13 [import-graph]",
			"node/a.go:14 [import-graph]", "node/a.go:15 [import-graph]"}},
		{name: "msg imports no package of this module", files: map[string]string{
			"msg/a.go":     imports("msg", "narad/node", "narad/storage", "fmt", "go.etcd.io/raft/v3/raftpb", "narad/msg/sub"),
			"msg/sub/a.go": imports("sub", "narad/meta"),
			"node/a.go":    imports("node", "narad/msg"),
			"wire/a.go":    imports("wire", "narad/msg"),
		}, want: []string{"msg/a.go:4 [import-graph]", "msg/a.go:5 [import-graph]", "msg/sub/a.go:4 [import-graph]"}},
		{name: "meta and rebalance never import node", files: map[string]string{
			"meta/a.go":      imports("meta", "narad/node", "narad/storage"),
			"rebalance/a.go": imports("rebalance", "narad/node/lease", "narad/meta"),
		}, want: []string{"meta/a.go:4 [import-graph]", "rebalance/a.go:4 [import-graph]"}},
		{name: "no sub-package of node imports node", files: map[string]string{
			"node/a.go":            imports("node", "narad/node/lease", "narad/node/route"),
			"node/route/a.go":      imports("route", "narad/node", "narad/invariant"),
			"node/movedest/a.go":   imports("movedest", "narad/node/route"),
			"node/lease/a_test.go": imports("lease", "narad/node"),
		}, want: []string{"node/route/a.go:4 [import-graph]"}},
		{name: "the assertion helper imports no narad package", files: map[string]string{
			"invariant/a.go":      imports("invariant", "fmt", "narad/chaos", "narad/invariant/inner"),
			"invariant/a_test.go": imports("invariant", "narad/node"),
		}, want: []string{"invariant/a.go:5 [import-graph]"}},
		{name: "only tests import sim and fuzz, nobody imports cmd", files: map[string]string{
			"httpapi/a.go":      imports("httpapi", "narad/node", "narad/fuzz"),
			"host/a.go":         imports("host", "narad/cmd/narad/config", "narad/sim"),
			"node/a_test.go":    imports("node", "narad/sim"),
			"sim/a.go":          imports("sim", "narad/sim/network", "narad/node"),
			"cmd/narad/main.go": imports("main", "narad/cmd/narad/config", "narad/httpapi", "narad/host"),
		}, want: []string{"host/a.go:4 [import-graph]", "host/a.go:5 [import-graph]", "httpapi/a.go:5 [import-graph]"}},
	}, importGraphRule)
}

// longFunction returns a function whose body is exactly bodyLines long.
func longFunction(name string, bodyLines int) string {
	return "func " + name + "() {\n" + strings.Repeat("\t_ = 0\n", bodyLines) + "}\n"
}

func TestFunctionLengthRule(t *testing.T) {
	limit := functionBodyLinesMax
	repo := writeModule(t, map[string]string{
		"host/a.go":         "package host\n\n" + longFunction("atLimit", limit) + longFunction("overLimit", limit+1),
		"host/b.go":         "package host\n\ntype T struct{}\n\nfunc (*T) Method() {\n" + strings.Repeat("\t_ = 0\n", limit+5) + "}\n",
		"host/c.go":         "package host\n\nvar handler = func() {\n" + strings.Repeat("\t_ = 0\n", limit+2) + "}\n",
		"host/a_test.go":    "package host\n\n" + longFunction("longTest", limit+30),
		"host/generated.go": "// Code generated by a tool. DO NOT EDIT.\n\npackage host\n\n" + longFunction("generated", limit+30),
	})
	violations := checkFunctionLength(repo, map[string]int{})
	require.Equal(t, []string{"host/a.go:75 [function-length]", "host/b.go:5 [function-length]", "host/c.go:3 [function-length]"},
		findings(violations))
	require.Contains(t, violations[0].message, "host/a.go:overLimit is 71 lines long, over the limit of 70")
	require.Contains(t, violations[1].message, "host/b.go:(*T).Method is 75 lines long")
	require.Contains(t, violations[2].message, "host/c.go:handler is 72 lines long")
}

func TestFunctionLengthRatchetOnlyTightens(t *testing.T) {
	limit := functionBodyLinesMax
	repo := writeModule(t, map[string]string{
		"host/a.go": "package host\n\n" + longFunction("kept", limit+10) + longFunction("grown", limit+10) +
			longFunction("shrunk", limit+5) + longFunction("fixed", limit),
	})
	violations := checkFunctionLength(repo, map[string]int{
		"host/a.go:kept":   limit + 10,
		"host/a.go:grown":  limit + 9,
		"host/a.go:shrunk": limit + 6,
		"host/a.go:fixed":  limit + 1,
		"host/a.go:gone":   limit + 1,
	})
	messages := make([]string, len(violations))
	for i, v := range violations {
		messages[i] = v.message
	}
	require.Equal(t, []string{
		"host/a.go:grown is 80 lines long and grew past its grandfathered 79: the ratchet only goes down; split it",
		"grandfathered function host/a.go:fixed is now 70 lines, within the limit: remove its entry",
		"grandfathered function host/a.go:gone no longer exists: remove its entry",
		"grandfathered function host/a.go:shrunk shrank to 75 lines: lower its entry from 76 to 75",
	}, messages)
}
