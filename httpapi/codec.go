package httpapi

import (
	"bytes"
	"net/http"
	"strings"

	"narad/msg"
)

// Routes: the http.ServeMux patterns (docs/api.md#routes) that one node serves.
// Decoded.Route and the route label of the HTTP metrics carry them.
const (
	RouteCreateTopic = "POST /v1/topics"
	RouteListTopics  = "GET /v1/topics"
	RouteGetTopic    = "GET /v1/topics/{topic}"
	RouteAlterTopic  = "PATCH /v1/topics/{topic}"
	RouteDeleteTopic = "DELETE /v1/topics/{topic}"
	RouteProduce     = "POST /v1/topics/{topic}/produce"
	RouteConsume     = "GET /v1/topics/{topic}/consume"
	RouteAck         = "POST /v1/topics/{topic}/ack"
	// RouteTopicSchema reads a topic's schema back
	// (docs/api.md#topic-schemas); the handler answers it from the schemas
	// the node published.
	RouteTopicSchema = "GET /v1/topics/{topic}/schema"
	// The fan-out routes (docs/api.md#fan-out-children).
	RouteAttachChild  = "POST /v1/topics/{topic}/children"
	RouteListChildren = "GET /v1/topics/{topic}/children"
	RouteDetachChild  = "DELETE /v1/topics/{topic}/children/{child}"
	RouteMembers      = "GET /v1/cluster/members"
	RouteMoves        = "GET /v1/cluster/moves"
	// RouteDecommission and RouteCancelDecommission start and cancel a
	// member's drain.
	RouteDecommission       = "POST /v1/cluster/members/{id}/decommission"
	RouteCancelDecommission = "DELETE /v1/cluster/members/{id}/decommission"
	RouteHealth             = "GET /healthz"
	RouteReady              = "GET /readyz"
	RouteMetrics            = "GET /metrics"
)

// decodeFunc decodes the request of one route.
type decodeFunc func(c *Codec, r *http.Request) (msg.Request, *ErrorResponse)

// decodeLinesFunc decodes a produce: the request and, for a batch, the
// NDJSON line of each record.
type decodeLinesFunc func(c *Codec, r *http.Request) (msg.Request, []int, *ErrorResponse)

// routeTable lists every route with its decoder; a nil decoder marks a
// route the server answers itself (health, readiness, metrics, users).
var routeTable = []struct {
	pattern     string
	decode      decodeFunc
	decodeLines decodeLinesFunc // set instead of decode for produce
}{
	{RouteCreateTopic, decodeCreateTopic, nil},
	{RouteListTopics, decodeListTopics, nil},
	{RouteGetTopic, decodeGetTopic, nil},
	{RouteAlterTopic, decodeAlterTopic, nil},
	{RouteDeleteTopic, decodeDeleteTopic, nil},
	{RouteProduce, nil, decodeProduce},
	{RouteConsume, decodeConsume, nil},
	{RouteAck, decodeAck, nil},
	{RouteTopicSchema, nil, nil},
	{RouteAttachChild, decodeAttachChild, nil},
	{RouteListChildren, decodeListChildren, nil},
	{RouteDetachChild, decodeDetachChild, nil},
	{RouteMembers, decodeListMembers, nil},
	{RouteMoves, decodeListMoves, nil},
	{RouteDecommission, decodeDecommission, nil},
	{RouteCancelDecommission, decodeDecommission, nil},
	{RouteHealth, nil, nil},
	{RouteReady, nil, nil},
	{RouteMetrics, nil, nil},
	{RouteCreateUser, nil, nil},
	{RouteListUsers, nil, nil},
	{RouteGetUser, nil, nil},
	{RouteDeleteUser, nil, nil},
	{RouteSetGrants, nil, nil},
	{RouteSetPassword, nil, nil},
}

// Codec decodes HTTP requests into node requests. It is safe for
// concurrent use: nothing in it changes after NewCodec.
type Codec struct {
	// config is valid (NewCodec checked it); never changed.
	config CodecConfig
	// mux routes every pattern of routeTable to a routeHandler; never
	// changed after NewCodec.
	mux *http.ServeMux
}

// NewCodec builds a codec. cfg must pass Validate; an invalid cfg is a
// programming error and panics.
func NewCodec(cfg CodecConfig) *Codec {
	err := cfg.Validate()
	assert(err == nil, "invalid codec config: %v", err)
	codec := &Codec{config: cfg, mux: http.NewServeMux()}
	for _, route := range routeTable {
		codec.mux.Handle(route.pattern, routeHandler{codec: codec, decode: route.decode, decodeLines: route.decodeLines})
	}
	return codec
}

// Decoded is a request that passed decoding. Decode builds it; callers
// only read it.
type Decoded struct {
	// Route is the ServeMux pattern that matched, one of the Route
	// constants. Decode sets it whenever a route matched, even when the
	// request then failed to decode.
	Route string
	// Request is what to hand the node; nil for RouteHealth, RouteReady,
	// RouteMetrics, RouteTopicSchema and the users routes.
	Request msg.Request
	// Lines[i] is the NDJSON line (from 1) of record i of a batch
	// produce; nil otherwise.
	Lines []int
}

// Decode routes r and decodes it. It reads r's body. On failure the
// ErrorResponse holds the exact answer: a JSON error, or what
// http.ServeMux itself writes for an unknown path (404), a wrong method
// (405) or an unclean path (redirect).
func (c *Codec) Decode(r *http.Request) (Decoded, *ErrorResponse) {
	return c.match(r).decode(r)
}

// match routes r without reading its body: the mux sets r's pattern and
// path values, and calls the route's handler, which only records itself
// in the capture, or answers itself. Decode is match, then the capture's
// decode.
func (c *Codec) match(r *http.Request) *capture {
	captured := &capture{}
	c.mux.ServeHTTP(captured, r)
	if captured.status == http.StatusMethodNotAllowed && isConsumePath(r.URL.Path) {
		// The mux offers HEAD with every GET route, but a HEAD on consume
		// is refused (it would lease records and drop their handles).
		captured.Header().Set("Allow", http.MethodGet)
	}
	return captured
}

// isConsumePath reports whether path is /v1/topics/{topic}/consume.
func isConsumePath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/v1/topics/")
	topic, ok2 := strings.CutSuffix(rest, "/consume")
	return ok && ok2 && topic != "" && !strings.Contains(topic, "/")
}

// routeHandler is the mux handler of one route: served with a capture,
// it records itself there for the capture's decode.
type routeHandler struct {
	codec       *Codec
	decode      decodeFunc      // nil: nothing to decode, or decodeLines
	decodeLines decodeLinesFunc // nil but for produce
}

func (h routeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	captured, ok := w.(*capture)
	assert(ok, "route handler served with a %T, want the capture of match", w)
	if r.Method == http.MethodHead && r.Pattern == RouteConsume {
		// The mux routes HEAD to GET patterns, and a consume reserves
		// records: a HEAD would lease them and drop their receipt handles
		// with the body. Answered as the mux answers a wrong method.
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, http.StatusText(http.StatusMethodNotAllowed), http.StatusMethodNotAllowed)
		return
	}
	captured.routed = true
	captured.route = r.Pattern
	captured.handler = h
}

// decode decodes r, which match routed into this capture, with the
// matched route's decoder; or returns the mux's own answer.
func (c *capture) decode(r *http.Request) (Decoded, *ErrorResponse) {
	if !c.routed {
		return Decoded{}, c.muxAnswer()
	}
	decoded := Decoded{Route: c.route}
	if r.URL.RawQuery != "" && c.route != RouteMetrics {
		// A parameter given twice is 400 on every route, also those whose
		// decoder reads no query (docs/api.md#conventions); the metrics
		// exposition takes repeated name[] filters.
		if failed := checkQuery(r); failed != nil {
			return decoded, failed
		}
	}
	var failed *ErrorResponse
	switch h := c.handler; {
	case h.decode != nil:
		decoded.Request, failed = h.decode(h.codec, r)
	case h.decodeLines != nil:
		decoded.Request, decoded.Lines, failed = h.decodeLines(h.codec, r)
	}
	return decoded, failed
}

// capture is the ResponseWriter match runs the mux on; each match makes
// its own. A route handler fills routed, route and handler; an answer the
// mux writes itself lands in header, status and body. Nothing changes it
// after the mux returns.
type capture struct {
	header  http.Header // made when first asked for: a routed request never is
	status  int         // 0 until WriteHeader or Write
	body    bytes.Buffer
	routed  bool // a route handler ran
	route   string
	handler routeHandler // the route's, when routed
}

func (c *capture) Header() http.Header {
	if c.header == nil {
		c.header = http.Header{}
	}
	return c.header
}

func (c *capture) WriteHeader(status int) {
	if c.status == 0 {
		c.status = status
	}
}

func (c *capture) Write(data []byte) (int, error) {
	c.WriteHeader(http.StatusOK)
	return c.body.Write(data)
}

// muxAnswer is the answer the mux wrote instead of calling a route.
func (c *capture) muxAnswer() *ErrorResponse {
	assert(c.status != 0, "the mux neither routed the request nor answered it")
	answer := Response{Status: c.status, Header: c.Header(), Body: c.body.Bytes()}
	return &ErrorResponse{Response: answer}
}
