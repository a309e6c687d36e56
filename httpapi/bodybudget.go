package httpapi

import (
	"errors"
	"io"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"narad/msg"
)

// errBodyBudgetFull: reading more of a request body would take the bytes
// of request bodies held by the server past its cap.
var errBodyBudgetFull = errors.New("request body bytes in flight at their cap")

// errBodyBudget answers a request refused by the body budget.
var errBodyBudget = msg.Unavailable("the server holds its cap of request body bytes in flight; retry")

// bodyBudget bounds the bytes of request bodies the server holds at once,
// across requests: a body takes from the budget the buffer it reads into,
// which grows with the bytes that arrive (never from an announced
// Content-Length alone), and gives it back when its request is answered.
// Safe for concurrent use.
type bodyBudget struct {
	// bytesMax is the cap; fixed at newBodyBudget, > 0.
	bytesMax int64
	// mu guards held. Invariant: 0 <= held <= bytesMax.
	mu   sync.Mutex
	held int64
	// inFlight mirrors held; refused counts the reads refused.
	inFlight prometheus.Gauge
	refused  prometheus.Counter
}

// newBodyBudget creates a budget of bytesMax and registers its metrics.
func newBodyBudget(bytesMax int64, reg prometheus.Registerer) *bodyBudget {
	assert(bytesMax > 0, "request body budget of %d bytes", bytesMax)
	budget := &bodyBudget{
		bytesMax: bytesMax,
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
			Name: "request_body_bytes_in_flight", Help: "Request body bytes held (buffers sized by the bytes that arrived) by requests not yet answered."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: "request_body_budget_refused_total", Help: "Requests refused (503) because request bodies in flight held their cap."}),
	}
	budgetMax := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
		Name: "request_body_bytes_in_flight_max", Help: "Cap of the request body bytes held at once."})
	budgetMax.Set(float64(bytesMax))
	reg.MustRegister(budget.inFlight, budget.refused, budgetMax)
	return budget
}

// take adds bytes to the held total, or reports false if that would pass
// the cap.
func (b *bodyBudget) take(bytes int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+bytes > b.bytesMax {
		return false
	}
	b.held += bytes
	b.inFlight.Set(float64(b.held))
	return true
}

// give returns bytes taken earlier.
func (b *bodyBudget) give(bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= bytes
	assert(b.held >= 0, "request body budget gave back more than it took")
	b.inFlight.Set(float64(b.held))
}

// Held is the bytes held now (for tests).
func (b *bodyBudget) Held() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.held
}

// budgetedBody takes from the budget what its request holds: the bytes
// it returned, or more when the reader reserves room for its buffer
// first (reserve). It belongs to one request and is used by one
// goroutine.
type budgetedBody struct {
	reader io.ReadCloser
	budget *bodyBudget
	// read counts the bytes returned; held is what this body took from
	// the budget. Invariant: read <= held.
	read, held int64
}

// bodyReserver is implemented by a body read under the budget: reserve
// takes from the budget up to total bytes for this body, reporting false
// when the budget cannot hold them.
type bodyReserver interface {
	reserve(total int64) bool
}

func (c *budgetedBody) reserve(total int64) bool {
	if total <= c.held {
		return true
	}
	if !c.budget.take(total - c.held) {
		c.budget.refused.Inc()
		return false
	}
	c.held = total
	return true
}

func (c *budgetedBody) Read(buffer []byte) (int, error) {
	n, err := c.reader.Read(buffer)
	c.read += int64(n)
	if !c.reserve(c.read) {
		return 0, errBodyBudgetFull
	}
	return n, err
}

// asideReader is implemented by a body read under the budget: readAside
// reads without charging the budget, for the byte that tells a body at
// its cap from a longer one (probeEnd). What it returns is never kept: a
// byte there makes the body over its cap.
type asideReader interface {
	readAside(buffer []byte) (int, error)
}

func (c *budgetedBody) readAside(buffer []byte) (int, error) { return c.reader.Read(buffer) }

func (c *budgetedBody) Close() error { return c.reader.Close() }
