package lint

import "testing"

func TestCoreCoverageMarksAreRegistryConstants(t *testing.T) {
	reportViolations(t, checkCoverageMarks(repositoryUnderTest(t)))
}

func coverageMarkRule(_ *testing.T, repo *repository) []violation { return checkCoverageMarks(repo) }

func TestCoverageMarkRule(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "a literal, a conversion and a variable are refused in the core", files: map[string]string{
			"node/a.go": "package node\n\nimport \"narad/chaos\"\n\nvar name = chaos.MarkNodeRedelivery\n\n" +
				"func f() {\n\tchaos.Reached(\"node-x\")\n\tchaos.Reached(chaos.Mark(\"node-y\"))\n\tchaos.Reached(name)\n}\n",
		}, want: []string{"node/a.go:8 [coverage-mark]", "node/a.go:9 [coverage-mark]", "node/a.go:10 [coverage-mark]"}},
		{name: "a registry constant passes, under any import name", files: map[string]string{
			"move/a.go": "package move\n\nimport c \"narad/chaos\"\n\nfunc f() { c.Reached(c.MarkMoveAbortPlanned) }\n",
		}},
		{name: "outside the core the simulator names its own marks", files: map[string]string{
			"sim/a.go": "package sim\n\nimport \"narad/chaos\"\n\nfunc f(phase string) { chaos.Reached(chaos.Mark(\"sim-\" + phase)) }\n",
		}},
	}, coverageMarkRule)
}
