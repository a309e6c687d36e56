package main

import (
	"crypto/x509"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"narad/client"
)

// serverDefault is the server when no flag, variable or context names one.
const serverDefault = "http://127.0.0.1:7942"

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "narad",
		Short: "Narad message broker: server and command-line client",
		Long: `narad runs the Narad message broker and talks to it over its HTTP API.

The server to talk to is chosen per field (server, user, password):
flags -s/-u/-p, then NARAD_ADDR / NARAD_USER / NARAD_PASS, then the selected
context (see "narad ctx"), then http://127.0.0.1:7942 without credentials.

Exit status: 0 on success; 1 when the server refused the request or could
not be reached (the message, on stderr, is the server's); 2 for a usage
error (a missing or malformed argument or flag, a file that cannot be
opened) or an invalid server configuration.`,
		Example: `  narad server start --dev          # a local broker, no auth
  narad topic add orders
  narad pub orders '{"id": 1}'
  narad sub orders`,
		Args:          subcommandArgs,
		RunE:          showHelp,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	flags := root.PersistentFlags()
	flags.StringVarP(&a.serverFlag, "server", "s", "", "server URL (default: NARAD_ADDR, the selected context, or "+serverDefault+")")
	flags.StringVarP(&a.userFlag, "user", "u", "", "Basic auth user (default: NARAD_USER or the context's)")
	flags.StringVarP(&a.passwordFlag, "password", "p", "", "Basic auth password (default: NARAD_PASS or the context's)")
	flags.StringVar(&a.caFileFlag, "ca-file", "", "PEM file of the CA that signed an https:// server's certificate (default: the system's)")
	root.AddCommand(newTopicCommand(a), newPubCommand(a), newSubCommand(a), newReplayCommand(a),
		newBenchCommand(a), newContextCommand(a), newClusterCommand(a), newUserCommand(a), newVersionCommand(a),
		newServeCommand(a), newServerCommand(a), newCeilingServerCommand(a))
	return root
}

// showHelp is the RunE of commands that only group others.
func showHelp(cmd *cobra.Command, _ []string) error {
	return cmd.Help()
}

// newGroupCommand returns a command that only holds subcommands; an unknown
// subcommand is a usage error that suggests the nearest names.
func newGroupCommand(use, short string, children ...*cobra.Command) *cobra.Command {
	group := &cobra.Command{Use: use, Short: short, Args: subcommandArgs, RunE: showHelp}
	for _, child := range children {
		child.SuggestFor = append(child.SuggestFor, synonyms[child.Name()]...)
	}
	group.AddCommand(children...)
	return group
}

// synonyms maps a subcommand's name to the words other tools use for it,
// which an unknown subcommand's error suggests it for ("topic list": did
// you mean ls?). They are suggestions, not aliases: each command keeps
// one name, as scripts and docs spell it.
var synonyms = map[string][]string{
	"add":  {"create", "new", "make"},
	"ls":   {"list", "dir", "all"},
	"info": {"describe", "show", "get", "status", "inspect"},
	"edit": {"alter", "update", "set", "change", "modify"},
	"rm":   {"delete", "remove", "del", "drop", "destroy"},
}

// subcommandArgs is the Args of a command that only holds subcommands: an
// argument is a subcommand it does not have, a usage error that names the
// subcommands spelled nearest to it (or those it is a synonym of).
func subcommandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	err := fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = suggestionDistanceMax
	}
	suggestions := slices.Compact(cmd.SuggestionsFor(args[0]))
	if len(suggestions) == 0 {
		return usageError{err}
	}
	return usageError{fmt.Errorf("%w; did you mean %s?", err, strings.Join(suggestions, " or "))}
}

// suggestionDistanceMax is the largest edit distance between an unknown
// subcommand and a name it suggests.
const suggestionDistanceMax = 2

// connection is where and as whom the client connects.
type connection struct {
	server   string
	user     string
	password string
	// caFile is the PEM file of the CAs to trust ("": the system's).
	caFile string
}

// resolveConnection applies the precedence of docs/api.md#cli to each field:
// flag > NARAD_ADDR / NARAD_USER / NARAD_PASS > selected context > default.
// The selected context's user and password go only to the context's own
// server: named another (-s, NARAD_ADDR), the CLI would hand a saved
// password, production's admin say, to whatever listens there. The CA
// file is --ca-file's, else the selected context's for its own server. A
// server that is no http(s):// URL with a host (-s "") is a usage error,
// found before any request.
func (a *app) resolveConnection(cmd *cobra.Command) (connection, error) {
	flags := cmd.Flags()
	contexts, err := a.loadContexts()
	switch {
	case err != nil && (flags.Changed("server") || a.getenv("NARAD_ADDR") != ""):
		// the server is named without the contexts: a broken file holds
		// up no command that needs nothing of it
		fmt.Fprintf(a.stderr, "narad: ignoring the contexts file: %v (fix it, or remove it with its contexts)\n", err)
		contexts = contextsFile{}
	case err != nil:
		return connection{}, usagef("%w (fix it, or remove it with its contexts; or name the server with -s or NARAD_ADDR)", err)
	}
	selected := contexts.Contexts[contexts.Current]
	server := pick(flags.Changed("server"), a.serverFlag, a.getenv("NARAD_ADDR"), selected.Server, serverDefault)
	if err := checkServerURL(serverSource(flags.Changed("server"), a.getenv("NARAD_ADDR"), contexts.Current), server); err != nil {
		return connection{}, err
	}
	contextUser, contextPassword, contextCAFile := selected.User, selected.Password, selected.CAFile
	if !sameServer(server, selected.Server) {
		contextUser, contextPassword, contextCAFile = "", "", ""
	}
	return connection{
		server:   server,
		user:     pick(flags.Changed("user"), a.userFlag, a.getenv("NARAD_USER"), contextUser, ""),
		password: pick(flags.Changed("password"), a.passwordFlag, a.getenv("NARAD_PASS"), contextPassword, ""),
		caFile:   pick(flags.Changed("ca-file"), a.caFileFlag, "", contextCAFile, ""),
	}, nil
}

// serverSource names where pick took the server from, for an error about
// it (the default is never wrong).
func serverSource(flagGiven bool, envValue, contextName string) string {
	switch {
	case flagGiven:
		return "--server"
	case envValue != "":
		return "NARAD_ADDR"
	}
	return fmt.Sprintf("context %q's server", contextName)
}

// sameServer reports whether two server URLs name the same server, a
// trailing slash aside.
func sameServer(a, b string) bool {
	return strings.TrimRight(a, "/") == strings.TrimRight(b, "/")
}

// pick returns the flag value if the flag was given, else the first
// non-empty of the environment value, the context value and the default.
func pick(flagGiven bool, flagValue, envValue, contextValue, defaultValue string) string {
	if flagGiven {
		return flagValue
	}
	for _, value := range []string{envValue, contextValue} {
		if value != "" {
			return value
		}
	}
	return defaultValue
}

// newClient returns a client for the resolved connection.
func (a *app) newClient(cmd *cobra.Command, options ...client.Option) (*client.Client, error) {
	target, err := a.resolveConnection(cmd)
	if err != nil {
		return nil, err
	}
	options = append([]client.Option{client.WithBasicAuth(target.user, target.password)}, options...)
	if target.caFile != "" {
		pool, err := loadCAFile(target.caFile)
		if err != nil && !cmd.Flags().Changed("ca-file") {
			return nil, usagef("the CA file saved with the selected context (give --ca-file, or narad ctx add it again): %w", err)
		}
		if err != nil {
			return nil, usagef("--ca-file: %w", err)
		}
		options = append(options, client.WithRootCAs(pool))
	}
	return client.New(target.server, options...), nil
}

// loadCAFile reads the CAs of a PEM file (for a server whose certificate
// the system does not know).
func loadCAFile(caFile string) (*x509.CertPool, error) {
	data, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
	}
	return pool, nil
}
