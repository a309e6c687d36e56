package host

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
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
	if err := os.MkdirAll(dir, 0o755); err != nil {
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
	opts     Options
	logger   *slog.Logger
	loop     *loop
	backend  *backend
	server   *httpserve.Server
	listener net.Listener
	// connectionsMax is the HTTP connection limit in force (set by listen).
	connectionsMax int
	pprof          *http.Server
	cancel         context.CancelFunc
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
func Start(opts Options, logger *slog.Logger) (*Host, error) {
	begin := time.Now()
	fs, err := storage.NewOSFS(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", opts.DataDir, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics := NewMetrics(reg, logger)
	registerFsyncs(reg, fs.Fsyncs, fs.GroupSyncs)
	authenticator, seed, err := newAuthenticator(&opts, reg)
	if err != nil {
		return nil, err
	}
	metaStore, err := openMetaStore(opts.DataDir)
	if err != nil {
		return nil, err
	}
	if err := checkIdentity(&opts, fs, logger); err != nil {
		return nil, errors.Join(err, metaStore.Close())
	}
	if len(opts.Node.HandleKey) == 0 {
		opts.Node.HandleKey = drawHandleKey()
	}
	n, err := node.New(opts.Node, fs, metaStore, begin.UnixMilli(), metrics)
	if err != nil {
		return nil, err
	}
	groupSync := enableGroupSync(fs, opts.GroupSync, logger)
	h := &Host{opts: opts, logger: logger, loopErr: make(chan error, 1), fs: fs}
	clock := monotonicClock(begin)
	if opts.clockForTests != nil {
		clock = opts.clockForTests(clock)
	}
	h.loop = newLoop(n, clock, logger, metrics)
	h.loop.groupSync = groupSync
	h.loop.disk = fs
	h.loop.jobsWaitMax = opts.ShutdownGrace
	reg.MustRegister(newInboxGauges(h.loop)...)
	h.loop.authenticator, h.loop.seed = authenticator, seed
	h.loop.publishUsers() // those the store holds, before the listener: a restart answers known users at once, not 401
	h.loop.dropSeedOfExistingRoot()
	h.backend = &backend{loop: h.loop}
	if err := h.startCluster(reg); err != nil {
		return nil, errors.Join(err, n.Close(), fs.Close())
	}
	if err := h.listen(reg, authenticator); err != nil {
		close(h.loop.done) // the loop never ran: peer readers waiting on it give up
		return nil, errors.Join(err, h.closeTransport(), n.Close(), fs.Close())
	}
	h.startLoop()
	h.logDescriptorBudget()
	metrics.bootSeconds.Set(time.Since(begin).Seconds())
	logger.Info("narad node serving", "node", opts.Node.NodeID, "http", h.Addr(), "cluster", h.ClusterAddr(), "data", opts.DataDir,
		"wire_version", wire.Version)
	return h, nil
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

func (h *Host) listen(reg *prometheus.Registry, authenticator *auth.Authenticator) error {
	if err := h.opts.Codec.Validate(); err != nil {
		return fmt.Errorf("codec config: %w", err)
	}
	tlsConfig, err := h.opts.Security.tlsConfig()
	if err != nil {
		return err
	}
	codec := httpapi.NewCodec(h.opts.Codec)
	inner, err := net.Listen("tcp", h.opts.HTTPAddr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", h.opts.HTTPAddr, err)
	}
	limit, err := descriptorLimit()
	if err != nil {
		return errors.Join(err, inner.Close())
	}
	if h.connectionsMax, err = connectionsCap(h.opts.HTTPConnectionsMax, limit); err != nil {
		return errors.Join(err, inner.Close())
	}
	limited := newLimitListener(inner, h.connectionsMax, tlsConfig, reg)
	var listener net.Listener = limited
	if tlsConfig != nil {
		listener = tls.NewListener(listener, tlsConfig)
	}
	h.listener = listener
	handler := httpapi.NewHandler(h.backend, codec, reg, h.logger, h.securityOption(authenticator))
	h.loop.metrics.forgetTopicsIn(handler)
	limited.answerProbesWith(handler) // before the first Accept: Serve below
	h.server = httpserve.New(httpserve.Options{
		Handler:     handler,
		ReadTimeout: h.opts.ReadTimeout, WriteTimeout: h.opts.WriteTimeout, IdleTimeout: h.opts.IdleTimeout,
		Refused: newRefusedCounter(reg), Logger: h.logger,
	})
	// The pprof listener is bound before the API is served: when it cannot
	// be, the start fails holding no port (the API's listener closes
	// unserved; it stayed bound and served before).
	if err := h.listenPprof(); err != nil {
		return errors.Join(err, listener.Close())
	}
	h.goFunc(func() {
		if err := h.server.Serve(listener); !errors.Is(err, httpserve.ErrServerClosed) {
			h.logger.Error("http server failed", "err", err)
		}
	})
	return nil
}

func (h *Host) listenPprof() error {
	if h.opts.PprofAddr == "" {
		return nil
	}
	listener, err := net.Listen("tcp", h.opts.PprofAddr)
	if err != nil {
		return fmt.Errorf("listen on pprof address %s: %w", h.opts.PprofAddr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	// Header and idle timeouts bound slow or idle clients; none on writes,
	// which a profile of ?seconds=N takes N seconds to start.
	h.pprof = &http.Server{Handler: mux, ReadHeaderTimeout: pprofHeaderTimeout, IdleTimeout: pprofIdleTimeout}
	h.goFunc(func() { h.serve(h.pprof, listener) })
	return nil
}

func (h *Host) serve(server *http.Server, listener net.Listener) {
	if err := server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
		h.logger.Error("http server failed", "err", err)
	}
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
	h.logger.Info("narad node stopped", "node", h.opts.Node.NodeID)
	return errors.Join(serverErr, loopErr, transportErr, closeErr, h.fs.Close())
}
