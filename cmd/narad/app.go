package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"narad/client"
	"narad/config"
)

// Exit codes of the process.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// app is everything a command may touch outside its arguments. main builds
// it from the process; tests build one with buffers and a fake environment.
// All fields are set before the command runs and only read afterwards,
// except the global flag values, which cobra writes while parsing.
type app struct {
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// getenv reads environment variables (NARAD_*, NO_COLOR); environ
	// lists them all (nil: none to check, as in most tests).
	getenv  func(string) string
	environ func() []string
	// stdinIsTerminal allows interactive prompts; stdoutIsTerminal allows
	// ANSI styling (unless NO_COLOR is set).
	stdinIsTerminal  bool
	stdoutIsTerminal bool
	// location is the time zone message times are shown in.
	location *time.Location
	// userConfigDir and userHomeDir locate the contexts file and the dev
	// data directory (os.UserConfigDir and os.UserHomeDir in production).
	userConfigDir func() (string, error)
	userHomeDir   func() (string, error)
	// selfCommand is how the user runs this executable from the working
	// directory ("narad" on PATH, else a path: commandName), for the
	// commands a banner suggests; nil: "narad".
	selfCommand func() string
	// runHost starts the server and blocks until ctx ends.
	runHost func(ctx context.Context, cfg config.Config, logger *slog.Logger, started func()) error
	// startCeiling, when set, starts the server bench --ceiling measures
	// and returns its URL and how to stop it; nil starts this executable's
	// hidden ceiling command as a child process.
	startCeiling func() (string, func() error, error)
	// progressTicks, when set, is where long operations take the ticks at
	// which they print their progress; nil ticks every progressInterval.
	progressTicks <-chan time.Time
	// drainPollEvery, when positive, replaces drainPollInterval.
	drainPollEvery time.Duration

	// Global flag values, written by cobra during parsing.
	serverFlag   string
	userFlag     string
	passwordFlag string
	caFileFlag   string
}

// newProcessApp returns the app of the real process.
func newProcessApp() *app {
	return &app{
		stdin:            os.Stdin,
		stdout:           os.Stdout,
		stderr:           os.Stderr,
		getenv:           os.Getenv,
		environ:          os.Environ,
		stdinIsTerminal:  term.IsTerminal(int(os.Stdin.Fd())),
		stdoutIsTerminal: term.IsTerminal(int(os.Stdout.Fd())),
		location:         time.Local,
		userConfigDir:    os.UserConfigDir,
		userHomeDir:      os.UserHomeDir,
		runHost:          runHost,
		selfCommand: func() string {
			executable, err := os.Executable()
			if err != nil {
				return "narad"
			}
			return commandName(executable)
		},
	}
}

// usageError is a mistake in how the command was called: it prints the
// command's usage and exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usageError with a formatted message.
func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

// exitCodeError ends the process with a chosen code after printing its
// message (if any); used by serve for an invalid configuration.
type exitCodeError struct {
	code    int
	message string
}

func (e exitCodeError) Error() string { return e.message }

// usageArgs wraps a positional-argument check so its failure is a usage
// error.
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// run executes the command line and returns the exit code.
func run(ctx context.Context, a *app, args []string) int {
	root := newRootCommand(a)
	root.SetArgs(args)
	command, err := root.ExecuteContextC(ctx)
	return a.report(command, err)
}

// report prints err the way docs/api.md#cli says and picks the exit code.
func (a *app) report(command *cobra.Command, err error) int {
	var usage usageError
	var replyError *client.Error
	var exitCode exitCodeError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &exitCode):
		if exitCode.message != "" {
			fmt.Fprintln(a.stderr, exitCode.message)
		}
		return exitCode.code
	case errors.As(err, &usage):
		fmt.Fprintf(a.stderr, "narad: %v\n", usage.err)
		if command != nil {
			fmt.Fprint(a.stderr, command.UsageString())
		}
		return exitUsage
	case errors.As(err, &replyError):
		fmt.Fprintf(a.stderr, "narad: %v\n", err) // with what wraps the reply's error, if anything
		if replyError.Status == http.StatusUnauthorized && command != nil {
			fmt.Fprintf(a.stderr, "narad: %s\n", a.unauthenticatedHint(command))
		}
		return exitError
	default:
		fmt.Fprintf(a.stderr, "narad: %v\n", err)
		return exitError
	}
}

// unauthenticatedHint says, after a 401, which credentials went and how
// to give others. The server's "authentication required" says neither,
// and a context's saved credentials are silently left out for a server
// named by -s or NARAD_ADDR (docs/api.md#cli).
func (a *app) unauthenticatedHint(command *cobra.Command) string {
	const how = "give -u and -p, NARAD_USER and NARAD_PASS, or a context (narad ctx add)"
	target, err := a.resolveConnection(command)
	if err != nil {
		return how
	}
	switch {
	case target.user != "" && target.password == "":
		return fmt.Sprintf("user %q was sent without a password; %s", target.user, how)
	case target.user != "":
		return fmt.Sprintf("the server refused user %q with the password %s; %s", target.user, a.passwordSource(command), how)
	}
	contexts, err := a.loadContexts()
	selected := contexts.Contexts[contexts.Current]
	if err == nil && selected.User != "" && !sameServer(target.server, selected.Server) {
		return fmt.Sprintf("no credentials were sent: those of context %q go only to its server %s; %s",
			contexts.Current, selected.Server, how)
	}
	return "no credentials were sent; " + how
}

// passwordSource says where resolveConnection took the password sent
// from: -p, NARAD_PASS or the selected context, whose password -u alone
// sends under another user (docs/api.md#cli).
func (a *app) passwordSource(command *cobra.Command) string {
	switch {
	case command.Flags().Changed("password"):
		return "from -p"
	case a.getenv("NARAD_PASS") != "":
		return "from NARAD_PASS"
	}
	contexts, err := a.loadContexts()
	if err != nil {
		return "saved in the selected context"
	}
	selected := contexts.Contexts[contexts.Current]
	source := fmt.Sprintf("saved in context %q", contexts.Current)
	if target, err := a.resolveConnection(command); err == nil && selected.User != "" && selected.User != target.user {
		source += fmt.Sprintf(" for user %q (-u alone does not replace it)", selected.User)
	}
	return source
}
