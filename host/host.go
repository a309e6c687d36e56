package host

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"narad/auth"
	"narad/config"
	"narad/httpapi"
	"narad/httpserve"
	"narad/meta"
	"narad/node"
	"narad/peer"
	"narad/storage"
	"narad/wire"
)

// Options configures a host. Callers start from DefaultOptions.
type Options struct {
	// Node configures the state machine.
	Node node.Config
	// DataDir holds the node's files (created if missing).
	DataDir string
	// GroupSync lets a Ready that makes records of several partitions
	// durable do it with one syncfs(2) of the data directory's file system
	// instead of an fdatasync per partition (storage.OSFS.EnableGroupSync;
	// on where it is unavailable, the host logs why and fsyncs each).
	GroupSync bool
	// HTTPAddr is where the API listens; port 0 picks a free port.
	HTTPAddr string
	// PprofAddr, when set, serves /debug/pprof on a separate listener.
	PprofAddr string
	// clockForTests, when set, wraps the loop's clock (the tests of this
	// package make it run fast); nil everywhere else.
	clockForTests func(func() time.Time) func() time.Time
	// The API connection server's timeouts (package httpserve), and how
	// long graceful shutdown waits.
	ReadTimeout, WriteTimeout, IdleTimeout, ShutdownGrace time.Duration
	// HTTPConnectionsMax limits the HTTP connections open at once (more
	// are answered 503 and closed); 0 derives it from the descriptor
	// limit at start (listener.go).
	HTTPConnectionsMax int
	// NodeIDFromHostname says Node.NodeID is the host name standing in
	// for an id nobody configured: a single node then takes the id its
	// data directory names (checkIdentity).
	NodeIDFromHostname bool
	// Codec bounds request decoding (body sizes, consume wait).
	Codec httpapi.CodecConfig
	// Cluster configures the node-to-node transport; zero for a single
	// node.
	Cluster ClusterOptions
	// Security configures authentication and TLS of the API; off in
	// DefaultOptions (narad serve turns it on from its configuration).
	Security SecurityOptions
}

// DefaultOptions returns the defaults (docs/operations.md#settings) for a
// data directory.
func DefaultOptions(dataDir string) Options {
	return Options{
		Node: node.DefaultConfig(), DataDir: dataDir, GroupSync: true, HTTPAddr: "127.0.0.1:7942",
		ReadTimeout: 10 * time.Second, WriteTimeout: 30 * time.Second,
		IdleTimeout: 60 * time.Second, ShutdownGrace: 10 * time.Second,
		Codec: httpapi.DefaultCodecConfig(), Security: SecurityOptions{Auth: auth.DefaultConfig()},
	}
}

// metaStoreDir and metaStoreFile place the metastore's bbolt file in the
// data directory (docs/operations.md#data-directory).
const (
	metaStoreDir  = "metastore"
	metaStoreFile = "meta.db"
	// metaStoreLockTimeout bounds the wait for the metastore's file lock:
	// a second node started on a data directory in use fails after it,
	// saying so, instead of waiting silently for good.
	metaStoreLockTimeout = 2 * time.Second
)

func openMetaStore(dataDir string) (*meta.Store, error) {
	dir := filepath.Join(dataDir, metaStoreDir)
	if err := os.MkdirAll(dir, 0o700); err != nil { // as the partitions' (storage.OSFS): the node's user alone
		return nil, fmt.Errorf("metastore dir: %w", err)
	}
	store, err := meta.OpenStore(filepath.Join(dir, metaStoreFile), meta.StoreOptions{LockTimeout: metaStoreLockTimeout})
	if errors.Is(err, meta.ErrStoreLocked) {
		return nil, fmt.Errorf("data directory %s is in use by another narad process (its metastore is locked): %w", dataDir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("open metastore: %w", err)
	}
	return store, nil
}

// monotonicClock reads wall time as boot's wall time plus the monotonic
// time since boot: a wall clock stepped backwards (NTP) must not freeze
// the node's timers, which only move forward.
func monotonicClock(boot time.Time) func() time.Time {
	return func() time.Time { return boot.Add(time.Since(boot)) }
}

// Host is a running node: its loop, its HTTP server and its metrics.
type Host struct {
	opts    Options
	logger  *slog.Logger
	loop    *loop
	backend *backend
	server  *httpserve.Server
	// listener is the API's (limited, under TLS when tls), bound by bind
	// and served by serve.
	listener net.Listener
	limited  *limitListener
	tls      bool
	// connectionsMax is the HTTP connection limit in force (set by bind).
	connectionsMax int
	// pprofListener, bound by bind when pprof is on, is served by pprof.
	pprofListener net.Listener
	pprof         *http.Server
	cancel        context.CancelFunc
	// transport carries envelopes to and from peers; nil for a single
	// node. Started before the loop, closed after it stopped.
	transport *peer.Transport

	// fs is the node's file system, closed after the node.
	fs *storage.OSFS

	// wg tracks every goroutine the host starts (goFunc).
	wg      sync.WaitGroup
	loopErr chan error
}

// Start recovers the node from its data directory and starts serving.
//
// What can refuse the start without writing refuses it before anything
// is written: the listeners are bound first (bind: the API's, with its
// TLS certificate, pprof's, the cluster transport's), and an existing
// data directory is checked (checkDataDir: its identity, partition data
// without a metastore) before the directory, its metastore, incarnation
// or identity is created. A start refused for any of these leaves the
// directory as it found it, absent, empty or as it was: a port taken
// wrote a new directory's identity under the id that start had, and a
// corrected start was refused as another node (outside audit). The
// listeners are served only once the node is recovered.
func Start(opts Options, logger *slog.Logger) (*Host, error) {
	begin := time.Now()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg, logger)
	authenticator, seed, err := newAuthenticator(&opts, reg)
	if err != nil {
		return nil, err
	}
	h := &Host{opts: opts, logger: logger, loopErr: make(chan error, 1)}
	clock := monotonicClock(begin)
	if opts.clockForTests != nil {
		clock = opts.clockForTests(clock)
	}
	h.loop = newLoop(nil, clock, logger, metrics) // its node once recovered, before it runs
	if err := h.bind(reg); err != nil {
		return nil, err
	}
	n, fs, err := openNode(&h.opts, begin.UnixMilli(), metrics, logger)
	if err != nil {
		return nil, errors.Join(err, h.unbind())
	}
	h.fs = fs
	registerFsyncs(reg, fs.Fsyncs, fs.GroupSyncs)
	h.loop.node = n
	h.loop.groupSync = enableGroupSync(fs, h.opts.GroupSync, logger)
	h.loop.disk = fs
	h.loop.metaRoom = &metaRoom{path: filepath.Join(h.opts.DataDir, metaStoreDir, metaStoreFile)}
	h.loop.metaRoom.register(reg)
	h.loop.jobsWaitMax = h.opts.ShutdownGrace
	reg.MustRegister(newInboxGauges(h.loop)...)
	h.loop.authenticator, h.loop.seed = authenticator, seed
	h.loop.publishUsers() // those the store holds, before the API is served: a restart answers known users at once, not 401
	h.loop.dropSeedOfExistingRoot()
	h.backend = &backend{loop: h.loop}
	h.serve(reg, authenticator)
	h.startLoop()
	h.logDescriptorBudget()
	metrics.parkedPollsMax.Set(float64(h.opts.Node.WaitersMax))
	metrics.bootSeconds.Set(time.Since(begin).Seconds())
	warnExposure(logger, h.opts.Security.Enabled, h.Addr(), h.PprofAddr())
	logger.Info("narad node serving", "node", h.opts.Node.NodeID, "http", h.Addr(), "tls", onOff(h.tls), "auth", onOff(h.opts.Security.Enabled),
		"pprof", cmp.Or(h.PprofAddr(), "off"), "cluster", h.ClusterAddr(), "data", h.opts.DataDir, "wire_version", wire.Version)
	return h, nil
}

// openNode opens the data directory and recovers the node from it, once
// checkDataDir found nothing there that refuses the start: it creates
// the directory if missing, opens (or creates) the metastore, whose file
// lock keeps a second process off the directory, checks the identity
// again under that lock, and recovers the node. A new directory's
// identity is written once the node recovered, before anything of it
// reaches a peer. It updates opts with the node id and data id the
// directory gives.
func openNode(opts *Options, nowMs int64, metrics *Metrics, logger *slog.Logger) (*node.Node, *storage.OSFS, error) {
	if err := checkDataDir(*opts); err != nil {
		return nil, nil, err
	}
	fs, err := storage.NewOSFS(opts.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("data dir %s: %w", opts.DataDir, err)
	}
	metaStore, err := openMetaStore(opts.DataDir)
	if err != nil {
		return nil, nil, errors.Join(err, fs.Close())
	}
	identity, write, err := resolveIdentity(opts, fs, logger)
	if err != nil {
		return nil, nil, errors.Join(err, metaStore.Close(), fs.Close())
	}
	if len(opts.Node.HandleKey) == 0 {
		opts.Node.HandleKey = drawHandleKey()
	}
	n, err := node.New(opts.Node, fs, metaStore, nowMs, metrics) // closes the store when it fails
	if err != nil {
		return nil, nil, errors.Join(err, fs.Close())
	}
	if write {
		if err := writeIdentity(fs, identity); err != nil {
			return nil, nil, errors.Join(err, n.Close(), fs.Close())
		}
	}
	return n, fs, nil
}

// checkDataDir refuses, reading only, a start that an existing data
// directory refuses: one that belongs to another node (resolveIdentity),
// or whose topics/ holds partition data while it has no metastore file
// (node.CheckDataWithoutMetastore: the start would create a new one
// beside it). A directory that does not exist (or cannot be read, which
// storage.NewOSFS then reports) has nothing to refuse. The same checks
// run again under the metastore's lock (openNode, the node's recovery).
func checkDataDir(opts Options) error {
	if _, err := os.Stat(opts.DataDir); err != nil {
		return nil
	}
	dir, err := storage.NewOSFS(opts.DataDir) // the directory exists: this creates nothing
	if err != nil {
		return nil
	}
	defer dir.Close()
	if _, _, err := resolveIdentity(&opts, dir, slog.New(slog.DiscardHandler)); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(opts.DataDir, metaStoreDir, metaStoreFile)); errors.Is(err, iofs.ErrNotExist) {
		return node.CheckDataWithoutMetastore(dir)
	}
	return nil
}

// onOff names a setting's state in the start line.
func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// warnExposure warns, once at start, of what a node serves without
// credentials beyond this machine: the API with authentication off on an
// address that is not loopback, and pprof (never authenticated) on such
// an address; httpAddr and pprofAddr are the bound addresses ("": no
// pprof). The node-to-node transport warns of its own (startTransport).
func warnExposure(logger *slog.Logger, securityOn bool, httpAddr, pprofAddr string) {
	if !securityOn && !config.LoopbackAddr(httpAddr) {
		logger.Warn("authentication is off (security.enabled false) and the API listens beyond loopback: whoever reaches it can produce, consume, delete topics and manage users",
			"http", httpAddr)
	}
	if pprofAddr != "" && !config.LoopbackAddr(pprofAddr) {
		logger.Warn("pprof listens beyond loopback: /debug/pprof is served without authentication to whoever reaches it (profiles, goroutine stacks, the command line)",
			"pprof", pprofAddr)
	}
}

// logDescriptorBudget logs the descriptor limit and the caps held under
// it, and warns when the open logs alone could exhaust it.
func (h *Host) logDescriptorBudget() {
	limit, err := descriptorLimit()
	if err != nil {
		h.logger.Warn("cannot read the descriptor limit", "err", err)
		return
	}
	overdraft := openLogsOverdraft(h.opts.Node.PartitionsMax)
	h.logger.Info("file descriptor budget", "limit", limit, "open_logs_max", h.opts.Node.OpenLogsMax, "open_logs_overdraft", overdraft,
		"descriptors_per_log_budget", descriptorsPerLogBudget, "http_connections_max", h.connectionsMax)
	if uint64(h.opts.Node.OpenLogsMax)+overdraft > logsDescriptorShare(limit) {
		h.logger.Warn("the cap of open logs, with one produce's overdraft, could use more than half the descriptor limit",
			"limit", limit, "open_logs_max", h.opts.Node.OpenLogsMax, "open_logs_overdraft", overdraft)
	}
	if uint64(h.connectionsMax) > limit/connectionsShareDivisor {
		h.logger.Warn("the derived HTTP connection limit (its floor) could use more than a quarter of the descriptor limit", "limit", limit, "http_connections_max", h.connectionsMax)
	}
}

// startCluster starts the transport of a cluster node (nothing for a
// single node) and registers the cluster metrics.
func (h *Host) startCluster(reg *prometheus.Registry) error {
	reg.MustRegister(newLeaderGauge(h.loop.isLeader))
	reg.MustRegister(newMetaGauges(h.loop.lastMetaStatus)...)
	if !h.opts.Cluster.Enabled {
		return nil
	}
	t, err := startTransport(h.opts.Node.NodeID, h.opts.Cluster, h.loop.fromPeer, h.logger)
	if err != nil {
		return err
	}
	h.transport, h.loop.transport = t, peerTransport{t}
	reg.MustRegister(newPeerCollector(t.Stats))
	return nil
}

// closeTransport closes the transport, if any. The loop must have stopped
// (or never started): the transport's readers may be waiting on it.
func (h *Host) closeTransport() error {
	if h.transport == nil {
		return nil
	}
	if !h.transport.Drain(transportDrainMax) {
		h.logger.Warn("stopping with peer messages unsent", "waited", transportDrainMax)
	}
	return h.transport.Close()
}

// transportDrainMax bounds how long a stopping node waits for its last
// messages to peers (the answers of its last round) to be written.
const transportDrainMax = time.Second

// ClusterAddr is the address the node-to-node transport listens on, ""
// for a single node.
func (h *Host) ClusterAddr() string {
	if h.transport == nil {
		return ""
	}
	return h.transport.Addr()
}

// bind binds the node's listeners without serving them: the API's (its
// TLS certificate loaded), pprof's when set, and in a cluster the
// transport's, started (what peers send queues for the loop, which runs
// once the node is recovered). A client of the API waits in the listen
// backlog until serve. On error nothing stays bound.
func (h *Host) bind(reg *prometheus.Registry) error {
	if err := h.opts.Codec.Validate(); err != nil {
		return fmt.Errorf("codec config: %w", err)
	}
	tlsConfig, err := h.opts.Security.tlsConfig()
	if err != nil {
		return err
	}
	limit, err := descriptorLimit()
	if err != nil {
		return err
	}
	if h.connectionsMax, err = connectionsCap(h.opts.HTTPConnectionsMax, limit); err != nil {
		return err
	}
	inner, err := net.Listen("tcp", h.opts.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.opts.HTTPAddr, err)
	}
	h.limited = newLimitListener(inner, h.connectionsMax, tlsConfig, reg)
	h.listener, h.tls = h.limited, tlsConfig != nil
	if h.tls {
		h.listener = tls.NewListener(h.listener, tlsConfig)
	}
	if err := h.bindPprof(); err != nil {
		return errors.Join(err, h.listener.Close())
	}
	if err := h.startCluster(reg); err != nil {
		return errors.Join(err, h.closePprofListener(), h.listener.Close())
	}
	return nil
}

// unbind releases what bind holds, for a start that fails before it
// serves.
func (h *Host) unbind() error {
	close(h.loop.done) // the loop never ran: peer readers waiting on it give up
	return errors.Join(h.closeTransport(), h.closePprofListener(), h.listener.Close())
}

// serve serves the API, and pprof when set, on the listeners bind bound.
func (h *Host) serve(reg *prometheus.Registry, authenticator *auth.Authenticator) {
	handler := httpapi.NewHandler(h.backend, httpapi.NewCodec(h.opts.Codec), reg, h.logger, h.securityOption(authenticator))
	h.loop.metrics.forgetTopicsIn(handler)
	h.limited.answerProbesWith(handler) // before the first Accept: Serve below
	h.server = httpserve.New(httpserve.Options{
		Handler:     handler,
		ReadTimeout: h.opts.ReadTimeout, WriteTimeout: h.opts.WriteTimeout, IdleTimeout: h.opts.IdleTimeout,
		Refused: newRefusedCounter(reg), Logger: h.logger,
	})
	h.goFunc(func() {
		if err := h.server.Serve(h.listener); !errors.Is(err, httpserve.ErrServerClosed) {
			h.logger.Error("http server failed", "err", err)
		}
	})
	if h.pprofListener == nil {
		return
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	// Header and idle timeouts bound slow or idle clients; none on writes,
	// which a profile of ?seconds=N takes N seconds to start.
	h.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: pprofHeaderTimeout, IdleTimeout: pprofIdleTimeout}
	h.goFunc(func() {
		if err := h.pprof.Serve(h.pprofListener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.logger.Error("pprof server failed", "err", err)
		}
	})
}

// bindPprof binds the pprof listener when an address is set. It is bound
// with the API's, before either is served: when it cannot be, the start
// fails holding no port (the API's listener stayed bound and served
// before).
func (h *Host) bindPprof() error {
	if h.opts.PprofAddr == "" {
		return nil
	}
	listener, err := net.Listen("tcp", h.opts.PprofAddr)
	if err != nil {
		return fmt.Errorf("listen on pprof address %s: %w", h.opts.PprofAddr, err)
	}
	h.pprofListener = listener
	return nil
}

func (h *Host) closePprofListener() error {
	if h.pprofListener == nil {
		return nil
	}
	return h.pprofListener.Close()
}

// PprofAddr is the address pprof listens on, "" without one.
func (h *Host) PprofAddr() string {
	if h.pprofListener == nil {
		return ""
	}
	return h.pprofListener.Addr().String()
}

func (h *Host) startLoop() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.goFunc(func() { h.loopErr <- h.loop.run(ctx) })
	h.goFunc(func() { h.pollInventory(ctx) })
	h.goFunc(func() { tuneGC(ctx) })
}

// inventoryPollInterval is how often the inventory gauges (caps, open
// logs, the disk's free space and reserve, fan-out lags) are refreshed.
const inventoryPollInterval = 5 * time.Second

// pollInventory refreshes the inventory gauges at once (a node that starts
// under its disk reserve shows it from its first scrape, not 0 for five
// seconds) and then every inventoryPollInterval; it asks the loop, which
// owns the node, to publish them.
func (h *Host) pollInventory(ctx context.Context) {
	h.loop.requestStats()
	ticker := time.NewTicker(inventoryPollInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			h.loop.requestStats()
		}
	}
}

// goFunc starts a goroutine that Shutdown waits for.
func (h *Host) goFunc(f func()) {
	h.wg.Go(f)
}

// Addr is the address the API listens on.
func (h *Host) Addr() string { return h.listener.Addr().String() }

// Failed returns a channel that yields the loop's error if persisting
// fails (the node must then restart).
func (h *Host) Failed() <-chan error { return h.loopErr }

// enableGroupSync turns group sync on in fs when asked and available,
// and returns fs as the loop's group syncer then (nil otherwise).
func enableGroupSync(fs *storage.OSFS, asked bool, logger *slog.Logger) storage.GroupSyncer {
	if !asked {
		return nil
	}
	if err := fs.EnableGroupSync(); err != nil {
		logger.Warn("group sync is off: each partition log is fsynced on its own", "reason", err)
		return nil
	}
	return fs
}

// handLeadershipOver hands the metastore's leadership to another voter
// when this node leads a cluster, and waits for it to move, so that the
// cluster does not wait an election timeout for a leader after this node
// stops. A transfer to a caught-up voter takes a round trip or two; raft
// abandons one that has not ended within an election timeout (its target
// stopped too, say), and so does the wait.
func (h *Host) handLeadershipOver() {
	if !h.loop.leader.Load() {
		return
	}
	started := make(chan bool, 1)
	h.loop.post(func(n *node.Node) { started <- n.HandLeadershipOver() })
	electionTimeout := time.Duration(int64(h.opts.Node.Meta.ElectionTicks)*h.opts.Node.MetaTickIntervalMs) * time.Millisecond
	wait := time.NewTimer(electionTimeout)
	defer wait.Stop()
	select {
	case ok := <-started:
		if !ok {
			return // a single node, or no voter to hand over to
		}
	case <-h.loop.done:
		return
	case <-wait.C:
		return
	}
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for h.loop.leader.Load() {
		select {
		case <-h.loop.done:
			return
		case <-wait.C:
			h.logger.Warn("the metastore's leadership did not move before the stop; the others elect a leader after their election timeout")
			return
		case <-poll.C:
		}
	}
	h.logger.Info("handed the metastore's leadership over before stopping")
}

// Shutdown stops the node gracefully: it stops accepting requests,
// answers parked long polls, hands the metastore's leadership over when
// it holds it, lets in-flight requests finish (up to ShutdownGrace),
// stops the loop and closes the logs.
func (h *Host) Shutdown() error {
	h.backend.shuttingDown.Store(true)
	h.loop.releaseWaiters()
	h.handLeadershipOver()
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.ShutdownGrace)
	defer cancel()
	serverErr := h.server.Shutdown(ctx)
	if h.pprof != nil {
		_ = h.pprof.Close()
	}
	h.cancel()
	h.wg.Wait()
	transportErr := h.closeTransport()
	var loopErr error
	select {
	case loopErr = <-h.loopErr:
	default:
	}
	var closeErr error
	switch {
	case h.loop.failure() != nil:
		closeErr = h.loop.node.Abandon() // a failed fsync finished this instance: persist nothing more
	case h.loop.jobsLeft.Load():
		closeErr = h.loop.node.Abandon() // a move job still writes its own files: leave them as a crash would
	default:
		closeErr = h.loop.node.Close()
	}
	var unpersisted *node.UnpersistedOffsets
	if errors.As(closeErr, &unpersisted) && closeErr == error(unpersisted) { // alone: a full disk, and nothing lost
		h.logger.Warn("stopped with committed offsets unpersisted", "error", closeErr)
		closeErr = nil
	}
	h.logger.Info("narad node stopped", "node", h.opts.Node.NodeID)
	return errors.Join(serverErr, loopErr, transportErr, closeErr, h.fs.Close())
}
