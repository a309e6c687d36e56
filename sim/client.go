package sim

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"narad/httpapi"
	"narad/msg"
)

// Client timeouts, in simulated milliseconds.
const (
	requestTimeoutMs = 2_000
	// longPollGraceMs is added to a long poll's wait for its timeout.
	longPollGraceMs    = 2_000
	produceAttemptsMax = 4
)

type role int

const (
	roleAdmin role = iota
	roleProducer
	roleConsumer
	roleReplayer
)

// client is a simulated HTTP client: one request at a time, with timeouts
// and retries like a real client.
type client struct {
	w    *World
	name string
	role role
	// busy is true while the client has work in progress (a request or a
	// retry scheduled).
	busy bool
	// pinnedPartition is a producer's fixed partition (a write storm), or
	// msg.PartitionNone.
	pinnedPartition int
	// storm is set on a producer of the moves scenario's write storms: it
	// produces only while a storm blows, large records in batches.
	storm *stormState
	// replay cursors, per partition, for a replayer.
	cursors []uint64
	next    int
	// final is set on the replayer that reads everything at the end.
	final bool
	// done is set on the final replayer when it read every partition.
	done bool
}

func newClient(w *World, name string, r role) *client {
	return &client{w: w, name: name, role: r, pinnedPartition: msg.PartitionNone}
}

// call is one HTTP request of a client.
type call struct {
	client      *client
	kind        string
	httpRequest *http.Request
	request     msg.Request
	// target is the node the client sent it to: a random one, unless the
	// call was made for a given node.
	target *simNode
	// Set by the node when it takes the request.
	node            *simNode
	nodeIncarnation int
	requestID       msg.RequestID

	sentMs    int64
	timeoutMs int64
	finished  bool
	// onDone gets the response, or nil when the client timed out.
	onDone func(response *httpapi.Response)
	// description is describe's answer, made at its first call for
	// describedBy and describedKind (a call is described in several trace
	// lines).
	description   string
	describedBy   *client
	describedKind string
}

// describe is "client kind request-URI".
func (c *call) describe() string {
	if c.description == "" || c.describedBy != c.client || c.describedKind != c.kind {
		c.description = c.client.name + " " + c.kind + " " + c.httpRequest.URL.RequestURI()
		c.describedBy, c.describedKind = c.client, c.kind
	}
	return c.description
}

// The host and remote address of every simulated request, as
// httptest.NewRequest gives them.
const (
	simRequestHost = "example.com"
	simRemoteAddr  = "192.0.2.1:1234"
)

// newHTTPRequest builds the server-side request a client's call arrives
// as: the fields httptest.NewRequest sets for a path target, without
// parsing request text through a 4 KiB reader for every call. The request,
// its URL, its body's reader and its Content-Type value are one allocation.
func newHTTPRequest(method, target, contentType string, body string) *http.Request {
	built := &builtRequest{}
	parseRequestTarget(&built.url, target)
	r := &built.request
	*r = http.Request{Method: method, URL: &built.url, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
		Body: http.NoBody, Host: simRequestHost, RemoteAddr: simRemoteAddr, RequestURI: target}
	if body != "" {
		built.body.Reset(body)
		r.Body, r.ContentLength = &built.body, int64(len(body))
	}
	if contentType != "" {
		built.contentType[0] = contentType
		r.Header["Content-Type"] = built.contentType[:] // as Header.Set stores it: the key is canonical
	}
	return r
}

// builtRequest holds what newHTTPRequest allocates for one request; the
// request points into it and nothing else does.
type builtRequest struct {
	// request is the request handed out; its URL is url, its Body is body
	// when it has one, and its Content-Type header's values are contentType.
	request     http.Request
	url         url.URL
	body        requestBody
	contentType [1]string
}

// requestBody is a request's body, read from a string; closing it does
// nothing (io.NopCloser's behaviour, without boxing a reader of its own).
type requestBody struct{ strings.Reader }

func (*requestBody) Close() error { return nil }

// parseRequestTarget sets u to what url.ParseRequestURI parses target as.
// A target of plainPath and a non-empty query of no control character,
// the form of every call the workload makes, parses to that path and raw
// query alone: it has no scheme, and its path neither holds nor needs an
// escape. Any other goes through ParseRequestURI.
func parseRequestTarget(u *url.URL, target string) {
	path, query, hasQuery := strings.Cut(target, "?")
	if plainPath(path) && (!hasQuery || query != "" && !hasControlByte(query)) {
		*u = url.URL{Path: path, RawQuery: query}
		return
	}
	parsed, err := url.ParseRequestURI(target)
	assert(err == nil, "request target %q: %v", target, err)
	*u = *parsed
}

// plainPath reports whether path starts with '/' and holds only letters,
// digits, '/' and the unreserved "-._~": characters URL paths neither
// escape nor unescape.
func plainPath(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	for i := 0; i < len(path); i++ {
		c := path[i]
		letterOrDigit := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !letterOrDigit && !strings.ContainsRune("/-._~", rune(c)) {
			return false
		}
	}
	return true
}

// hasControlByte reports whether s holds a byte url.Parse refuses: an
// ASCII control character.
func hasControlByte(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] == 0x7f {
			return true
		}
	}
	return false
}

// send decodes the request as the server would and puts it on the wire.
func (cl *client) send(c *call) {
	c.client, c.sentMs = cl, cl.w.nowMs
	if c.target == nil { // a probe names its node; the workload does not
		c.target = cl.w.clientNode(cl.w.workloadRng)
	}
	request, failure := cl.w.decode(c)
	if failure != nil {
		response := failure.Response
		cl.w.at(1, func() { cl.complete(c, &response) })
		return
	}
	c.request = request
	cl.w.trace.addParts(cl.w.nowMs, cl.name, " send ", c.describe(), " to ", c.target.id)
	cl.w.network.toNode(c)
	timeout := c.timeoutMs
	if timeout == 0 {
		timeout = requestTimeoutMs
	}
	cl.w.at(timeout, func() { cl.timeout(c) })
}

func (cl *client) complete(c *call, response *httpapi.Response) {
	if c.finished {
		return
	}
	c.finished = true
	line := append(cl.w.trace.begin(cl.w.nowMs), cl.name...) // "%s got %d for %s"
	line = append(strconv.AppendInt(append(line, " got "...), int64(response.Status), 10), " for "...)
	cl.w.trace.end(append(line, c.kind...))
	c.onDone(response)
}

func (cl *client) timeout(c *call) {
	if c.finished {
		return
	}
	c.finished = true
	cl.w.tracef("%s timeout %s", cl.name, c.describe())
	cl.w.network.cancel(c)
	c.onDone(nil)
}

// later runs f after a think time, if the world still runs.
func (cl *client) later(delayMs int64, f func()) {
	cl.w.at(delayMs, func() {
		if cl.w.phase != phaseDone {
			f()
		}
	})
}

// createTopic creates the simulated topic, retrying until it exists.
func (cl *client) createTopic(partitions, visibilityMs int) {
	deadLetters := ""
	if cl.w.deadLetters != nil {
		deadLetters = cl.w.deadLetters.createTopicFields()
	}
	body := fmt.Sprintf(`{"name":%q,"partitions":%d,"visibility_timeout_ms":%d%s%s}`, cl.w.topic, partitions, visibilityMs, deadLetters,
		cl.w.agedOut.createTopicFields())
	c := &call{kind: "create-topic", httpRequest: newHTTPRequest(http.MethodPost, "/v1/topics", "application/json", body)}
	c.onDone = func(response *httpapi.Response) {
		switch {
		case response != nil && (response.Status == http.StatusCreated || response.Status == http.StatusConflict) && cl.w.opts.Fanout:
			cl.createChildren(cl.w.fanoutChildren())
		case response != nil && (response.Status == http.StatusCreated || response.Status == http.StatusConflict):
			cl.w.phase = phaseSafety
		case response != nil && response.Status < 500:
			cl.w.fail("client", "create topic answered %d: %s", response.Status, response.Body)
		default:
			cl.later(100, func() { cl.createTopic(partitions, visibilityMs) })
		}
	}
	cl.send(c)
}

// unexpected fails the run for a response no correct server gives.
func (cl *client) unexpected(c *call, response *httpapi.Response) {
	cl.w.fail("client", "%s: unexpected %d: %s", c.describe(), response.Status, response.Body)
}
