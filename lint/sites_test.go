package lint

import "testing"

func TestCoreFaultSitesAreRegistryConstants(t *testing.T) {
	reportViolations(t, checkFaultSites(repositoryUnderTest(t)))
}

func faultSiteRule(_ *testing.T, repo *repository) []violation { return checkFaultSites(repo) }

// registryOfTwo is a chaos/sites.go declaring two sites.
const registryOfTwo = "package chaos\n\ntype Site string\n\nconst (\n\tSiteA Site = \"a\"\n\tSiteB Site = \"b\"\n)\n"

func TestFaultSiteRule(t *testing.T) {
	runRuleCases(t, []ruleCase{
		{name: "a literal and a conversion are refused in the core", files: map[string]string{
			"node/a.go": "package node\n\nimport \"narad/chaos\"\n\nfunc f() bool {\n\treturn chaos.Buggify(\"node-x\") ||\n\t\tchaos.Buggify(chaos.Site(\"node-y\"))\n}\n",
		}, want: []string{"node/a.go:6 [fault-site]", "node/a.go:7 [fault-site]"}},
		{name: "a registry constant passes, also through a variable, under any import name", files: map[string]string{
			"chaos/sites.go": registryOfTwo,
			"meta/a.go":      "package meta\n\nimport c \"narad/chaos\"\n\nfunc f() bool { return c.Buggify(c.SiteA) }\n",
			"node/b.go":      "package node\n\nimport \"narad/chaos\"\n\nvar site = chaos.SiteB\n\nfunc g() bool { return chaos.Buggify(site) }\n",
		}},
		{name: "a registered site no core code names is reported at its declaration", files: map[string]string{
			"chaos/sites.go": registryOfTwo,
			"node/a.go":      "package node\n\nimport \"narad/chaos\"\n\nfunc f() bool { return chaos.Buggify(chaos.SiteA) }\n",
			"sim/a.go":       "package sim\n\nimport \"narad/chaos\"\n\nvar named = chaos.SiteB\n\nfunc f() bool { return chaos.Buggify(\"sim-own\") }\n",
		}, want: []string{"chaos/sites.go:7 [fault-site]"}},
	}, faultSiteRule)
}
