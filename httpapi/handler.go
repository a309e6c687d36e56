package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"narad/auth"
	"narad/msg"
)

// Backend is the node as the HTTP server sees it. Implementations are safe
// for concurrent use.
type Backend interface {
	// Do submits req to the node and waits for its reply. If ctx ends
	// first the backend cancels the request and returns a reply whose Err
	// is a msg.Unavailable error.
	Do(ctx context.Context, req msg.Request) msg.Reply
	// Ready is nil when the node is ready to serve (readyz).
	Ready() error
	// ShuttingDown is true once graceful shutdown has started (healthz).
	ShuttingDown() bool
	// TopicSchemas returns the kept versions of a topic's JSON Schema,
	// oldest first, as the node last published them: after applying them
	// and before answering any request that depends on them. It returns
	// nil for a topic without a schema or unknown to the node. The slice
	// and its documents must not be changed.
	TopicSchemas(topic string) []msg.SchemaVersion
	// HandBack returns to the node the records of a consume reply that
	// will not be sent (the reply budget refused it): they are delivered
	// again at once, their delivery uncounted.
	HandBack(reply msg.Reply)
}

// NewHandler is the HTTP server of one node. Middleware, outer to inner:
// HTTP metrics (registered with reg, which /metrics also serves), the
// budget of request body bytes in flight, panic recovery, authentication
// (WithSecurity), then the routes: Decode, authorization, Backend.Do,
// Encode, Write.
func NewHandler(b Backend, codec *Codec, reg *prometheus.Registry, logger *slog.Logger, options ...HandlerOption) http.Handler {
	assert(b != nil && codec != nil && reg != nil && logger != nil,
		"NewHandler needs a backend, a codec, a registry and a logger")
	metrics := NewHTTPMetrics(reg)
	replies := newReplyBudget(codec.config.ReplyBytesInFlightMax, reg)
	routes := &apiHandler{
		backend: b,
		codec:   codec,
		metrics: newScrapeLimit(promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}), replies, reg),
		schemas: newSchemaRegistry(newSchemaMetrics(reg)),
		logger:  logger,
		replies: replies,
	}
	for _, option := range options {
		option(routes)
	}
	budget := newBodyBudget(codec.config.BodyBytesInFlightMax, reg)
	return &front{metrics: metrics, budget: budget, logger: logger, routes: routes}
}

// TopicForgetter is implemented by the handler NewHandler returns: the
// host calls ForgetTopic when its node drops a deleted (or re-created)
// topic, so the series this layer keeps per topic (schema rejections) and
// its compiled schema versions go with it.
type TopicForgetter interface {
	ForgetTopic(topic string)
}

// ForgetTopic implements TopicForgetter. A produce validated while the
// deletion applies may count one more rejection under the name.
func (f *front) ForgetTopic(topic string) {
	f.routes.schemas.metrics.rejections.DeletePartialMatch(prometheus.Labels{"topic": topic})
	f.routes.schemas.forgetTopic(topic)
}

// apiHandler serves every route of the codec. Its fields are set by
// NewHandler and never change.
type apiHandler struct {
	backend Backend
	codec   *Codec
	metrics http.Handler // Prometheus exposition of the registry
	schemas *schemaRegistry
	logger  *slog.Logger
	// security is nil without WithSecurity: no user routes, no checks.
	security *Security
	// replies is the budget of consume and replay replies being written.
	replies *byteBudget
}

// serve answers r, which front routed (matched.route is "" when no
// route matched).
func (h *apiHandler) serve(w http.ResponseWriter, r *http.Request, matched *capture) {
	caller, refused := h.authenticate(r, matched.route)
	if refused != nil {
		refused.Write(w)
		return
	}
	if refused := refuseContentEncoding(r); refused != nil {
		refused.Write(w)
		return
	}
	decoded, failed := matched.decode(r)
	if failed != nil {
		failed.Write(w)
		return
	}
	switch {
	case decoded.Route == RouteHealth:
		h.health().Write(w)
	case decoded.Route == RouteReady:
		h.readiness().Write(w)
	case decoded.Route == RouteMetrics:
		h.metrics.ServeHTTP(w, r)
	case userRoutes[decoded.Route]:
		h.writeHeld(w, h.serveUsers(r, decoded.Route, caller))
	default:
		h.writeHeld(w, h.serveNode(r, decoded, caller))
	}
}

// refuseContentEncoding answers 415 to a request whose body is sent with
// a Content-Encoding other than identity (docs/api.md#conventions): the
// server decodes none, and a gzipped produce would otherwise be stored
// compressed, a gzipped JSON body refused as malformed JSON. A request
// without a body is served whatever the header says.
func refuseContentEncoding(r *http.Request) *Response {
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	for _, field := range r.Header.Values("Content-Encoding") {
		for coding := range strings.SplitSeq(field, ",") {
			coding = strings.TrimSpace(coding)
			if coding == "" || strings.EqualFold(coding, "identity") {
				continue
			}
			response := jsonResponse(http.StatusUnsupportedMediaType, errorBody{Error: "request body has Content-Encoding " +
				quoteClipped(coding) + ": the server decodes no content coding; send the body as is (identity)"})
			return &response
		}
	}
	return nil
}

// writeHeld writes a response, then gives back what it held of the reply
// budget (every response that may hold some goes through it).
func (h *apiHandler) writeHeld(w http.ResponseWriter, response Response) {
	response.Write(w)
	if response.held > 0 {
		h.replies.give(response.held)
	}
}

// serveNode authorizes a decoded request, then serves it: the schema
// read-back, a produce (validated against the topic's schema), a topic
// change (its schema compiled), or any other request through the
// backend.
func (h *apiHandler) serveNode(r *http.Request, decoded Decoded, caller auth.Identity) Response {
	if refused := h.authorize(r.Context(), caller, decoded.Request); refused != nil {
		return *refused
	}
	request := withExpectedOwner(withCreator(decoded.Request, caller), caller)
	switch decoded.Route {
	case RouteTopicSchema:
		return h.holdReply(h.topicSchema(r))
	case RouteProduce:
		return h.produce(r.Context(), request.(msg.Produce), decoded.Lines)
	case RouteCreateTopic, RouteAlterTopic:
		return h.changeTopic(r.Context(), request)
	}
	reply := h.backend.Do(r.Context(), request)
	h.auditDecommission(request, reply, caller)
	if refused := h.authorizeDelivery(caller, request, reply); refused != nil {
		return *refused
	}
	return h.budgetReply(request, reply)
}

// statusBody is the body of /healthz and /readyz.
type statusBody struct {
	Status string `json:"status"`
}

// health answers /healthz (docs/api.md#health-and-metrics).
func (h *apiHandler) health() Response {
	if h.backend.ShuttingDown() {
		return jsonResponse(http.StatusServiceUnavailable, statusBody{Status: "shutting down"})
	}
	return jsonResponse(http.StatusOK, statusBody{Status: "ok"})
}

// readiness answers /readyz, asking the backend on every call
// (docs/api.md#health-and-metrics).
func (h *apiHandler) readiness() Response {
	if err := h.backend.Ready(); err != nil {
		return jsonResponse(http.StatusServiceUnavailable, errorBody{Error: err.Error()})
	}
	return jsonResponse(http.StatusOK, statusBody{Status: "ready"})
}
