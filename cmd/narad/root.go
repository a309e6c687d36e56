package main

import (
	"crypto/x509"
	"fmt"
	"os"
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
context (see "narad ctx"), then http://127.0.0.1:7942 without credentials.`,
		Example: `  narad server start --dev          # a local broker, no auth
  narad topic add orders
  narad pub orders '{"id": 1}'
  narad sub orders`,
		Args:          usageArgs(cobra.NoArgs),
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
// subcommand is a usage error.
func newGroupCommand(use, short string, children ...*cobra.Command) *cobra.Command {
	group := &cobra.Command{Use: use, Short: short, Args: usageArgs(cobra.NoArgs), RunE: showHelp}
	group.AddCommand(children...)
	return group
}

// connection is where and as whom the client connects.
type connection struct {
	server   string
	user     string
	password string
}

// resolveConnection applies the precedence of docs/api.md#cli to each field:
// flag > NARAD_ADDR / NARAD_USER / NARAD_PASS > selected context > default.
// The selected context's user and password go only to the context's own
// server: named another (-s, NARAD_ADDR), the CLI would hand a saved
// password, production's admin say, to whatever listens there.
func (a *app) resolveConnection(cmd *cobra.Command) (connection, error) {
	contexts, err := a.loadContexts()
	if err != nil {
		return connection{}, err
	}
	selected := contexts.Contexts[contexts.Current]
	flags := cmd.Flags()
	server := pick(flags.Changed("server"), a.serverFlag, a.getenv("NARAD_ADDR"), selected.Server, serverDefault)
	contextUser, contextPassword := selected.User, selected.Password
	if !sameServer(server, selected.Server) {
		contextUser, contextPassword = "", ""
	}
	return connection{
		server:   server,
		user:     pick(flags.Changed("user"), a.userFlag, a.getenv("NARAD_USER"), contextUser, ""),
		password: pick(flags.Changed("password"), a.passwordFlag, a.getenv("NARAD_PASS"), contextPassword, ""),
	}, nil
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
	if a.caFileFlag != "" {
		pool, err := loadCAFile(a.caFileFlag)
		if err != nil {
			return nil, err
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
		return nil, fmt.Errorf("--ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("--ca-file %s holds no PEM certificate", caFile)
	}
	return pool, nil
}
