package host

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/config"
	"narad/meta"
	"narad/msg"
	"narad/node"
	"narad/peer"
	"narad/proc"
)

// clusterConfig is a valid three-node configuration as node n2 sees it.
func clusterConfig() config.Config {
	cfg := config.Default()
	cfg.Security.Enabled = false
	cfg.Cluster.NodeID = "n2"
	cfg.Cluster.Addr = ":7943"
	cfg.Cluster.Peers = []string{"n1@10.0.0.1:7943", "n2@10.0.0.2:7943", "n3@10.0.0.3:7943"}
	return cfg
}

func TestOptionsFromClusterPeers(t *testing.T) {
	cfg := clusterConfig()
	cfg.Security.ClusterSecret = "s3cret-of-16-bytes"
	require.NoError(t, cfg.Validate())
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)

	assert.Equal(t, "n2", opts.Node.NodeID)
	assert.Equal(t, "10.0.0.2:7943", opts.Node.ClusterAddr, "peers must learn a reachable address, not the wildcard listen address")
	assert.Equal(t, "10.0.0.2:7942", opts.Node.AdvertiseAddr, "a wildcard http.addr is advertised with the host of this node's peer entry")
	assert.Equal(t, "n2", opts.Node.Meta.NodeID)
	assert.False(t, opts.Node.Meta.Join, "no initial_members: every peer bootstraps")
	require.Len(t, opts.Node.Meta.Peers, 3)
	for i, id := range []string{"n1", "n2", "n3"} {
		want := meta.Peer{ID: id, RaftID: meta.RaftIDOf(id), ClusterAddr: fmt.Sprintf("10.0.0.%d:7943", i+1)}
		assert.Equal(t, want, opts.Node.Meta.Peers[i])
	}
	assert.Equal(t, ClusterOptions{Enabled: true, ListenAddr: ":7943", Secret: "s3cret-of-16-bytes",
		Peers: map[string]string{"n1": "10.0.0.1:7943", "n3": "10.0.0.3:7943"}}, opts.Cluster)
}

func TestOptionsFromSingleNodeHasNoCluster(t *testing.T) {
	cfg := config.Default()
	cfg.Security.Enabled = false
	cfg.Cluster.NodeID = "solo"
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	assert.Zero(t, opts.Node.Meta, "a single node leaves the metastore configuration to node (sole voter)")
	assert.Zero(t, opts.Cluster)
	assert.Equal(t, ":7942", opts.Node.AdvertiseAddr)
	assert.Equal(t, ":7943", opts.Node.ClusterAddr)
}

func TestJoinWhenNotAnInitialMember(t *testing.T) {
	peers := []config.Peer{{ID: "n1", Addr: "a:1"}, {ID: "n2", Addr: "b:1"}, {ID: "n3", Addr: "c:1"}, {ID: "n4", Addr: "d:1"}}
	cluster := config.Cluster{InitialMembers: []string{"n1", "n2", "n3"}}
	assert.False(t, metaConfig("n2", peers, cluster.Joins("n2"), 1000).Join, "an initial member bootstraps")
	assert.True(t, metaConfig("n4", peers, cluster.Joins("n4"), 1000).Join, "a node outside initial_members joins the running cluster")
	assert.False(t, metaConfig("n4", peers, config.Cluster{}.Joins("n4"), 1000).Join, "without initial_members every peer bootstraps")
	joining := metaConfig("n4", peers, cluster.Joins("n4"), 1000)
	assert.Len(t, joining.Peers, 4, "a joining node still knows every peer's raft id and address")
	require.NoError(t, joining.Validate())
}

func TestOptionsFromJoiningNode(t *testing.T) {
	cfg := clusterConfig()
	cfg.Cluster.NodeID = "n3"
	cfg.Cluster.InitialMembers = []string{"n1", "n2"}
	require.NoError(t, cfg.Validate())
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	assert.True(t, opts.Node.Meta.Join)
}

func TestAdvertiseAddr(t *testing.T) {
	for _, c := range []struct{ httpAddr, clusterAddr, want string }{
		{":7942", "10.0.0.2:7943", "10.0.0.2:7942"},
		{"0.0.0.0:8000", "node-b.internal:7943", "node-b.internal:8000"},
		{"[::]:7942", "[fd00::2]:7943", "[fd00::2]:7942"},
		{"127.0.0.1:7952", "127.0.0.1:7953", "127.0.0.1:7952"},
		{"192.168.1.5:7942", "10.0.0.2:7943", "192.168.1.5:7942"}, // an explicit host is kept
	} {
		assert.Equal(t, c.want, config.AdvertiseAddr(c.httpAddr, c.clusterAddr), "http %s, cluster %s", c.httpAddr, c.clusterAddr)
	}
}

func TestOptionsFromRefusesSelfMissingFromPeers(t *testing.T) {
	cfg := clusterConfig()
	cfg.Cluster.NodeID = "n9" // Validate would refuse it too; OptionsFrom must not guess
	_, err := OptionsFrom(cfg)
	require.ErrorContains(t, err, `no entry for this node "n9"`)
}

func TestClusterTLSIsMutual(t *testing.T) {
	cfg := clusterConfig()
	cfg.Cluster.TLSCertFile, cfg.Cluster.TLSKeyFile, cfg.Cluster.TLSCAFile = writeTestPKI(t)
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	require.NotNil(t, opts.Cluster.TLS)
	assert.Equal(t, tls.RequireAndVerifyClientCert, opts.Cluster.TLS.ClientAuth)
	assert.Len(t, opts.Cluster.TLS.Certificates, 1)
	assert.NotNil(t, opts.Cluster.TLS.RootCAs)
	assert.NotNil(t, opts.Cluster.TLS.ClientCAs)

	require.NoError(t, os.WriteFile(cfg.Cluster.TLSCAFile, []byte("not pem"), 0o600))
	_, err = OptionsFrom(cfg)
	require.ErrorContains(t, err, "cluster.tls_ca_file (NARAD_CLUSTER_TLS_CA_FILE): "+cfg.Cluster.TLSCAFile+" holds no PEM certificate")
	cfg.Cluster.TLSKeyFile = filepath.Join(t.TempDir(), "missing.key")
	_, err = OptionsFrom(cfg)
	require.ErrorContains(t, err, "cluster.tls_key_file (NARAD_CLUSTER_TLS_KEY_FILE): open "+cfg.Cluster.TLSKeyFile)
}

// writeTestPKI writes a self-signed CA and a node certificate signed by it,
// and returns the certificate, key and CA file paths.
func writeTestPKI(t *testing.T) (certFile, keyFile, caFile string) {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTemplate := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	nodeKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	nodeTemplate := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "n2"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}}
	nodeDER, err := x509.CreateCertificate(rand.Reader, nodeTemplate, caTemplate, &nodeKey.PublicKey, caKey)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(nodeKey)
	require.NoError(t, err)
	certFile, keyFile, caFile = filepath.Join(dir, "node.crt"), filepath.Join(dir, "node.key"), filepath.Join(dir, "ca.crt")
	writePEM(t, certFile, "CERTIFICATE", nodeDER)
	writePEM(t, keyFile, "EC PRIVATE KEY", keyDER)
	writePEM(t, caFile, "CERTIFICATE", caDER)
	return certFile, keyFile, caFile
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600))
}

// startTestCluster starts size hosts in this process, on loopback ports,
// as one cluster without authentication.
func startTestCluster(t *testing.T, size int) []*Host {
	t.Helper()
	// Every address is drawn at once, so no two of them are the same port.
	ids, drawn := make([]string, size), freeLoopbackAddrs(t, 2*size)
	clusterAddrs, httpAddrs := drawn[:size], drawn[size:]
	var peers []string
	for i := range size {
		ids[i] = fmt.Sprintf("n%d", i+1)
		peers = append(peers, ids[i]+"@"+clusterAddrs[i])
	}
	hosts := make([]*Host, size)
	for i := range size {
		cfg := config.Default()
		cfg.Security.Enabled = false
		cfg.HTTP.Addr, cfg.Cluster.Addr, cfg.Cluster.NodeID, cfg.Cluster.Peers = httpAddrs[i], clusterAddrs[i], ids[i], peers
		cfg.Storage.DataDir = t.TempDir()
		require.NoError(t, cfg.Validate())
		opts, err := OptionsFrom(cfg)
		require.NoError(t, err)
		h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
		require.NoError(t, err)
		t.Cleanup(func() { _ = h.Shutdown() })
		hosts[i] = h
	}
	return hosts
}

// freeLoopbackAddrs returns count distinct loopback addresses that were
// free a moment ago, outside the kernel's ephemeral range (proc.FreeAddr).
// Drawing from port 0 and closing it let the kernel hand the same port out
// twice (a cluster address drawn again as an HTTP address, in CI), and let
// a peer's outgoing connection take a cluster port before its host bound it.
func freeLoopbackAddrs(t *testing.T, count int) []string {
	t.Helper()
	addrs := make([]string, count)
	for i := range count {
		addr, err := proc.FreeAddr()
		require.NoError(t, err)
		addrs[i] = addr
	}
	return addrs
}

// eventually polls condition every 20 ms until it holds or within passes
// (the test then fails with message). Real sockets and timers: the
// cluster needs a few election timeouts to form.
func eventually(t *testing.T, within time.Duration, message string, condition func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !condition() {
		if time.Now().After(deadline) {
			t.Fatal(message)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestThreeHostsFormOneCluster(t *testing.T) {
	hosts := startTestCluster(t, 3)
	eventually(t, 20*time.Second, "no single metadata leader in the metrics", func() bool {
		return len(leadersByMetrics(t, hosts)) == 1
	})
	leader := leadersByMetrics(t, hosts)[0]
	eventually(t, 20*time.Second, "the leader on "+leader.Addr()+" never became ready", func() bool {
		status, _ := call(t, leader, get("/readyz"))
		return status == http.StatusOK
	})

	// A topic created through the leader is known on every node: the
	// metadata travelled through the transport, both ways.
	status, body := call(t, leader, postJSON("/v1/topics", `{"name":"orders","partitions":3}`))
	require.Equal(t, http.StatusCreated, status, body)
	for _, h := range hosts {
		require.NotEmpty(t, h.ClusterAddr())
		eventually(t, 5*time.Second, "topic never reached "+h.Addr(), func() bool {
			status, _ := call(t, h, get("/v1/topics/orders"))
			return status == http.StatusOK
		})
	}
	_, metrics := call(t, leader, get("/metrics"))
	for _, h := range hosts {
		if h != leader {
			assert.Contains(t, metrics, `narad_peer_connected{peer="`+h.opts.Node.NodeID+`"} 1`)
		}
	}
	assert.Regexp(t, `narad_peer_delivered_total [1-9]`, metrics)
	assert.Contains(t, metrics, "narad_peer_step_errors_total 0")
	assert.Contains(t, metrics, "narad_peer_inbound_connections 2", "both other nodes dialed the leader")
	assert.Contains(t, metrics, "narad_peer_handshakes_in_flight 0")
}

// leadersByMetrics returns the hosts whose narad_meta_leader gauge is 1.
func leadersByMetrics(t *testing.T, hosts []*Host) []*Host {
	t.Helper()
	var leaders []*Host
	for _, h := range hosts {
		_, metrics := call(t, h, get("/metrics"))
		if strings.Contains(metrics, "\nnarad_meta_leader 1\n") {
			leaders = append(leaders, h)
		}
	}
	return leaders
}

func TestSingleHostReportsItselfLeader(t *testing.T) {
	h := testHost(t)
	eventually(t, 10*time.Second, "a single node must lead its own metastore", func() bool {
		return len(leadersByMetrics(t, []*Host{h})) == 1
	})
	_, metrics := call(t, h, get("/metrics"))
	assert.NotContains(t, metrics, "narad_peer_delivered_total", "a single node runs no transport")
	applied := regexp.MustCompile(`\nnarad_meta_applied_index ([0-9]+)\n`).FindStringSubmatch(metrics)
	require.Len(t, applied, 2, "the replica's applied index is exported")
	assert.NotEqual(t, "0", applied[1], "the leader applied its first entry")
	assert.Regexp(t, `\nnarad_meta_term [1-9][0-9]*\n`, metrics, "it was elected in a term")
}

// fakeTransport records what the loop asks of the transport.
type fakeTransport struct {
	sent     []msg.Envelope
	set      map[string]string
	removed  []string
	failures map[string]uint64
	// backingOff marks the peers whose transport waits out its backoff.
	backingOff map[string]bool
}

func (f *fakeTransport) Send(env msg.Envelope) { f.sent = append(f.sent, env) }
func (f *fakeTransport) SetPeer(id, address string) error {
	f.set[id] = address
	return nil
}
func (f *fakeTransport) RemovePeer(id string) { f.removed = append(f.removed, id) }
func (f *fakeTransport) ConnectAttempts() map[string]connectAttempts {
	attempts := map[string]connectAttempts{}
	for id, count := range f.failures {
		attempts[id] = connectAttempts{failures: count, backingOff: f.backingOff[id]}
	}
	return attempts
}

// onLoop runs f on h's loop goroutine and waits for it.
func onLoop(h *Host, f func()) {
	done := make(chan struct{})
	h.loop.post(func(*node.Node) {
		defer close(done)
		f()
	})
	<-done
}

func TestRefreshPeersForgetsNodesTheNodeNoLongerKnows(t *testing.T) {
	h := testHost(t)
	fake := &fakeTransport{set: map[string]string{}}
	onLoop(h, func() {
		h.loop.transport = fake
		defer func() { h.loop.transport = nil }()
		h.loop.peerAddrs = map[string]string{"gone": "10.0.0.9:7943"}
		h.loop.nextPeerRefresh = time.Time{}
		h.loop.refreshPeers()
		h.loop.peerAddrs["other"] = "10.0.0.8:7943"
		h.loop.refreshPeers() // within peerRefreshInterval: nothing happens
	})
	assert.Equal(t, []string{"gone"}, fake.removed, "a single node knows no peers: the stale entry goes")
	assert.Empty(t, fake.set)
}

func TestSendToAnUnknownPeerRefreshesTheAddressBookFirst(t *testing.T) {
	h := testHost(t)
	fake := &fakeTransport{set: map[string]string{}}
	envelope := msg.Envelope{From: h.opts.Node.NodeID, To: "newcomer", Message: msg.Notify{Topic: "t"}}
	onLoop(h, func() {
		h.loop.transport = fake
		defer func() { h.loop.transport = nil }()
		h.loop.peerAddrs = map[string]string{"gone": "10.0.0.9:7943"}
		h.loop.nextPeerRefresh = time.Now().Add(time.Hour)
		h.loop.send([]msg.Envelope{envelope, envelope})
	})
	assert.Equal(t, []string{"gone"}, fake.removed, "the refresh ran although it was not due, once")
	assert.Len(t, fake.sent, 2, "the envelopes were handed over after it")
}

func TestRefusedPeerMessageIsCountedNotFatal(t *testing.T) {
	h := testHost(t)
	onLoop(h, func() {
		h.loop.step(msg.Envelope{From: "stranger", To: h.opts.Node.NodeID, Message: &msg.Notify{Topic: "t"}})
	})
	_, metrics := call(t, h, get("/metrics"))
	assert.Contains(t, metrics, "narad_peer_step_errors_total 1")
	status, _ := call(t, h, get("/readyz"))
	assert.Equal(t, http.StatusOK, status, "the node keeps serving")
}

func TestUnreachablePeerIsReportedToTheNode(t *testing.T) {
	h := testHost(t)
	fake := &fakeTransport{set: map[string]string{}, failures: map[string]uint64{"n2": 0}}
	var first, second map[string]uint64
	onLoop(h, func() {
		h.loop.transport = fake
		defer func() { h.loop.transport = nil }()
		h.loop.checkUnreachable()
		first = h.loop.dialFailures
		fake.failures = map[string]uint64{"n2": 3}
		h.loop.nextPeerCheck = time.Time{}
		h.loop.checkUnreachable()
		second = h.loop.dialFailures
	})
	assert.Equal(t, uint64(0), first["n2"])
	assert.Equal(t, uint64(3), second["n2"], "the loop keeps the counts it reported")
}

// peerMarkLooks runs script on h's loop with a fake transport to peer
// "n2": each look advances the node's clock by afterMs, runs the loop's
// peer check and records whether the node marks n2 down.
func peerMarkLooks(h *Host, script func(fake *fakeTransport, look func(afterMs int64))) []bool {
	fake := &fakeTransport{set: map[string]string{}, failures: map[string]uint64{"n2": 0}, backingOff: map[string]bool{}}
	var marks []bool
	onLoop(h, func() {
		h.loop.transport = fake
		defer func() { h.loop.transport = nil }()
		nowMs := h.loop.clock().UnixMilli() + 1
		script(fake, func(afterMs int64) {
			nowMs += afterMs
			h.loop.node.Tick(nowMs)
			h.loop.nextPeerCheck = time.Time{}
			h.loop.checkUnreachable()
			marks = append(marks, h.loop.node.PeerMarkedDown("n2"))
		})
	})
	return marks
}

// TestAPeerTheTransportBacksOffFromStaysMarkedDown: the node's mark of a
// peer down lasts PeerDownMs (2 s) from its last report, and the
// transport waits up to ReconnectBackoffMax (5 s) after a failed connect
// before it tries again. The loop renews a mark that lapses while the
// transport backs off, so the peer stays marked through the pause (a
// forward sent then would wait in the queue for the next attempt instead
// of a prompt 503); the pause's end ends the renewed mark.
// narad_peer_marked_down follows the node's mark.
func TestAPeerTheTransportBacksOffFromStaysMarkedDown(t *testing.T) {
	h := testHost(t)
	downMs := h.opts.Node.PeerDownMs
	marks := peerMarkLooks(h, func(fake *fakeTransport, look func(afterMs int64)) {
		look(0)                                              // no attempt failed yet
		fake.failures["n2"], fake.backingOff["n2"] = 1, true // a connect failed: the pause begins
		look(10)
		look(downMs - 10) // the first report's mark would end here
		look(downMs)      // still pausing, no new failure: renewed
		fake.backingOff["n2"] = false
		look(1)      // the pause ended: the transport dials at the next send
		look(downMs) // and nothing failed since
	})
	assert.Equal(t, []bool{false, true, true, true, false, false}, marks)
	_, metrics := call(t, h, get("/metrics"))
	assert.Contains(t, metrics, `narad_peer_marked_down{peer="n2"} 0`)
}

// Property: cluster.meta_snapshot_entries reaches the metastore, and the
// kept tail never exceeds half the interval (so a small interval still
// compacts, and a node that joins starts from a snapshot).
func TestMetaSnapshotInterval(t *testing.T) {
	peers := []config.Peer{{ID: "n1", Addr: "a:1"}, {ID: "n2", Addr: "b:1"}, {ID: "n3", Addr: "c:1"}}
	standard := metaConfig("n1", peers, false, config.Default().Cluster.MetaSnapshotEntries)
	assert.Equal(t, uint64(1000), standard.SnapshotEntries)
	assert.Equal(t, uint64(100), standard.SnapshotTailEntries)
	small := metaConfig("n1", peers, false, 20)
	assert.Equal(t, uint64(20), small.SnapshotEntries)
	assert.Equal(t, uint64(10), small.SnapshotTailEntries)
	require.NoError(t, small.Validate())

	cfg := clusterConfig()
	cfg.Cluster.MetaSnapshotEntries = 30
	require.NoError(t, cfg.Validate())
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	assert.Equal(t, uint64(30), opts.Node.Meta.SnapshotEntries)
}

// TestOptionsFromRefusesConnectionsOverTheDescriptorShare: an
// http.max_connections over a quarter of the descriptor limit is refused
// with the configuration's other problems, before the host writes
// anything to its data directory, together with an open_logs_max over
// its share.
func TestOptionsFromRefusesConnectionsOverTheDescriptorShare(t *testing.T) {
	limit, err := descriptorLimit()
	require.NoError(t, err)
	cfg := config.Default()
	cfg.Security.Enabled = false
	cfg.Storage.DataDir = t.TempDir()
	cfg.HTTP.MaxConnections = int(limit/connectionsShareDivisor) + 1
	_, err = OptionsFrom(cfg)
	require.ErrorContains(t, err, "http.max_connections")
	cfg.Storage.OpenLogsMax = int(limit) + 1
	_, err = OptionsFrom(cfg)
	require.ErrorContains(t, err, "http.max_connections")
	require.ErrorContains(t, err, "storage.open_logs_max")
}

// TestAPeerIsTriedAgainOnceTheBackoffEnds: the reports made while the
// transport backs off must not outlast the pause. Once it ends the
// transport dials at the next send, as it did when the mark from the
// failure lapsed before those reports existed; a mark that went on for
// PeerDownMs past the pause refused the partitions of a peer that had
// come back (one that sends nothing here is not heard from to clear it).
// A pause shorter than PeerDownMs leaves the failure's own mark as it was.
func TestAPeerIsTriedAgainOnceTheBackoffEnds(t *testing.T) {
	h := testHost(t)
	downMs := h.opts.Node.PeerDownMs
	marks := peerMarkLooks(h, func(fake *fakeTransport, look func(afterMs int64)) {
		fake.failures["n2"], fake.backingOff["n2"] = 1, true // a long pause (5 s at most)
		look(0)
		for range 5 {
			look(downMs / 2)
		}
		fake.backingOff["n2"] = false
		look(1) // the pause is over: forwards may go, and dial it again
		fake.failures["n2"], fake.backingOff["n2"] = 2, true
		look(1) // that attempt failed: a short pause
		fake.backingOff["n2"] = false
		look(downMs / 2) // the failure's mark lasts PeerDownMs, as before
		look(downMs / 2)
	})
	assert.Equal(t, []bool{true, true, true, true, true, true, false, true, true, false}, marks)
}

// A connection the peer closed at once counts as a failed attempt: a peer
// of another wire version authenticates, then closes at the first frame,
// and was never reported unreachable, so each forward to it waited out
// the forward timeout, again after every lapse of the mark (peer review,
// seen with a node of another wire version in a three-node cluster).
func TestAShortConnectionIsAFailedAttempt(t *testing.T) {
	attempts := connectAttemptsOf(peer.PeerStats{DialFailures: 1, AuthFailures: 2, ShortConnections: 4, BackingOff: true})
	require.Equal(t, connectAttempts{failures: 7, backingOff: true}, attempts)
}
