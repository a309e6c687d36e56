package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"

	"github.com/spf13/cobra"

	"narad/client"
)

const (
	// contextsFileBytesMax bounds the contexts file we read.
	contextsFileBytesMax = 1 << 20
	contextsFileName     = "contexts.json"
	// contextsFileMode and contextsDirMode keep saved passwords private.
	contextsFileMode os.FileMode = 0o600
	contextsDirMode  os.FileMode = 0o700
)

var contextNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// savedContext is one named server with optional credentials and the CA
// file of an https:// server whose certificate the system does not know.
// A binary older than ca_file reads the file and ignores the field (but
// drops it if it rewrites the file).
type savedContext struct {
	Server   string `json:"server"`
	User     string `json:"user,omitempty"`
	Password string `json:"password,omitempty"`
	// CAFile is an absolute path, so the context works from any directory.
	CAFile string `json:"ca_file,omitempty"`
}

// contextsFile is the JSON content of contexts.json.
type contextsFile struct {
	// Current names the selected context; "" or a key of Contexts.
	Current  string                  `json:"current"`
	Contexts map[string]savedContext `json:"contexts"`
}

// contextsPath returns $NARAD_CONFIG_DIR/contexts.json, or
// <user config dir>/narad/contexts.json.
func (a *app) contextsPath() (string, error) {
	if dir := a.getenv("NARAD_CONFIG_DIR"); dir != "" {
		return filepath.Join(dir, contextsFileName), nil
	}
	dir, err := a.userConfigDir()
	if err != nil {
		return "", fmt.Errorf("locate the contexts file (set NARAD_CONFIG_DIR): %w", err)
	}
	return filepath.Join(dir, "narad", contextsFileName), nil
}

// loadContexts reads the contexts file; a missing file is an empty one.
// A file that cannot be read or parsed is a usage error (exit 2, as the
// root help says of a file that cannot be opened).
func (a *app) loadContexts() (contextsFile, error) {
	empty := contextsFile{Contexts: map[string]savedContext{}}
	path, err := a.contextsPath()
	if err != nil {
		return empty, err
	}
	data, err := readFileBounded(path, contextsFileBytesMax)
	if errors.Is(err, os.ErrNotExist) {
		return empty, nil
	}
	if err != nil {
		return empty, usagef("read contexts file: %w", err)
	}
	contexts := empty
	if err := json.Unmarshal(data, &contexts); err != nil {
		return empty, usagef("contexts file %s: %w", path, err)
	}
	if contexts.Contexts == nil {
		contexts.Contexts = map[string]savedContext{}
	}
	return contexts, nil
}

func readFileBounded(path string, limitBytes int64) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, limitBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limitBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limitBytes)
	}
	return data, nil
}

// saveContexts writes the contexts file atomically: a private temporary
// file in the same directory, then a rename.
func (a *app) saveContexts(contexts contextsFile) error {
	path, err := a.contextsPath()
	if err != nil {
		return err
	}
	data, err := json.MarshalIndent(contexts, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), contextsDirMode); err != nil {
		return fmt.Errorf("create contexts directory: %w", err)
	}
	temporary, err := os.CreateTemp(filepath.Dir(path), ".contexts-*.json")
	if err != nil {
		return fmt.Errorf("write contexts file: %w", err)
	}
	defer os.Remove(temporary.Name()) // fails harmlessly after the rename
	if err := writeAndClose(temporary, append(data, '\n')); err != nil {
		return fmt.Errorf("write contexts file: %w", err)
	}
	return os.Rename(temporary.Name(), path)
}

func writeAndClose(file *os.File, data []byte) error {
	if err := file.Chmod(contextsFileMode); err != nil {
		file.Close()
		return err
	}
	if _, err := file.Write(data); err != nil {
		file.Close()
		return err
	}
	return file.Close()
}

func newContextCommand(a *app) *cobra.Command {
	group := newGroupCommand("ctx", "Manage saved servers (contexts)",
		newContextAddCommand(a), newContextSelectCommand(a), newContextListCommand(a), newContextRemoveCommand(a))
	group.Long = `A context is a named server with optional credentials, saved in
$NARAD_CONFIG_DIR/contexts.json (default: <user config dir>/narad/contexts.json,
mode 0600). The selected context is used when neither a flag nor NARAD_ADDR,
NARAD_USER, NARAD_PASS says otherwise. A context added with --ca-file keeps
that file's path and trusts its CA for the context's own server (a
--ca-file given later overrides it).`
	return group
}

func newContextAddCommand(a *app) *cobra.Command {
	var fromStdin *bool
	cmd := &cobra.Command{
		Use:   "add <name> --server URL [--user U (--password P | --password-stdin)] [--ca-file F]",
		Short: "Save a context (the first one saved becomes current)",
		Example: `  narad ctx add prod --server http://10.0.0.5:7942 -u admin -p secret
  printf '%s\n' "$PROD_PASSWORD" | narad ctx add prod -s http://10.0.0.5:7942 -u admin --password-stdin
  narad ctx add local -s http://127.0.0.1:7942
  narad ctx add secure -s https://host:7942 -u alice --password-stdin --ca-file ca.pem`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("server") || a.serverFlag == "" {
				return usagef("ctx add needs --server")
			}
			if err := checkServerURL("--server", a.serverFlag); err != nil {
				return err
			}
			caFile, err := a.contextCAFile(cmd)
			if err != nil {
				return err
			}
			password, _, err := a.passwordFrom(cmd, "password", a.passwordFlag, *fromStdin)
			if err != nil {
				return err
			}
			if password != "" && a.userFlag == "" {
				return usagef("a context's password goes with its --user: give --user too, or no password")
			}
			return a.addContext(args[0], savedContext{Server: a.serverFlag, User: a.userFlag, Password: password, CAFile: caFile})
		},
	}
	fromStdin = addPasswordStdinFlag(cmd, "the password to save")
	return cmd
}

// checkServerURL refuses a server no request could reach: an http:// or
// https:// URL with a host, nothing else. source names where the server
// came from (--server, NARAD_ADDR, a context). A URL carrying a user
// (user:password@) is refused too: Go's client would send it as Basic
// credentials, beside the sources of credentials the CLI documents
// (whose precedence it would escape, and whose 401 hint it would
// contradict), and a password in a URL shows in ps and the history.
func checkServerURL(source, server string) error {
	parsed, err := url.Parse(server)
	if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return usagef("%s %q must be an http:// or https:// URL with a host, such as http://127.0.0.1:7942",
			source, client.RedactUserinfo(server))
	}
	if parsed.User != nil {
		return usagef("%s %q carries a user: give credentials with -u/-p, NARAD_USER/NARAD_PASS or a context, and the URL without them",
			source, client.RedactUserinfo(server))
	}
	return nil
}

// contextCAFile returns the absolute path of ctx add's --ca-file, or ""
// without one. A file that holds no certificate, or a CA for an http://
// server (never used), is a usage error: found now, not at every later
// command.
func (a *app) contextCAFile(cmd *cobra.Command) (string, error) {
	if !cmd.Flags().Changed("ca-file") || a.caFileFlag == "" {
		return "", nil
	}
	if parsed, _ := url.Parse(a.serverFlag); parsed.Scheme != "https" {
		return "", usagef("--ca-file is for an https:// server, not %s", a.serverFlag)
	}
	path, err := filepath.Abs(a.caFileFlag)
	if err != nil {
		return "", usagef("--ca-file: %w", err)
	}
	if _, err := loadCAFile(path); err != nil {
		return "", usagef("--ca-file: %w", err)
	}
	return path, nil
}

func (a *app) addContext(name string, saved savedContext) error {
	if !contextNamePattern.MatchString(name) {
		return usagef("context name %q must match %s", name, contextNamePattern)
	}
	contexts, err := a.loadContexts()
	if err != nil {
		return err
	}
	contexts.Contexts[name] = saved
	if contexts.Current == "" {
		contexts.Current = name
	}
	if err := a.saveContexts(contexts); err != nil {
		return err
	}
	fmt.Fprintf(a.stdout, "context %q saved (current: %s)\n", name, contexts.Current)
	return nil
}

func newContextSelectCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:        "select <name>",
		SuggestFor: []string{"use", "switch", "set"}, // the words other tools use
		Short:      "Make a saved context the current one",
		Example:    "  narad ctx select prod",
		Args:       usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.updateSavedContext(args[0], func(contexts *contextsFile) { contexts.Current = args[0] })
			if err == nil {
				fmt.Fprintf(a.stdout, "current context: %s\n", args[0])
			}
			return err
		},
	}
}

func newContextListCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List saved contexts; * marks the current one",
		Example: "  narad ctx ls",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			contexts, err := a.loadContexts()
			if err != nil {
				return err
			}
			a.printContexts(contexts)
			return nil
		},
	}
}

func (a *app) printContexts(contexts contextsFile) {
	if len(contexts.Contexts) == 0 {
		fmt.Fprintln(a.stdout, "no contexts")
		return
	}
	table := newTable(a.stdout)
	for _, name := range slices.Sorted(maps.Keys(contexts.Contexts)) {
		saved := contexts.Contexts[name]
		marker, user, caFile := " ", "", ""
		if name == contexts.Current {
			marker = "*"
		}
		if saved.User != "" {
			user = "user=" + saved.User
		}
		if saved.CAFile != "" {
			caFile = "ca=" + saved.CAFile
		}
		table.row(marker, name, saved.Server, user, caFile)
	}
	table.flush()
}

func newContextRemoveCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm <name>",
		Short: "Remove a saved context",
		Long: `Remove a saved context. Removing the selected one leaves none selected
(commands then use -s, NARAD_ADDR or http://127.0.0.1:7942): select
another with narad ctx select.`,
		Example: "  narad ctx rm staging",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			err := a.updateSavedContext(args[0], func(contexts *contextsFile) {
				delete(contexts.Contexts, args[0])
				if contexts.Current == args[0] {
					contexts.Current = ""
				}
			})
			if err == nil {
				fmt.Fprintf(a.stdout, "context %q removed\n", args[0])
			}
			return err
		},
	}
}

// updateSavedContext loads the contexts file, refuses an unknown name,
// applies change and saves the file.
func (a *app) updateSavedContext(name string, change func(*contextsFile)) error {
	contexts, err := a.loadContexts()
	if err != nil {
		return err
	}
	if _, found := contexts.Contexts[name]; !found {
		return fmt.Errorf("no context named %q (see narad ctx ls)", name)
	}
	change(&contexts)
	return a.saveContexts(contexts)
}
