package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"narad/config"
	"narad/host"
)

const (
	// portDefault is the HTTP port of `server start`
	// (docs/operations.md#settings).
	portDefault = 7942
	// devDataDirMode keeps the dev data directory private.
	devDataDirMode os.FileMode = 0o700
	// devLoopback is where a dev server listens.
	devLoopback = "127.0.0.1"
)

// serveOptions are the flags of serve and server start.
type serveOptions struct {
	configPath  string
	port        int
	addr        string
	clusterPort int
	nodeID      string
	dataDir     string
	logLevel    string
	logFormat   string
	pprofAddr   string
	dev         bool // server start only
}

func (o *serveOptions) register(flags *pflag.FlagSet) {
	flags.StringVar(&o.configPath, "config", "", "JSON configuration file (strict: unknown keys are errors)")
	flags.IntVar(&o.port, "port", portDefault, "HTTP port (keeps the host of http.addr)")
	flags.StringVar(&o.addr, "addr", "", "HTTP listen address host:port (default :7942)")
	flags.IntVar(&o.clusterPort, "cluster-port", 0, "node-to-node port (keeps the host of cluster.addr; default 7943)")
	flags.StringVar(&o.nodeID, "node-id", "", "this node's id (default: the host name)")
	flags.StringVar(&o.dataDir, "data-dir", "", "data directory (default: storage.data_dir, \"data\"; with --dev ~/.narad/data)")
	flags.StringVar(&o.logLevel, "log-level", "", "debug, info, warn or error (default info)")
	flags.StringVar(&o.logFormat, "log-format", "", "json or text (default json)")
	flags.StringVar(&o.pprofAddr, "pprof-addr", "", "serve /debug/pprof on this host:port (unauthenticated)")
}

func newServeCommand(a *app) *cobra.Command {
	var options serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a broker node (production entrypoint)",
		Long: `Run a broker node. The configuration is layered: defaults, then --config
FILE, then NARAD_* environment variables, then these flags. An invalid
configuration prints every problem and exits with status 2.

Authentication is on by default: every request but /healthz, /readyz and
/metrics needs HTTP Basic credentials. While no root user exists the
metastore leader creates one, "admin", with NARAD_ADMIN_PASSWORD, or with a
random password that it logs once (a WARN line with component=audit).
With cluster peers, NARAD_CLUSTER_SECRET (the same on every node) is then
required. NARAD_SECURITY_ENABLED=false turns authentication off.
NARAD_HTTP_TLS_CERT_FILE and NARAD_HTTP_TLS_KEY_FILE serve HTTPS.`,
		Example: `  narad serve --config /etc/narad.json
  narad serve --addr 0.0.0.0:7942 --data-dir /var/lib/narad
  NARAD_NODE_ID=n1 NARAD_CLUSTER_PEERS=n1@a:7943,n2@b:7943,n3@c:7943 narad serve`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serve(cmd, options)
		},
	}
	options.register(cmd.Flags())
	cmd.Flags().Lookup("data-dir").Usage = "data directory (default: storage.data_dir, \"data\")" // serve has no --dev
	return cmd
}

func newServerCommand(a *app) *cobra.Command {
	var options serveOptions
	start := &cobra.Command{
		Use:   "start",
		Short: "Run a broker node; --dev for a zero-configuration local one",
		Long: `Run a broker node. With --dev: authentication off, HTTP on
127.0.0.1:<port>, node-to-node on 127.0.0.1:<port+1> (opened only with
cluster peers, as a single node talks to none), data in ~/.narad/data,
text logs. Each of these but authentication is only a default: an
address, data directory or log format given by --config, a NARAD_*
variable or a flag is kept (the HTTP address must still be loopback).
Without --dev it is the same as "narad serve".`,
		Example: `  narad server start --dev
  narad server start --dev --port 8000 --data-dir ./narad-data`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.serve(cmd, options)
		},
	}
	options.register(start.Flags())
	start.Flags().BoolVar(&options.dev, "dev", false, "local development server: loopback only, no auth")
	return newGroupCommand("server", "Run the broker", start)
}

// serve builds the configuration, then runs the node until SIGINT/SIGTERM.
func (a *app) serve(cmd *cobra.Command, options serveOptions) error {
	cfg, err := a.serverConfig(cmd.Flags(), options)
	if err != nil {
		return err
	}
	started := func() {}
	if options.dev { // the banner's commands work only once the node listens
		started = func() { a.printDevBanner(cfg) }
	}
	logger := newLogger(a, cfg.Log)
	a.warnUnknownEnv(logger)
	err = a.runHost(cmd.Context(), cfg, logger, started)
	switch {
	case errors.Is(err, syscall.EADDRINUSE) && strings.Contains(err.Error(), "pprof"):
		return fmt.Errorf("%w (another process listens there: give another --pprof-addr)", err)
	case errors.Is(err, syscall.EADDRINUSE) && strings.Contains(err.Error(), "cluster transport"):
		return fmt.Errorf("%w (another process listens there: give another with --cluster-port or cluster.addr)", err)
	case errors.Is(err, syscall.EADDRINUSE) && options.dev: // make run's server
		return fmt.Errorf("%w (another process listens there: give another with --port or --addr; make run takes RUN_ARGS='--port N')", err)
	case errors.Is(err, syscall.EADDRINUSE):
		return fmt.Errorf("%w (another process listens there: give another with --port, --addr, NARAD_HTTP_ADDR or http.addr)", err)
	}
	return err
}

// warnUnknownEnv logs, once at start, each NARAD_* variable that no
// setting reads, with the one it most likely meant: a mistyped variable
// otherwise changes nothing and says nothing (config.UnknownEnvNames).
func (a *app) warnUnknownEnv(logger *slog.Logger) {
	if a.environ == nil {
		return
	}
	for _, unknown := range config.UnknownEnvNames(a.environ()) {
		hint := "see docs/operations.md#settings for the variables"
		if unknown.Suggestion != "" {
			hint = "did you mean " + unknown.Suggestion + "?"
		}
		logger.Warn("environment variable ignored: no setting reads it; "+hint, "variable", unknown.Name)
	}
}

// serverConfig layers defaults → (dev defaults) → file → environment →
// flags and validates the result. Any problem is an exit-2 error listing them all.
func (a *app) serverConfig(flags *pflag.FlagSet, options serveOptions) (config.Config, error) {
	cfg := config.Default()
	var err error
	devDataDir, homeErr := "", error(nil)
	if options.dev {
		devDefaults(&cfg, options)
		if devDataDir, homeErr = a.devDataDir(); homeErr == nil {
			cfg.Storage.DataDir = devDataDir
		}
	}
	if options.configPath != "" {
		if cfg, err = config.LoadFileOver(cfg, options.configPath); err != nil {
			return cfg, invalidConfig(err)
		}
	}
	if err := config.ApplyEnv(&cfg, a.getenv); err != nil {
		return cfg, invalidConfig(err)
	}
	options.apply(&cfg, flags)
	if options.dev {
		cfg.Security.Enabled = false // what --dev is, whatever else says
		if homeErr != nil && cfg.Storage.DataDir == config.Default().Storage.DataDir {
			return cfg, homeErr // no home for the dev directory, and nothing gave another
		}
		if cfg.Storage.DataDir == devDataDir && devDataDir != "" {
			if err := os.MkdirAll(devDataDir, devDataDirMode); err != nil {
				return cfg, err
			}
		}
	}
	if options.dev && !config.LoopbackAddr(cfg.HTTP.Addr) {
		return cfg, usageError{fmt.Errorf("--dev serves without authentication, so only on a loopback address; %s (from --addr, NARAD_HTTP_ADDR or http.addr) is not one (run without --dev to listen elsewhere, with security on)", cfg.HTTP.Addr)}
	}
	if err := errors.Join(cfg.Validate(), host.Unsupported(cfg)); err != nil {
		// the TLS files' problems too, which OptionsFrom would report only
		// once these were mended (it reads the files, so it is not asked
		// to again below)
		return cfg, invalidConfig(errors.Join(err, host.CheckTLSFiles(cfg)))
	}
	// What the host refuses on a valid configuration (the node's own
	// bounds, the descriptor limit, a TLS file it cannot use) is a
	// configuration error too: exit 2, not the exit 1 of a node that
	// failed, which a supervisor restarts.
	if _, err := host.OptionsFrom(cfg); err != nil {
		return cfg, invalidConfig(err)
	}
	return cfg, nil
}

// invalidConfig formats every problem of err, one per line, and exits 2.
func invalidConfig(err error) error {
	var message strings.Builder
	message.WriteString("narad: invalid configuration:")
	for line := range strings.SplitSeq(err.Error(), "\n") {
		message.WriteString("\n  " + line)
	}
	return exitCodeError{code: exitUsage, message: message.String()}
}

// devDefaults puts the --dev settings in place of the defaults, before
// the file, the environment and the flags are layered on them: an
// address or log format any of those gives is kept (serverConfig still
// refuses an address that is not loopback), as is a data directory in
// place of devDataDir's.
func devDefaults(cfg *config.Config, options serveOptions) {
	cfg.HTTP.Addr = net.JoinHostPort(devLoopback, strconv.Itoa(options.port))
	cfg.Cluster.Addr = net.JoinHostPort(devLoopback, strconv.Itoa(options.port+1))
	cfg.Log.Format = "text"
}

// devDataDir is the data directory of --dev: ~/.narad/data.
func (a *app) devDataDir() (string, error) {
	home, err := a.userHomeDir()
	if err != nil {
		return "", fmt.Errorf("find the home directory for the dev data directory (use --data-dir): %w", err)
	}
	return filepath.Join(home, ".narad", "data"), nil
}

// apply sets the configuration from the flags that were given.
func (o serveOptions) apply(cfg *config.Config, flags *pflag.FlagSet) {
	setIfChanged(flags, "addr", &cfg.HTTP.Addr, o.addr)
	if flags.Changed("port") {
		cfg.HTTP.Addr = withPort(cfg.HTTP.Addr, o.port)
	}
	if flags.Changed("cluster-port") {
		cfg.Cluster.Addr = withPort(cfg.Cluster.Addr, o.clusterPort)
	}
	setIfChanged(flags, "node-id", &cfg.Cluster.NodeID, o.nodeID)
	setIfChanged(flags, "data-dir", &cfg.Storage.DataDir, o.dataDir)
	setIfChanged(flags, "log-level", &cfg.Log.Level, o.logLevel)
	setIfChanged(flags, "log-format", &cfg.Log.Format, o.logFormat)
	setIfChanged(flags, "pprof-addr", &cfg.HTTP.PprofAddr, o.pprofAddr)
}

func setIfChanged(flags *pflag.FlagSet, name string, field *string, value string) {
	if flags.Changed(name) {
		*field = value
	}
}

// withPort replaces the port of a host:port address, keeping the host.
func withPort(addr string, port int) string {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}

// newLogger returns the server's logger on stderr per the log settings
// (already validated).
func newLogger(a *app, settings config.Log) *slog.Logger {
	var level slog.Level
	if err := level.UnmarshalText([]byte(settings.Level)); err != nil {
		level = slog.LevelInfo
	}
	options := &slog.HandlerOptions{Level: level}
	if settings.Format == "text" {
		return slog.New(slog.NewTextHandler(a.stderr, options))
	}
	return slog.New(slog.NewJSONHandler(a.stderr, options))
}

func (a *app) printDevBanner(cfg config.Config) {
	_, port, _ := net.SplitHostPort(cfg.HTTP.Addr)
	server := ""
	if cfg.HTTP.Addr != net.JoinHostPort(devLoopback, strconv.Itoa(portDefault)) {
		server = "-s http://" + cfg.HTTP.Addr + " " // the commands' default server is another
	}
	command := "narad"
	if a.selfCommand != nil {
		command = a.selfCommand() // make run's is ./bin/narad, not on PATH
	}
	fmt.Fprintf(a.stderr, `narad dev server: http://%[1]s (auth off, data in %[2]s)
try, in another terminal:
  %[5]s %[3]stopic add orders
  %[5]s %[3]spub orders hello
  %[5]s %[3]ssub orders
  curl localhost:%[4]s/v1/topics
`, cfg.HTTP.Addr, cfg.Storage.DataDir, server, port, command)
}
