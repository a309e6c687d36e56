package httpapi

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"
)

// front is the outer part of the production handler, in one pass per
// request, outer to inner: the HTTP metrics, the budget of request body
// bytes in flight, panic recovery; then the routes. It routes the request
// once (the metrics label, authentication and decoding share it) and keeps what it tracks of a request in one exchange, a single
// allocation. Its fields are set by NewHandler and never change.
type front struct {
	metrics *HTTPMetrics
	budget  *byteBudget
	logger  *slog.Logger
	routes  *apiHandler
}

// exchange is what front tracks of one request. It belongs to that
// request and is used by the goroutine serving it.
type exchange struct {
	// request is the shallow copy of the server's request that the routes
	// see: routing sets its pattern and path values, and a request with a
	// body carries body instead of the server's. The server's request
	// stays as it was.
	request http.Request
	// body reads the server's body, charging the budget and counting the
	// bytes for the metrics.
	body budgetedBody
	// writer records the status sent and the body bytes written.
	writer statusRecorder
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	f.metrics.inFlight.Inc()
	defer f.metrics.inFlight.Dec()
	method := methodLabel(r.Method)
	x := &exchange{request: *r, writer: statusRecorder{ResponseWriter: w}}
	if r.Body != nil && r.Body != http.NoBody {
		x.body = budgetedBody{reader: r.Body, budget: f.budget}
		x.request.Body = &x.body
	}
	r = &x.request
	matched := f.routes.codec.match(r) // the one routing of the request: its pattern and path values, set on the copy
	routeLabel := matched.route
	if routeLabel == "" {
		routeLabel = routeUnmatched
	}
	f.serveRecovering(&x.writer, r, matched)
	if x.body.held > 0 {
		f.budget.give(x.body.held) // the decoded request, which may point into the body, is answered
	}
	if r.Context().Err() != nil {
		// The connection's context ends only when the client closed its
		// end (noticed for a long poll) or the connection ended: the answer
		// reaches nobody.
		f.metrics.observeAbandoned(routeLabel, method, x.body.read)
		return
	}
	f.metrics.observe(routeLabel, method, &x.writer, x.body.read, time.Since(start))
}

// serveRecovering serves r, turning a panic of the routes into a 500
// (logged with its stack) unless the header was sent already.
// http.ErrAbortHandler keeps its meaning (abort the connection).
func (f *front) serveRecovering(w *statusRecorder, r *http.Request, matched *capture) {
	defer func() {
		recovered := recover()
		if recovered == nil {
			return
		}
		if recovered == http.ErrAbortHandler {
			panic(recovered)
		}
		f.logger.Error("http handler panicked", "method", r.Method, "path", r.URL.Path,
			"panic", recovered, "stack", string(debug.Stack()))
		if w.status == 0 {
			clear(w.Header()) // drop what the panicking handler set
			errorResponse(errInternalPanic).Write(w)
		}
	}()
	f.routes.serve(w, r, matched)
}
