package host

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Past the HTTP connection limit a new connection is answered 503 with
// Retry-After and closed, within refusalRequestTimeout plus
// refusalLingerTimeout (a client that sends nothing is answered when the
// first ends); a slot freed by a closed connection admits the next one.
func TestHTTPConnectionLimit(t *testing.T) {
	const connectionsMax = 3
	h, _ := startLimited(t, connectionsMax, false)

	dial := func() net.Conn {
		conn, err := net.Dial("tcp", h.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	// served asks for the metrics on conn (not a probe: those are
	// answered over the limit too).
	served := func(conn net.Conn) (*http.Response, error) {
		if _, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n"); err != nil {
			return nil, err
		}
		response, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err == nil {
			_, err = io.ReadAll(response.Body)
		}
		return response, err
	}
	var held []net.Conn
	for range connectionsMax {
		conn := dial()
		response, err := served(conn)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, response.StatusCode)
		held = append(held, conn)
	}
	requireRefused(t, dial())
	requireAnsweredRefused(t, dial()) // a client that sends nothing is answered once the refusal's wait ends

	require.NoError(t, held[0].Close())
	require.Eventually(t, func() bool {
		conn, err := net.Dial("tcp", h.Addr())
		if err != nil {
			return false
		}
		defer conn.Close()
		response, err := served(conn)
		return err == nil && response.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond, "a freed slot admits a new connection")

	metrics := metricsText(t, held[1])
	require.Contains(t, metrics, "narad_http_connections_max 3")
	require.Regexp(t, `narad_http_connections_refused_total [1-9]`, metrics)
}

// A client over the connection limit that sent a request with a body
// reads the 503, on plain HTTP and over TLS: the refusal answers once the
// request's header arrived (an answer before it reached Go's transport,
// under load, as an unsolicited response, and it failed the request), and
// discards the body after its FIN instead of closing with it unread,
// whose reset destroyed the answer before the client read it (a chunked
// body of 64 KiB: some of 100 clients in every run).
func TestHTTPConnectionLimitAnswersClientsThatSentABody(t *testing.T) {
	for _, secured := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "tls"}[secured], func(t *testing.T) {
			h, pool := startLimited(t, 1, secured)
			scheme, transport := "http", &http.Transport{DisableKeepAlives: true}
			if secured {
				scheme, transport.TLSClientConfig = "https", &tls.Config{RootCAs: pool}
			}
			client := &http.Client{Transport: transport, Timeout: 10 * time.Second}
			dial := func() (net.Conn, error) { return net.Dial("tcp", h.Addr()) }
			if secured {
				dial = func() (net.Conn, error) { return tls.Dial("tcp", h.Addr(), transport.TLSClientConfig) }
			}
			held, err := dial() // the one slot, held open
			require.NoError(t, err)
			t.Cleanup(func() { _ = held.Close() })
			require.Equal(t, http.StatusOK, mustServe(t, held).StatusCode)

			body := strings.Repeat("x", 64<<10)
			for i := range 100 {
				response, err := client.Post(scheme+"://"+h.Addr()+"/v1/topics/t/messages", "application/json", struct{ io.Reader }{strings.NewReader(body)}) // chunked: no length
				require.NoError(t, err, "client %d over the limit", i)
				require.Equal(t, http.StatusServiceUnavailable, response.StatusCode)
				require.NoError(t, response.Body.Close())
			}
			require.Regexp(t, `narad_http_connections_refused_total 100\b`, metricsText(t, held))
		})
	}
}

// Past refusalsMax refusals under way (64 connections over the limit
// that send nothing hold theirs for refusalRequestTimeout), a new
// connection over the limit sheds the oldest refusal, which is answered
// 503 at once and closed, and waits for its own request: the accept loop
// answered it 503 at once, unread, so that a flood of silent connections
// refused every probe.
func TestHTTPConnectionLimitShedsTheOldestRefusal(t *testing.T) {
	h, _ := startLimited(t, 1, false)
	held, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	require.Equal(t, http.StatusOK, mustServe(t, held).StatusCode)
	var silent []net.Conn
	for range refusalsMax {
		conn, err := net.Dial("tcp", h.Addr())
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		silent = append(silent, conn)
	}
	require.Eventually(t, func() bool {
		return strings.Contains(metricsText(t, held), fmt.Sprintf("narad_http_connection_refusals_in_flight %d\n", refusalsMax))
	}, 5*time.Second, 10*time.Millisecond, "every refusal under way")
	time.Sleep(50 * time.Millisecond) // every refusal reads: the oldest is the one shed

	over, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = over.Close() })
	require.NoError(t, silent[0].SetReadDeadline(time.Now().Add(refusalRequestTimeout/2)))
	requireAnsweredRefused(t, silent[0]) // shed: answered before its refusal's wait ended
	_, err = silent[0].Read(make([]byte, 1))
	require.ErrorIs(t, err, io.EOF, "and closed")

	require.NoError(t, over.SetReadDeadline(time.Now().Add(refusalRequestTimeout/2)))
	requireRefused(t, over) // answered once its request arrived
	metrics := metricsText(t, held)
	require.Contains(t, metrics, "narad_http_connection_refusals_shed_total 1\n")
	require.Contains(t, metrics, "narad_http_connections_refused_total 2\n")
}

// The refusal shed is never one that is answering; of a remote host
// holding refusalsFloodMin of the others, if one does; of those, a silent
// one (its refusal reads and heard nothing), else one that sent part of a
// request, else one answered and lingering, else one whose refusal has
// not read yet; the oldest of its kind.
func TestShedIndex(t *testing.T) {
	refusal := func(host string, phase int, reading bool, heard int64) *refusalConn {
		conn := &refusalConn{host: host, phase: phase}
		conn.reading.Store(reading)
		conn.heard.Store(heard)
		return conn
	}
	answering := refusal("a", refusalAnswering, true, 40)
	starting := refusal("a", refusalAwaiting, false, 0)
	lingering := refusal("a", refusalLingering, true, 40)
	partial := refusal("a", refusalAwaiting, true, 3)
	silent := refusal("a", refusalAwaiting, true, 0)
	require.Equal(t, -1, shedIndex(nil))
	require.Equal(t, -1, shedIndex([]*refusalConn{answering, answering}))
	require.Equal(t, 1, shedIndex([]*refusalConn{answering, starting, starting}))
	require.Equal(t, 2, shedIndex([]*refusalConn{starting, answering, lingering, lingering}))
	require.Equal(t, 2, shedIndex([]*refusalConn{lingering, starting, partial, partial}))
	require.Equal(t, 4, shedIndex([]*refusalConn{starting, lingering, partial, answering, silent, silent}))

	probe := refusal("probe", refusalAwaiting, true, 0)
	flood := []*refusalConn{probe}
	for range refusalsFloodMin - 1 {
		flood = append(flood, refusal("flood", refusalAwaiting, false, 0))
	}
	require.Equal(t, 0, shedIndex(flood), "below refusalsFloodMin from one host, the kind decides")
	flood = append(flood, refusal("flood", refusalAwaiting, false, 0))
	require.Equal(t, 1, shedIndex(flood), "at refusalsFloodMin from one host, one of that host's")
	flood = append(flood, refusal("flood", refusalAnswering, true, 0), refusal("flood", refusalAwaiting, true, 0))
	require.Equal(t, len(flood)-1, shedIndex(flood), "of that host's, the silent one")
}

// A TLS refusal sets no deadline past refusalRequestTimeout plus
// refusalLingerTimeout, even when the client stops reading after the
// handshake: crypto/tls writes its close_notify under a write deadline of
// its own, 5 s away, which held the refusal (its goroutine, descriptor
// and slot) for 6 s (net.Pipe has no buffer, so the write blocks at once).
func TestATLSRefusalSetsNoDeadlinePastItsEnd(t *testing.T) {
	certFile, keyFile, pool := writeCertificate(t)
	certificate, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	server, client := net.Pipe()
	t.Cleanup(func() { _ = client.Close() })
	recorder := &deadlineRecorder{Conn: server}
	start := time.Now()
	done := make(chan struct{})
	go func() {
		defer close(done)
		answerRefusal(newRefusalConn(recorder), &tls.Config{Certificates: []tls.Certificate{certificate}}, nil, unshedSteps{})
	}()
	secured := tls.Client(client, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	require.NoError(t, secured.Handshake())
	_, err = io.WriteString(secured, "GET / HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	<-done // the client reads nothing more
	require.False(t, recorder.latest().After(start.Add(refusalRequestTimeout+refusalLingerTimeout+time.Second)),
		"a deadline %v after the refusal's start", recorder.latest().Sub(start))
}

// unshedSteps are the steps of a refusal that no listener sheds.
type unshedSteps struct{}

func (unshedSteps) settle(*refusalConn) bool { return true }
func (unshedSteps) count(bool)               {}
func (unshedSteps) answered(*refusalConn)    {}

// deadlineRecorder remembers the latest deadline set on its connection.
type deadlineRecorder struct {
	net.Conn
	mu       sync.Mutex
	deadline time.Time
}

func (r *deadlineRecorder) note(t time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t.After(r.deadline) {
		r.deadline = t
	}
}

func (r *deadlineRecorder) latest() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deadline
}

func (r *deadlineRecorder) SetDeadline(t time.Time) error {
	r.note(t)
	return r.Conn.SetDeadline(t)
}

func (r *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	r.note(t)
	return r.Conn.SetWriteDeadline(t)
}

// A host's shutdown cuts the refusals under way short and waits for them:
// they outlived it by up to a second and a half, each with its descriptor
// and goroutine.
func TestShutdownEndsTheRefusalsUnderWay(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.HTTPConnectionsMax = 1
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	held, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	require.Equal(t, http.StatusOK, mustServe(t, held).StatusCode)
	silent, err := net.Dial("tcp", h.Addr()) // over the limit; its refusal waits for a request
	require.NoError(t, err)
	t.Cleanup(func() { _ = silent.Close() })
	require.Eventually(t, func() bool {
		return strings.Contains(metricsText(t, held), "narad_http_connection_refusals_in_flight 1\n")
	}, 5*time.Second, 10*time.Millisecond, "the refusal is under way")

	require.NoError(t, held.Close())
	require.NoError(t, h.Shutdown())
	stacks := make([]byte, 1<<20)
	require.NotContains(t, string(stacks[:runtime.Stack(stacks, true)]), "answerRefusal", "a refusal outlived the shutdown")
}

// mustServe asks for healthz on an admitted connection.
func mustServe(t *testing.T, conn net.Conn) *http.Response {
	t.Helper()
	_, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	response, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	_, err = io.ReadAll(response.Body)
	require.NoError(t, err)
	return response
}

// startLimited starts a host on loopback that admits connectionsMax HTTP
// connections at once, serving TLS when secured; pool then holds the CA
// of its certificate.
func startLimited(t *testing.T, connectionsMax int, secured bool) (h *Host, pool *x509.CertPool) {
	t.Helper()
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.HTTPConnectionsMax = connectionsMax
	if secured {
		var certFile, keyFile string
		certFile, keyFile, pool = writeCertificate(t)
		opts.Security.TLSCertFile, opts.Security.TLSKeyFile = certFile, keyFile
	}
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	return h, pool
}

// metricsText reads /metrics on an admitted connection.
func metricsText(t *testing.T, conn net.Conn) string {
	t.Helper()
	_, err := io.WriteString(conn, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	response, err := http.ReadResponse(bufio.NewReader(conn), nil)
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	return string(body)
}

// On a TLS listener the answer past the connection limit is a 503 spoken
// over TLS: written in plain text, it reached the client as a malformed
// handshake record ("first record does not look like a TLS handshake").
func TestHTTPConnectionLimitOverTLS(t *testing.T) {
	h, pool := startLimited(t, 1, true)

	dial := func() *tls.Conn {
		conn, err := tls.Dial("tcp", h.Addr(), &tls.Config{RootCAs: pool})
		require.NoError(t, err)
		t.Cleanup(func() { _ = conn.Close() })
		return conn
	}
	require.Equal(t, http.StatusOK, mustServe(t, dial()).StatusCode, "the first connection is admitted")

	requireRefused(t, dial())
}

// requireRefused sends a request on a connection over the limit and reads
// the answer: 503, with Retry-After and the error in its body.
func requireRefused(t *testing.T, over net.Conn) {
	t.Helper()
	_, err := io.WriteString(over, "GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	requireAnsweredRefused(t, over)
}

// requireAnsweredRefused reads the answer to a connection over the limit.
func requireAnsweredRefused(t *testing.T, over net.Conn) {
	t.Helper()
	response, err := http.ReadResponse(bufio.NewReader(over), nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusServiceUnavailable, response.StatusCode)
	require.Equal(t, "1", response.Header.Get("Retry-After"))
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	require.Contains(t, string(body), "too many connections")
}

// Past the HTTP connection limit the liveness and readiness probes are
// still answered, by the refusal, with the API's own answers (and the
// connection closed): a flood of idle connections made /healthz answer
// 503, and an orchestrator's liveness probe would have restarted a
// healthy node. Any other request over the limit is refused as before.
func TestProbesOverTheConnectionLimitAreAnswered(t *testing.T) {
	h, _ := startLimited(t, 1, false)
	held, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	require.Equal(t, http.StatusOK, mustServe(t, held).StatusCode, "the one slot is taken")
	requireReady(t, held) // the node elects itself and joins

	for _, probe := range []struct{ target, body string }{
		{"/healthz", `{"status":"ok"}`}, {"/readyz", `{"status":"ready"}`}, {"/healthz?verbose=1", `{"status":"ok"}`},
	} {
		over, err := net.Dial("tcp", h.Addr())
		require.NoError(t, err)
		_, err = io.WriteString(over, "GET "+probe.target+" HTTP/1.1\r\nHost: test\r\n\r\n")
		require.NoError(t, err)
		response, err := http.ReadResponse(bufio.NewReader(over), nil)
		require.NoError(t, err)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, response.StatusCode, "%s over the limit: %s", probe.target, body)
		require.JSONEq(t, probe.body, string(body), "%s over the limit", probe.target)
		require.True(t, response.Close, "the probe's connection closes after it")
		require.Equal(t, "application/json", response.Header.Get("Content-Type"))
		_ = over.Close()
	}
	for _, refused := range []string{"POST /healthz", "GET /healthzz", "GET /v1/topics", "HEAD /readyz"} {
		over, err := net.Dial("tcp", h.Addr())
		require.NoError(t, err)
		_, err = io.WriteString(over, refused+" HTTP/1.1\r\nHost: test\r\nContent-Length: 0\r\n\r\n")
		require.NoError(t, err)
		requireAnsweredRefused(t, over)
		_ = over.Close()
	}
	metrics := metricsText(t, held)
	require.Contains(t, metrics, "narad_http_connection_probes_answered_total 3", "the probes answered over the limit are counted")
	require.Contains(t, metrics, "narad_http_connections_refused_total 4", "as probes, not as refused connections")
}

// A flood of connections over the limit that send nothing fails no probe:
// past refusalsMax refusals under way, the accept loop answered each new
// connection 503 at once, unread, a probe's included, so that 100 silent
// connections a second made 47 of 52 /readyz answer 503 (an audit, with
// http.max_connections 64); a liveness probe failing so gets a healthy node
// restarted. A new connection now sheds the oldest refusal under way
// instead, and a probe, which sends its request at once, is answered
// unless refusalsMax more connections arrive before its request is read:
// while a probe is out the flood dials at most half that many (a starved
// machine, under the race detector beside other tests, read a probe's
// request only after the flood had dialed past it and shed it).
func TestProbesAreAnsweredThroughAFloodOfSilentConnections(t *testing.T) {
	h, _ := startLimited(t, 1, false)
	held, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = held.Close() })
	requireReady(t, held)

	var dialed atomic.Int64
	probeFrom := atomic.Int64{} // while a probe is out: the flood's dial count when it left, plus one; else 0
	stop, flooded := make(chan struct{}), make(chan struct{})
	go func() { // silent connections, as fast as one goroutine dials them; the last 256 kept open
		defer close(flooded)
		var open []net.Conn
		defer func() {
			for _, conn := range open {
				_ = conn.Close()
			}
		}()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if from := probeFrom.Load(); from > 0 && dialed.Load()-(from-1) >= refusalsMax/2 {
				time.Sleep(time.Millisecond) // the probe out must not be shed by this flood alone
				continue
			}
			conn, err := net.Dial("tcp", h.Addr())
			if err != nil {
				continue
			}
			dialed.Add(1)
			open = append(open, conn)
			if len(open) > 256 {
				_ = open[0].Close()
				open = open[1:]
			}
		}
	}()
	require.Eventually(t, func() bool {
		return strings.Contains(metricsText(t, held), fmt.Sprintf("narad_http_connection_refusals_in_flight %d\n", refusalsMax))
	}, 5*time.Second, 10*time.Millisecond, "every refusal under way")
	const probes = 20
	before := dialed.Load()
	for i := range probes {
		target := []string{"/healthz", "/readyz"}[i%2]
		for dialed.Load() < before+int64(i+1)*refusalsMax { // refusalsMax silent ones since the last probe: every refusal under way shed at least once
			time.Sleep(time.Millisecond)
		}
		probeFrom.Store(dialed.Load() + 1)
		over, err := net.Dial("tcp", h.Addr())
		require.NoError(t, err)
		require.NoError(t, over.SetDeadline(time.Now().Add(refusalRequestTimeout/2)))
		_, err = io.WriteString(over, "GET "+target+" HTTP/1.1\r\nHost: test\r\n\r\n")
		require.NoError(t, err)
		response, err := http.ReadResponse(bufio.NewReader(over), nil)
		require.NoError(t, err, "probe %d, %s", i, target)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, response.StatusCode, "probe %d, %s through the flood: %s", i, target, body)
		_ = over.Close()
		probeFrom.Store(0)
	}
	close(stop)
	<-flooded
	t.Logf("%d silent connections during %d probes", dialed.Load()-before, probes)
	metrics := metricsText(t, held)
	require.Contains(t, metrics, fmt.Sprintf("narad_http_connection_probes_answered_total %d\n", probes))
	require.Regexp(t, `narad_http_connection_refusals_shed_total [1-9]`, metrics)
}

// requireReady waits, on an admitted connection, until the node answers
// /readyz 200 (it elects itself and joins).
func requireReady(t *testing.T, held net.Conn) {
	t.Helper()
	reader := bufio.NewReader(held)
	require.Eventually(t, func() bool {
		_, err := io.WriteString(held, "GET /readyz HTTP/1.1\r\nHost: test\r\n\r\n")
		require.NoError(t, err)
		response, err := http.ReadResponse(reader, nil)
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, response.Body)
		require.NoError(t, err)
		return response.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond, "the node gets ready")
}
