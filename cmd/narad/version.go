package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"narad/wire"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = ""

// revisionLength is how much of the VCS revision `narad version` shows.
const revisionLength = 12

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of this binary",
		Example: "  narad version",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			info, _ := debug.ReadBuildInfo()
			fmt.Fprintln(a.stdout, versionText(version, info))
			fmt.Fprintf(a.stdout, "node-to-node wire version %d (nodes of different wire versions refuse each other)\n", wire.Version)
			return nil
		},
	}
}

// versionText is "narad <version>" for a release build, else
// "narad dev (<revision>[+dirty])" from the build's VCS stamp.
func versionText(release string, info *debug.BuildInfo) string {
	if release != "" {
		return "narad " + release
	}
	return fmt.Sprintf("narad dev (%s)", vcsRevision(info))
}

func vcsRevision(info *debug.BuildInfo) string {
	revision, dirty := "", false
	if info != nil {
		for _, setting := range info.Settings {
			switch setting.Key {
			case "vcs.revision":
				revision = setting.Value
			case "vcs.modified":
				dirty = setting.Value == "true"
			}
		}
	}
	if revision == "" {
		return "unknown revision"
	}
	revision = revision[:min(len(revision), revisionLength)]
	if dirty {
		revision += "+dirty"
	}
	return revision
}
