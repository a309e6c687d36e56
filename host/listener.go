package host

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

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
	// refusalWriteTimeout bounds the write of the refusal to a connection
	// over the limit (it fits in the socket buffer; a peer that does not
	// read cannot hold the accept loop).
	refusalWriteTimeout = 100 * time.Millisecond
	// tlsRefusalTimeout bounds the whole refusal of a connection over the
	// limit on a TLS listener: the handshake (a plain answer would reach
	// the client as a malformed handshake record, not as a 503), the write
	// and the close. It runs beside the accept loop.
	tlsRefusalTimeout = time.Second
	// tlsRefusalsMax bounds the TLS refusals under way at once (each holds
	// its descriptor and a goroutine for at most tlsRefusalTimeout); past
	// it a connection over the limit is closed unanswered, and counted as
	// refused all the same.
	tlsRefusalsMax = 64
)

// refusalBody is the body of the answer to a connection over the limit;
// refusal is the whole answer, with the Retry-After of every 503
// (httpapi.RetryAfterSeconds) and the body's length derived, not typed.
const refusalBody = `{"error":"too many connections to this server; retry"}` + "\n"

var refusal = []byte(fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nRetry-After: %d\r\n"+
	"Connection: close\r\nContent-Length: %d\r\n\r\n%s", httpapi.RetryAfterSeconds, len(refusalBody), refusalBody))

// connectionsCap derives the HTTP connection limit from the descriptor
// limit when configured is 0.
func connectionsCap(configured int, limit uint64) int {
	if configured > 0 {
		return configured
	}
	return int(min(max(limit/connectionsShareDivisor, connectionsDerivedMin), connectionsDerivedMax))
}

// limitListener accepts at most max connections open at once; a
// connection past it is answered 503 and closed at once, so it holds no
// descriptor (on a TLS listener, once the handshake that carries the
// answer is done: tlsRefusalsMax at once, each for at most
// tlsRefusalTimeout). Safe for concurrent use.
type limitListener struct {
	net.Listener
	// max is fixed at creation, > 0.
	max int
	// tlsConfig is the server's TLS configuration, nil for plain HTTP;
	// refusals speak TLS with it. Fixed at creation.
	tlsConfig *tls.Config
	// tlsRefusals holds a token per TLS refusal under way (capacity
	// tlsRefusalsMax).
	tlsRefusals chan struct{}
	// mu guards open. Invariant: 0 <= open <= max.
	mu   sync.Mutex
	open int
	// gauges and counters of the limit.
	openGauge prometheus.Gauge
	refused   prometheus.Counter
}

// newLimitListener wraps inner and registers the connection metrics;
// tlsConfig is the TLS configuration of the listener above it (nil: plain
// HTTP), which the refusals use.
func newLimitListener(inner net.Listener, max int, tlsConfig *tls.Config, reg prometheus.Registerer) *limitListener {
	l := &limitListener{Listener: inner, max: max, tlsConfig: tlsConfig, tlsRefusals: make(chan struct{}, tlsRefusalsMax),
		openGauge: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
			Name: "connections_open", Help: "HTTP connections open now."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: "connections_refused_total", Help: "HTTP connections refused (503) because the connection limit was reached."}),
	}
	maxGauge := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
		Name: "connections_max", Help: "Limit of the HTTP connections open at once."})
	maxGauge.Set(float64(max))
	reg.MustRegister(l.openGauge, l.refused, maxGauge)
	return l
}

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
		l.refused.Inc()
		l.refuse(conn)
	}
}

// refuse answers a connection over the limit 503 and closes it: at once
// on plain HTTP; on TLS beside the accept loop, since the answer needs a
// handshake, unless tlsRefusalsMax are under way (then it is closed
// unanswered). Best effort: the client may be gone.
func (l *limitListener) refuse(conn net.Conn) {
	if l.tlsConfig == nil {
		_ = conn.SetWriteDeadline(time.Now().Add(refusalWriteTimeout))
		_, _ = conn.Write(refusal)
		_ = conn.Close()
		return
	}
	select {
	case l.tlsRefusals <- struct{}{}:
	default:
		_ = conn.Close()
		return
	}
	go func() {
		defer func() { <-l.tlsRefusals }()
		_ = conn.SetDeadline(time.Now().Add(tlsRefusalTimeout))
		secured := tls.Server(conn, l.tlsConfig)
		if secured.Handshake() == nil {
			_, _ = secured.Write(refusal)
		}
		_ = secured.Close()
	}()
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
func (c *limitedConn) CloseWrite() error {
	if closer, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return closer.CloseWrite()
	}
	return errors.ErrUnsupported
}
