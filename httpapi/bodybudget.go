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

// byteBudget bounds bytes the server holds at once across requests: the
// bodies of requests (newBodyBudget) or the encoded replies being written
// (newReplyBudget). Safe for concurrent use.
type byteBudget struct {
	// bytesMax is the cap; fixed at creation, > 0.
	bytesMax int64
	// admitAlone lets take admit any size when nothing is held, so that a
	// single item larger than the cap is served alone rather than never.
	// Fixed at creation.
	admitAlone bool
	// mu guards held. Invariant: 0 <= held, and held <= bytesMax unless
	// admitAlone admitted one item above it.
	mu   sync.Mutex
	held int64
	// inFlight mirrors held; refused counts the requests refused.
	inFlight prometheus.Gauge
	refused  prometheus.Counter
}

// budgetMetrics names the series of a byteBudget: its bytes held, its
// refusals and its cap.
type budgetMetrics struct {
	inFlight, inFlightHelp, refused, refusedHelp, bytesMax, bytesMaxHelp string
}

// newByteBudget creates a budget of bytesMax and registers its metrics.
func newByteBudget(bytesMax int64, admitAlone bool, names budgetMetrics, reg prometheus.Registerer) *byteBudget {
	assert(bytesMax > 0, "budget %s of %d bytes", names.bytesMax, bytesMax)
	budget := &byteBudget{
		bytesMax: bytesMax, admitAlone: admitAlone,
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
			Name: names.inFlight, Help: names.inFlightHelp}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http",
			Name: names.refused, Help: names.refusedHelp}),
	}
	budgetMax := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "http",
		Name: names.bytesMax, Help: names.bytesMaxHelp})
	budgetMax.Set(float64(bytesMax))
	reg.MustRegister(budget.inFlight, budget.refused, budgetMax)
	return budget
}

// newBodyBudget is the budget of request body bytes: a body takes from it
// the buffer it reads into, which grows with the bytes that arrive (never
// from an announced Content-Length alone), and gives it back when its
// request is answered. The configuration keeps the cap at or above one
// largest body.
func newBodyBudget(bytesMax int64, reg prometheus.Registerer) *byteBudget {
	return newByteBudget(bytesMax, false, budgetMetrics{
		inFlight: "request_body_bytes_in_flight", inFlightHelp: "Request body bytes held (buffers sized by the bytes that arrived, 4 KiB at first) by requests not yet answered.",
		refused: "request_body_budget_refused_total", refusedHelp: "Requests refused (503) because request bodies in flight held their cap.",
		bytesMax: "request_body_bytes_in_flight_max", bytesMaxHelp: "Cap of the request body bytes held at once.",
	}, reg)
}

// take adds bytes to the held total, or reports false if that would pass
// the cap.
func (b *byteBudget) take(bytes int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held+bytes > b.bytesMax && !(b.admitAlone && b.held == 0) {
		return false
	}
	b.held += bytes
	b.inFlight.Set(float64(b.held))
	return true
}

// give returns bytes taken earlier.
func (b *byteBudget) give(bytes int64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.held -= bytes
	assert(b.held >= 0, "budget gave back more than it took")
	b.inFlight.Set(float64(b.held))
}

// Held is the bytes held now (for tests).
func (b *byteBudget) Held() int64 {
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
	budget *byteBudget
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
