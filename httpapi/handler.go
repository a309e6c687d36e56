package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"narad/node"
)

// Backend is the node as the HTTP server sees it. Implementations are safe
// for concurrent use.
type Backend interface {
	// Do submits req to the node and waits for its reply. If ctx ends
	// first the backend cancels the request and returns a reply whose Err
	// is a node.Unavailable error.
	Do(ctx context.Context, req node.Request) node.Reply
	// Ready is nil when the node is ready to serve (readyz).
	Ready() error
	// ShuttingDown is true once graceful shutdown has started (healthz).
	ShuttingDown() bool
	// TopicSchemas returns the kept versions of a topic's JSON Schema,
	// oldest first, as the node last published them: after applying them
	// and before answering any request that depends on them. It returns
	// nil for a topic without a schema or unknown to the node. The slice
	// and its documents must not be changed.
	TopicSchemas(topic string) []node.SchemaVersion
}

// NewHandler is the HTTP server of one node. Middleware, outer to inner:
// HTTP metrics (registered with reg, which /metrics also serves), panic
// recovery, then the routes: Decode, Backend.Do, Encode, Write.
func NewHandler(b Backend, codec *Codec, reg *prometheus.Registry, logger *slog.Logger) http.Handler {
	assert(b != nil && codec != nil && reg != nil && logger != nil,
		"NewHandler needs a backend, a codec, a registry and a logger")
	metrics := NewHTTPMetrics(reg)
	routes := &apiHandler{
		backend: b,
		codec:   codec,
		metrics: promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}),
		schemas: newSchemaRegistry(newSchemaMetrics(reg)),
	}
	return metrics.middleware(codec.route, recoverPanics(logger, routes))
}

// apiHandler serves every route of the codec. Its fields are set by
// NewHandler and never change.
type apiHandler struct {
	backend Backend
	codec   *Codec
	metrics http.Handler // Prometheus exposition of the registry
	schemas *schemaRegistry
}

func (h *apiHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	decoded, failed := h.codec.Decode(r)
	if failed != nil {
		failed.Write(w)
		return
	}
	switch decoded.Route {
	case RouteHealth:
		h.health().Write(w)
	case RouteReady:
		h.readiness().Write(w)
	case RouteMetrics:
		h.metrics.ServeHTTP(w, r)
	case RouteTopicSchema:
		h.topicSchema(r).Write(w)
	case RouteProduce:
		h.produce(r.Context(), decoded.Request.(node.Produce), decoded.Lines).Write(w)
	case RouteCreateTopic, RouteAlterTopic:
		h.changeTopic(r.Context(), decoded.Request).Write(w)
	default:
		reply := h.backend.Do(r.Context(), decoded.Request)
		Encode(decoded.Request, reply).Write(w)
	}
}

// statusBody is the body of /healthz and /readyz.
type statusBody struct {
	Status string `json:"status"`
}

// health answers /healthz (API.md §1.17).
func (h *apiHandler) health() Response {
	if h.backend.ShuttingDown() {
		return jsonResponse(http.StatusServiceUnavailable, statusBody{Status: "shutting down"})
	}
	return jsonResponse(http.StatusOK, statusBody{Status: "ok"})
}

// readiness answers /readyz, asking the backend on every call (item 6).
func (h *apiHandler) readiness() Response {
	if err := h.backend.Ready(); err != nil {
		return jsonResponse(http.StatusServiceUnavailable, errorBody{Error: err.Error()})
	}
	return jsonResponse(http.StatusOK, statusBody{Status: "ready"})
}

// recoverPanics turns a panic of next into a 500 and logs it with its
// stack. http.ErrAbortHandler keeps its meaning (abort the connection).
func recoverPanics(logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tracker := &headerTracker{ResponseWriter: w}
		defer func() {
			recovered := recover()
			if recovered == nil {
				return
			}
			if recovered == http.ErrAbortHandler {
				panic(recovered)
			}
			logger.Error("http handler panicked", "method", r.Method, "path", r.URL.Path,
				"panic", recovered, "stack", string(debug.Stack()))
			if !tracker.wroteHeader {
				clear(tracker.Header()) // drop what the panicking handler set
				errorResponse(errInternalPanic).Write(tracker)
			}
		}()
		next.ServeHTTP(tracker, r)
	})
}

// headerTracker remembers whether the header was sent, so that a panic
// after it is not answered twice.
type headerTracker struct {
	http.ResponseWriter
	wroteHeader bool
}

func (t *headerTracker) WriteHeader(status int) {
	t.wroteHeader = true
	t.ResponseWriter.WriteHeader(status)
}

func (t *headerTracker) Write(data []byte) (int, error) {
	t.wroteHeader = true
	return t.ResponseWriter.Write(data)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (t *headerTracker) Unwrap() http.ResponseWriter { return t.ResponseWriter }
