package host

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"narad/auth"
	"narad/httpapi"
	"narad/httpserve"
)

// The HTTP connection limit's derivation and its refusal.
const (
	// connectionsShareDivisor: HTTP connections may use 1/4 of the
	// descriptor limit.
	connectionsShareDivisor = 4
	// connectionsDerivedMin and connectionsDerivedMax clamp the derived
	// limit.
	connectionsDerivedMin = 64
	connectionsDerivedMax = 65_536
	// A refusal of a connection over the limit runs beside the accept
	// loop. refusalRequestTimeout bounds its first part: on a TLS listener
	// the handshake (a plain answer would reach the client as a malformed
	// handshake record, not as a 503), then the wait for the request's
	// header, which the answer follows (written before, it can reach the
	// client as an unsolicited response on an idle connection).
	// refusalLingerTimeout bounds the rest: the answer, its FIN, and the
	// discarding of what else the client sent (its body) until it closes;
	// a connection closed with input unread is reset, and the reset can
	// destroy the 503 before the client reads it (measured: 1 to 9 in 100
	// clients that had sent a request got a broken pipe instead).
	refusalRequestTimeout = time.Second
	refusalLingerTimeout  = 500 * time.Millisecond
	// refusalWriteTimeout bounds the write of a refusal answered in the
	// accept loop, past refusalsMax (it fits in the socket buffer; a peer
	// that does not read cannot hold the accept loop).
	refusalWriteTimeout = 100 * time.Millisecond
	// refusalDrainBytesMax bounds the input a refusal reads, before its
	// answer and after it; a client that sends more may see a reset.
	refusalDrainBytesMax = 1 << 20
	// refusalsMax bounds the refusals under way at once, each holding its
	// descriptor and a goroutine for at most refusalRequestTimeout plus
	// refusalLingerTimeout. Past it a new connection over the limit sheds
	// one of them (shedIndex) and takes its place: the shed one is closed,
	// answered 503 first if it is plain and was not answered yet. The
	// newcomer is not refused unread: a probe sends its request at once
	// and is answered unless refusalsMax more connections arrive before
	// its request does, while a flood of connections that send nothing
	// only sheds its own. Only the refusals whose request arrived, whose
	// answer is being decided and written (microseconds), are never shed;
	// when all are such, the new connection is answered by the accept loop
	// (plain HTTP) or closed unanswered (TLS), and counted as refused.
	refusalsMax = 64
	// refusalsFloodMin is how many refusals under way from one remote
	// host make it the one whose refusals are shed first, as for the peer
	// port's handshakes: a flood from one address sheds its own, not the
	// probe of an orchestrator at another.
	refusalsFloodMin = refusalsMax / 4
	// requestLineKeptBytesMax bounds the start of a refused request's
	// first line that its refusal keeps, to tell a probe (probePaths);
	// a longer target is no probe's.
	requestLineKeptBytesMax = 64
)

// probePaths are the routes a refusal serves instead of refusing them:
// liveness and readiness. A probe answered 503 during a flood of idle
// connections would have its node restarted, or taken out of service,
// though it is healthy. They cost the refusal no more than its 503 (a
// flag and the node's readiness, no body, no loop round), within the
// refusal's own bounds (refusalsMax at once). /metrics is not among
// them: a scrape can be megabytes.
var probePaths = map[string]bool{"/healthz": true, "/readyz": true}

// refusalBody is the body of the answer to a connection over the limit;
// refusal is the whole answer, with the Retry-After of every 503
// (httpapi.RetryAfterSeconds) and the body's length derived, not typed.
const refusalBody = `{"error":"too many connections to this server; retry"}` + "\n"

var refusal = []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: %d\r\n"+
	"Connection: close\r\nContent-Length: %d\r\n\r\n%s", httpapi.RetryAfterSeconds, len(refusalBody), refusalBody))

// connectionsCap derives the HTTP connection limit from the descriptor
// limit when configured is 0, and refuses a configured limit over the
// connections' share of it: idle clients up to such a limit would take
// the descriptors the partition logs need (a produce would then fail
// with a storage error instead of the client getting a 503).
func connectionsCap(configured int, limit uint64) (int, error) {
	share := limit / connectionsShareDivisor
	if configured == 0 {
		return int(min(max(share, connectionsDerivedMin), connectionsDerivedMax)), nil
	}
	if uint64(configured) > share {
		return 0, fmt.Errorf("http.max_connections %d needs as many file descriptors, more than a quarter of the process limit %d: "+
			"raise the limit (ulimit -n) or lower the setting (at most %d here)", configured, limit, share)
	}
	return configured, nil
}

// limitListener accepts at most max connections open at once; a
// connection past it is answered 503 and closed beside the accept loop
// (refusalsMax at once, each for at most refusalRequestTimeout plus
// refusalLingerTimeout), so that it holds its descriptor only that long.
// Safe for concurrent use.
type limitListener struct {
	net.Listener
	// max is fixed at creation, > 0.
	max int
	// tlsConfig is the server's TLS configuration, nil for plain HTTP;
	// refusals speak TLS with it. Fixed at creation.
	tlsConfig *tls.Config
	// refusalsMu guards underWay, closed and the phase and shed of every
	// refusal under way. underWay holds the refusals under way in the order
	// of their arrival (len <= refusalsMax): each holds its descriptor and
	// its goroutine; a refusal shed leaves it at once (its socket closed),
	// its goroutine soon after. closed: Close ran (no refusal starts after
	// it). refusalsDone counts the refusals' goroutines, which Close waits
	// for.
	refusalsMu   sync.Mutex
	underWay     []*refusalConn
	closed       bool
	refusalsDone sync.WaitGroup
	// mu guards open. Invariant: 0 <= open <= max.
	mu   sync.Mutex
	open int
	// probes answers the probePaths of refused connections; nil: refused
	// like the rest. Set by answerProbesWith before the first Accept,
	// then read only.
	probes http.Handler
	// gauges and counters of the limit.
	openGauge      prometheus.Gauge
	refused        prometheus.Counter
	probesAnswered prometheus.Counter
	refusing       prometheus.Gauge
	shed           prometheus.Counter
}

// newLimitListener wraps inner and registers the connection metrics;
// tlsConfig is the TLS configuration of the listener above it (nil: plain
// HTTP), which the refusals use.
func newLimitListener(inner net.Listener, max int, tlsConfig *tls.Config, reg prometheus.Registerer) *limitListener {
	l := &limitListener{Listener: inner, max: max, tlsConfig: tlsConfig,
		openGauge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
			Name: "connections_open", Help: "HTTP connections open now."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: "connections_refused_total", Help: "HTTP connections refused because the connection limit was reached: answered 503 (a refusal shed before its request arrived: a plain one answered at once, a TLS one closed unanswered); probes answered over the limit are not counted."}),
		probesAnswered: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: "connection_probes_answered_total", Help: "Liveness and readiness probes (GET /healthz, /readyz) answered on connections over the connection limit."}),
		refusing: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
			Name: "connection_refusals_in_flight", Help: fmt.Sprintf("Refusals of connections over the limit under way (at most %d).", refusalsMax)}),
		shed: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: "connection_refusals_shed_total", Help: fmt.Sprintf("Refusals under way closed to make room for a newer connection over the limit, at %d under way (a plain one not answered yet is answered 503 first).", refusalsMax)}),
	}
	maxGauge := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
		Name: "connections_max", Help: "Limit of the HTTP connections open at once."})
	maxGauge.Set(float64(max))
	reg.MustRegister(l.openGauge, l.refused, l.probesAnswered, l.refusing, l.shed, maxGauge)
	return l
}

// count counts a refusal once its answer is decided: a probe answered,
// or a connection refused.
func (l *limitListener) count(probed bool) {
	if probed {
		l.probesAnswered.Inc()
		return
	}
	l.refused.Inc()
}

// answerProbesWith makes refusals answer the probes (probePaths) with
// handler, the API's. Call it before the first Accept.
func (l *limitListener) answerProbesWith(handler http.Handler) { l.probes = handler }

// Accept returns the next connection under the limit, refusing those
// over it.
func (l *limitListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit() {
			return &limitedConn{Conn: conn, listener: l}, nil
		}
		l.refuse(conn)
	}
}

// refuse answers a connection over the limit 503 and closes it, beside
// the accept loop. At refusalsMax refusals under way it sheds one to make
// room (admitRefusal); when none can be shed (all are writing their
// answer) a plain connection is answered at once in the accept loop,
// within refusalWriteTimeout, and closed (its unread request, if any, may
// reset it), and a TLS one, whose answer would need a handshake, is closed
// unanswered. Best effort: the client may be gone.
func (l *limitListener) refuse(conn net.Conn) {
	refusing := newRefusalConn(conn)
	victim, started := l.admitRefusal(refusing)
	if victim != nil {
		l.shedRefusal(victim)
		// Let the refusals' goroutines read before the next accept: under
		// a flood Accept never blocks, and the loop ran its whole time
		// slice, accepting hundreds, shedding refusals whose goroutine had
		// not yet read the probe request waiting for it (in
		// TestProbesAreAnsweredThroughAFloodOfSilentConnections, a probe
		// in 20 or so was refused so).
		runtime.Gosched()
	}
	if !started {
		l.refused.Inc()
		if l.tlsConfig == nil {
			_ = conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
			_, _ = conn.Write(refusal)
		}
		_ = conn.Close()
		return
	}
	go func() {
		defer l.endRefusal(refusing)
		answerRefusal(refusing, l.tlsConfig, l.probes, l)
	}()
}

// The phases of a refusal under way, for shedding.
const (
	// refusalAwaiting: in its TLS handshake or waiting for the request's
	// header; not counted yet.
	refusalAwaiting = iota
	// refusalAnswering: its request arrived (or it failed); the refusal
	// decides and writes its answer and counts it. Never shed.
	refusalAnswering
	// refusalLingering: the answer is out; the refusal discards what the
	// client still sends until it closes.
	refusalLingering
)

// admitRefusal records a refusal under way on conn, unless the listener
// is closed. At refusalsMax it first takes one out to make room
// (shedIndex), marked shed, and returns it for the caller to close; when
// none can be shed, conn is not admitted.
func (l *limitListener) admitRefusal(conn *refusalConn) (victim *refusalConn, started bool) {
	l.refusalsMu.Lock()
	defer l.refusalsMu.Unlock()
	if l.closed {
		return nil, false
	}
	if len(l.underWay) >= refusalsMax {
		index := shedIndex(l.underWay)
		if index < 0 {
			return nil, false
		}
		victim = l.underWay[index]
		victim.shed = true
		l.underWay = slices.Delete(l.underWay, index, index+1)
	}
	l.underWay = append(l.underWay, conn)
	l.refusalsDone.Add(1)
	l.refusing.Set(float64(len(l.underWay)))
	return victim, true
}

// shedIndex picks the refusal under way to shed, -1 when all are
// answering (refusalAnswering). When one remote host holds at least
// refusalsFloodMin of the others (on a tie, the host that reached the
// count first), it is one of that host's, so that a flood from one
// address sheds its own refusals and not a probe from another. Of those,
// the lowest shedRank, oldest first: a connection that has sent nothing
// since its refusal began reading goes before one that may have sent its
// request already (whose goroutine has not read yet), so that a probe is
// not shed for a scheduling delay while silent ones remain. refusalsMu is
// held.
func shedIndex(underWay []*refusalConn) int {
	counts := make(map[string]int, len(underWay))
	busiest := ""
	for _, conn := range underWay {
		if conn.phase == refusalAnswering {
			continue
		}
		counts[conn.host]++
		if counts[conn.host] > counts[busiest] {
			busiest = conn.host
		}
	}
	chosen, chosenRank := -1, 0
	for index, conn := range underWay {
		if conn.phase == refusalAnswering || counts[busiest] >= refusalsFloodMin && conn.host != busiest {
			continue
		}
		if rank := conn.shedRank(); chosen < 0 || rank < chosenRank {
			chosen, chosenRank = index, rank
		}
	}
	return chosen
}

// shedRank orders the refusals that may be shed, first shed first:
// waiting for a request of which nothing arrived although the refusal
// reads (silent), of which only a part arrived (a whole probe request
// arrives in one read), answered already and lingering, and last one
// whose goroutine has not read yet. refusalsMu is held (for phase).
func (c *refusalConn) shedRank() int {
	switch {
	case c.phase == refusalLingering:
		return 2
	case !c.reading.Load():
		return 3
	case c.heard.Load() == 0:
		return 0
	}
	return 1
}

// shedRefusal closes a refusal admitRefusal took out, which its goroutine
// then neither answers nor counts: one still awaiting its request is
// counted as refused here and, on plain HTTP, answered 503 at once, as
// the accept loop answers past the refusals under way (a TLS one would
// need its goroutine's handshake and is closed unanswered).
func (l *limitListener) shedRefusal(victim *refusalConn) {
	l.shed.Inc()
	if victim.phase == refusalAwaiting { // fixed once shed: its goroutine no longer moves it
		l.refused.Inc()
		if l.tlsConfig == nil {
			_ = victim.Conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
			_, _ = victim.Conn.Write(refusal)
		}
	}
	victim.cutShort()
	_ = victim.Conn.Close()
}

// settle moves a refusal under way to refusalAnswering, so that it is no
// longer shed: false when it was shed already (its goroutine then writes
// nothing and counts nothing; shedRefusal did).
func (l *limitListener) settle(conn *refusalConn) bool {
	l.refusalsMu.Lock()
	defer l.refusalsMu.Unlock()
	if conn.shed {
		return false
	}
	conn.phase = refusalAnswering
	return true
}

// answered moves a refusal under way whose answer is out to
// refusalLingering, where it may be shed again.
func (l *limitListener) answered(conn *refusalConn) {
	l.refusalsMu.Lock()
	defer l.refusalsMu.Unlock()
	conn.phase = refusalLingering
}

// endRefusal forgets a refusal whose goroutine ended.
func (l *limitListener) endRefusal(conn *refusalConn) {
	l.refusalsMu.Lock()
	if index := slices.Index(l.underWay, conn); index >= 0 {
		l.underWay = slices.Delete(l.underWay, index, index+1)
		l.refusing.Set(float64(len(l.underWay)))
	}
	l.refusalsMu.Unlock()
	l.refusalsDone.Done()
}

// Close closes the listener and cuts the refusals under way short (their
// deadlines pass at once), and returns once they ended: a host that shut
// down holds none of their descriptors or goroutines.
func (l *limitListener) Close() error {
	err := l.Listener.Close()
	l.refusalsMu.Lock()
	l.closed = true
	for _, conn := range l.underWay {
		conn.cutShort()
	}
	l.refusalsMu.Unlock()
	l.refusalsDone.Wait()
	return err
}

// aLongTimeAgo is a deadline in the past: it wakes a blocked read or write
// at once.
var aLongTimeAgo = time.Unix(1, 0)

// refusalConn is the connection of a refusal under way. No deadline set
// on it is later than the refusal's end (crypto/tls sets one 5 s away for
// a close_notify), and once it is cut short (the listener closed, or the
// refusal shed), every deadline set on it is in the past, so the refusal
// cannot extend it again.
type refusalConn struct {
	net.Conn
	// last is the refusal's end, host the remote host; fixed at creation.
	last time.Time
	host string
	// phase (a refusal* constant) and shed are guarded by the listener's
	// refusalsMu: the refusal's goroutine moves phase forward unless shed
	// is set, which the accept loop sets once, when it sheds the refusal.
	phase int
	shed  bool
	// reading is set at the refusal's first read, heard counts the bytes
	// read: for shedRank, which the accept loop reads while the
	// refusal's goroutine reads the connection.
	reading atomic.Bool
	heard   atomic.Int64
	// mu orders cutShort with the deadlines set; cut is set once, by
	// cutShort.
	mu  sync.Mutex
	cut bool
}

// newRefusalConn starts the refusal of conn: it ends within
// refusalRequestTimeout plus refusalLingerTimeout.
func newRefusalConn(conn net.Conn) *refusalConn {
	host := auth.SourceOf(conn.RemoteAddr().String()).String() // an IPv6 client counts by its /64, as failed sign-ins do
	return &refusalConn{Conn: conn, last: time.Now().Add(refusalRequestTimeout + refusalLingerTimeout), host: host}
}

// Read notes, for shedRank, that the refusal reads and what it heard.
func (c *refusalConn) Read(p []byte) (int, error) {
	c.reading.Store(true)
	n, err := c.Conn.Read(p)
	c.heard.Add(int64(n))
	return n, err
}

func (c *refusalConn) cutShort() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cut = true
	_ = c.Conn.SetDeadline(aLongTimeAgo)
}

func (c *refusalConn) SetDeadline(t time.Time) error {
	return c.set(c.Conn.SetDeadline, t)
}

func (c *refusalConn) SetReadDeadline(t time.Time) error {
	return c.set(c.Conn.SetReadDeadline, t)
}

func (c *refusalConn) SetWriteDeadline(t time.Time) error {
	return c.set(c.Conn.SetWriteDeadline, t)
}

func (c *refusalConn) set(setter func(time.Time) error, t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.cut:
		t = aLongTimeAgo
	case t.IsZero() || t.After(c.last):
		t = c.last
	}
	return setter(t)
}

// CloseWrite half-closes the connection when the inner one can.
func (c *refusalConn) CloseWrite() error { return closeWrite(c.Conn) }

// closeWrite half-closes conn when it can.
func closeWrite(conn net.Conn) error {
	if closer, ok := conn.(interface{ CloseWrite() error }); ok {
		return closer.CloseWrite()
	}
	return errors.ErrUnsupported
}

// refusalSteps is what a refusal under way tells its listener (the
// limitListener's methods of these names).
type refusalSteps interface {
	// settle: the refusal is about to decide its answer (its request's
	// header arrived, or did not, or its TLS handshake failed); false if
	// it was shed, and then it writes and counts nothing.
	settle(conn *refusalConn) bool
	// count: the answer decided, a probe's or the refusal.
	count(probed bool)
	// answered: the answer is out.
	answered(conn *refusalConn)
}

// answerRefusal answers the request on conn (over TLS when tlsConfig is
// not nil) with the refusal once its header has arrived (or
// refusalRequestTimeout passed), or, for a probe (probePaths), with
// probes' answer; sends its FIN and discards the rest of the client's
// input until the client closes, so that the close resets nothing (for
// at most refusalLingerTimeout); then closes conn. It counts whether it
// answers a probe before it writes the answer (a failed TLS handshake
// counts as a refusal), unless the refusal was shed first (steps).
func answerRefusal(conn *refusalConn, tlsConfig *tls.Config, probes http.Handler, steps refusalSteps) {
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(refusalRequestTimeout))
	var answer net.Conn = conn
	if tlsConfig != nil {
		secured := tls.Server(conn, tlsConfig)
		if secured.Handshake() != nil {
			if steps.settle(conn) {
				steps.count(false)
			}
			return
		}
		defer secured.Close()
		answer = secured
	}
	line, whole := awaitRequestHeader(answer)
	if !steps.settle(conn) {
		return
	}
	reply, probed := refusal, false
	if whole {
		reply, probed = probeAnswer(probes, line)
	}
	steps.count(probed)
	_ = conn.SetDeadline(time.Now().Add(refusalLingerTimeout))
	_, err := answer.Write(reply)
	steps.answered(conn)
	if err != nil {
		return
	}
	if secured, ok := answer.(*tls.Conn); ok {
		_ = secured.CloseWrite() // close_notify; the TCP FIN follows
	}
	if conn.CloseWrite() != nil {
		return
	}
	_, _ = io.CopyN(io.Discard, conn, refusalDrainBytesMax)
}

// requestHeaderEnd ends a request's header.
var requestHeaderEnd = []byte("\r\n\r\n")

// awaitRequestHeader reads the client's input until the end of a
// request's header, the end of the input, an error (the refusal's
// deadline) or refusalDrainBytesMax read: an answer written before the
// client sent its request reaches some clients as an unsolicited response
// on an idle connection, and they fail the request instead of reading it
// (Go's HTTP transport does, under load). It returns the first
// requestLineKeptBytesMax bytes of the input (the start of the request
// line), and whether the header's end was read.
func awaitRequestHeader(conn io.Reader) (start []byte, whole bool) {
	buffer := make([]byte, 4096)
	kept := 0 // bytes of the previous read kept at the buffer's start: a header's end may straddle two reads
	for total := 0; total < refusalDrainBytesMax; {
		n, err := conn.Read(buffer[kept:])
		if len(start) < requestLineKeptBytesMax {
			start = append(start, buffer[kept:kept+min(n, requestLineKeptBytesMax-len(start))]...)
		}
		if bytes.Contains(buffer[:kept+n], requestHeaderEnd) {
			return start, true
		}
		if err != nil {
			return start, false
		}
		total += n
		kept = copy(buffer, buffer[max(kept+n-len(requestHeaderEnd)+1, 0):kept+n])
	}
	return start, false
}

// probeAnswer is the whole answer to a refused request that starts with
// line, and whether it is a probe's: probes' answer, closing the
// connection, for a GET of one of the probePaths; the refusal otherwise
// (probes nil included).
func probeAnswer(probes http.Handler, line []byte) (answer []byte, probed bool) {
	target, ok := probeTarget(line)
	if !ok || probes == nil {
		return refusal, false
	}
	request, err := http.NewRequest(http.MethodGet, target, http.NoBody)
	if err != nil {
		return refusal, false
	}
	recorded := httpapi.NewRecorder()
	probes.ServeHTTP(recorded, request)
	return onTheWire(recorded), true
}

// probeTarget returns the request target of a request line that GETs one
// of the probePaths (a query allowed), and whether it does.
func probeTarget(line []byte) (string, bool) {
	rest, ok := bytes.CutPrefix(line, []byte("GET "))
	if !ok {
		return "", false
	}
	target, _, ok := bytes.Cut(rest, []byte(" "))
	if !ok {
		return "", false
	}
	path, _, _ := bytes.Cut(target, []byte("?"))
	return string(target), probePaths[string(path)]
}

// onTheWire is a probe's recorded answer as it goes on the wire: its
// status, the handler's Content-Type and Retry-After, Connection: close
// and the body's length.
func onTheWire(answer *httpapi.Recorder) []byte {
	status := answer.Status()
	var out bytes.Buffer
	fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	for _, name := range []string{"Content-Type", "Retry-After"} {
		if value := answer.Header().Get(name); value != "" {
			fmt.Fprintf(&out, "%s: %s\r\n", name, value)
		}
	}
	fmt.Fprintf(&out, "Connection: close\r\nContent-Length: %d\r\n\r\n", len(answer.Body()))
	out.Write(answer.Body())
	return out.Bytes()
}

func (l *limitListener) admit() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.max {
		return false
	}
	l.open++
	l.openGauge.Set(float64(l.open))
	return true
}

func (l *limitListener) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	l.openGauge.Set(float64(l.open))
}

// limitedConn gives its slot back once, at the first Close.
type limitedConn struct {
	net.Conn
	listener *limitListener
	once     sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.listener.release)
	return err
}

// newRefusedCounter registers the count of requests the connection server
// refused or broke off, by reason, and returns what it calls.
func newRefusedCounter(reg prometheus.Registerer) func(httpserve.Reason) {
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
		Name: "requests_refused_total", Help: "Requests the HTTP server refused or broke off before the API saw them whole, by reason."},
		[]string{"reason"})
	reg.MustRegister(refused)
	counters := make(map[httpserve.Reason]prometheus.Counter, len(httpserve.Reasons))
	for _, reason := range httpserve.Reasons {
		counters[reason] = refused.WithLabelValues(string(reason))
	}
	return func(reason httpserve.Reason) { counters[reason].Inc() }
}

// CloseWrite half-closes the connection when the inner one can, so that
// the HTTP server can linger before closing (httpserve).
func (c *limitedConn) CloseWrite() error { return closeWrite(c.Conn) }
