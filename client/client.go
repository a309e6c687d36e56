package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	// timeoutDefault bounds one request when no WithTimeout option is given
	// (the CLI's HTTP client timeout is 60 s: docs/api.md#cli).
	timeoutDefault = 60 * time.Second
	// replyBytesMax bounds how much of a reply body the client reads. The
	// largest legitimate reply is a batch consume of 100 messages of 1 MiB
	// each, base64-encoded; anything larger is a broken or hostile server.
	replyBytesMax = 160 << 20
	// errorBodyBytesMax bounds how much of an error body becomes the message.
	errorBodyBytesMax = 4 << 10
)

// Client talks to one broker node over HTTP. Create it with New.
type Client struct {
	// baseURL is scheme://host[:port] with no trailing slash. Set by New,
	// never changed afterwards.
	baseURL string
	// user and password are sent as HTTP Basic auth when user is non-empty.
	// Set by New through WithBasicAuth, never changed afterwards.
	user     string
	password string
	// httpClient sends the requests. Never nil after New.
	httpClient *http.Client
	// timeout bounds each request (plus the long-poll wait for consume).
	// Always > 0 after New.
	timeout time.Duration
	// rootCAs, when set by WithRootCAs, are the only CAs an https
	// server's certificate may chain to; New applies them to the
	// transport. Never changed afterwards.
	rootCAs *x509.CertPool
}

// Option configures a Client in New.
type Option func(*Client)

// WithBasicAuth sends HTTP Basic credentials with every request. An empty
// user sends none.
func WithBasicAuth(user, password string) Option {
	return func(c *Client) {
		c.user = user
		c.password = password
	}
}

// WithHTTPClient sends requests through httpClient (for a shared transport
// with a large idle pool, say). A nil httpClient keeps the default.
func WithHTTPClient(httpClient *http.Client) Option {
	return func(c *Client) {
		if httpClient != nil {
			c.httpClient = httpClient
		}
	}
}

// WithRootCAs trusts only these CAs for an https:// server (a server
// whose certificate the system does not know). It applies to the HTTP
// client whatever the order of the options: its transport is cloned with
// the pool, which must be an *http.Transport (or nil for the default), or
// a RootCAsTransport, which is handed the pool.
func WithRootCAs(pool *x509.CertPool) Option {
	return func(c *Client) { c.rootCAs = pool }
}

// WithTimeout bounds each request; a long-poll consume gets its wait added.
// A timeout ≤ 0 keeps the default of 60 s.
func WithTimeout(timeout time.Duration) Option {
	return func(c *Client) {
		if timeout > 0 {
			c.timeout = timeout
		}
	}
}

// New returns a client for the node at baseURL, such as
// "http://127.0.0.1:7942". A baseURL without a scheme gets "http://".
func New(baseURL string, options ...Option) *Client {
	c := &Client{
		baseURL:    normalizeBaseURL(baseURL),
		httpClient: &http.Client{},
		timeout:    timeoutDefault,
	}
	for _, option := range options {
		option(c)
	}
	if c.rootCAs != nil {
		c.httpClient = withRootCAs(c.httpClient, c.rootCAs)
	}
	followsNone := *c.httpClient // a copy: a client given by WithHTTPClient may be shared
	followsNone.CheckRedirect = refuseRedirect
	c.httpClient = &followsNone
	return c
}

// refuseRedirect keeps a redirect's answer as the answer: Go's client
// would follow it with the Basic credentials to the same host on any port
// and scheme (an https:// server redirecting to http:// would have the
// password sent in clear), and a broker never redirects. send turns it
// into an error that says so.
func refuseRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// RootCAsTransport is a transport that applies a pool of trusted CAs
// itself (one that wraps an *http.Transport, say): WithRootCAs hands it
// the pool rather than replacing it with a clone of Go's default.
type RootCAsTransport interface {
	http.RoundTripper
	// WithRootCAs returns a transport like this one that trusts only pool
	// for https:// servers.
	WithRootCAs(pool *x509.CertPool) http.RoundTripper
}

// withRootCAs returns a copy of httpClient whose transport trusts pool.
func withRootCAs(httpClient *http.Client, pool *x509.CertPool) *http.Client {
	copied := *httpClient
	switch transport := httpClient.Transport.(type) {
	case RootCAsTransport:
		copied.Transport = transport.WithRootCAs(pool)
	case *http.Transport:
		copied.Transport = TransportWithRootCAs(transport, pool)
	default:
		copied.Transport = TransportWithRootCAs(nil, pool) // Go's default
	}
	return &copied
}

// TransportWithRootCAs returns a clone of transport that trusts only pool
// for https:// servers (TLS 1.2 at least where it set no TLS config); a
// nil transport is Go's default.
func TransportWithRootCAs(transport *http.Transport, pool *x509.CertPool) *http.Transport {
	if transport == nil {
		transport = http.DefaultTransport.(*http.Transport)
	}
	transport = transport.Clone()
	if transport.TLSClientConfig == nil {
		transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	transport.TLSClientConfig.RootCAs = pool
	return transport
}

// BaseURL returns the normalized base URL the client sends requests to.
func (c *Client) BaseURL() string { return c.baseURL }

func normalizeBaseURL(baseURL string) string {
	baseURL = strings.TrimSpace(baseURL)
	if !strings.Contains(baseURL, "://") {
		baseURL = "http://" + baseURL
	}
	return strings.TrimRight(baseURL, "/")
}

// Error is a reply whose status the route does not treat as success.
type Error struct {
	// Status is the HTTP status code of the reply.
	Status int
	// Message is the server's {"error": "..."} text, the trimmed text/plain
	// body, or the standard status text when the body said nothing.
	Message string
	// RetryAfter is the reply's Retry-After in whole seconds (every 503
	// carries one); 0 when absent or not a number of seconds.
	RetryAfter time.Duration
}

// retryAfterMax bounds the Retry-After a client honours: a server asking
// for longer is waited for this long.
const retryAfterMax = time.Minute

// parseRetryAfter reads a Retry-After of delay-seconds; 0 otherwise.
func parseRetryAfter(value string) time.Duration {
	seconds, err := strconv.Atoi(strings.TrimSpace(value))
	if err != nil || seconds <= 0 {
		return 0
	}
	return min(time.Duration(seconds)*time.Second, retryAfterMax)
}

// RetryAfterOf is the Retry-After of err's reply, or 0.
func RetryAfterOf(err error) time.Duration {
	var replyError *Error
	if errors.As(err, &replyError) {
		return replyError.RetryAfter
	}
	return 0
}

// Error renders the reply as "http <code>: <message>".
func (e *Error) Error() string {
	return fmt.Sprintf("http %d: %s", e.Status, e.Message)
}

// IsStatus reports whether err is, or wraps, an *Error with the given status.
func IsStatus(err error, status int) bool {
	var replyError *Error
	return errors.As(err, &replyError) && replyError.Status == status
}

// request is one HTTP exchange to build and send.
type request struct {
	method      string
	path        string // escaped path below the base URL, e.g. "/v1/topics/a"
	query       url.Values
	body        []byte
	contentType string
	extraWait   time.Duration // added to the client timeout (long polls)
}

// send performs the request and returns the status and the body, bounded
// by replyBytesMax. Any status in accepted is success; any other becomes an
// *Error.
func (c *Client) send(ctx context.Context, req request, accepted ...int) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout+req.extraWait)
	defer cancel()
	httpRequest, err := c.newHTTPRequest(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	response, err := c.httpClient.Do(httpRequest)
	if err != nil {
		return 0, nil, err
	}
	defer response.Body.Close()
	body, err := readBounded(response.Body, replyBytesMax)
	if err != nil {
		return response.StatusCode, nil, fmt.Errorf("read reply of %s %s: %w", req.method, req.path, err)
	}
	for _, status := range accepted {
		if response.StatusCode == status {
			return status, body, nil
		}
	}
	replyError := newError(response.StatusCode, body)
	if response.StatusCode >= 300 && response.StatusCode < 400 {
		replyError.Message = fmt.Sprintf("the server answered %d, a redirect to %q: the client follows no redirect (the credentials would go along); give it the node's own address",
			response.StatusCode, RedactUserinfo(response.Header.Get("Location")))
	}
	replyError.RetryAfter = parseRetryAfter(response.Header.Get("Retry-After"))
	return response.StatusCode, body, replyError
}

func (c *Client) newHTTPRequest(ctx context.Context, req request) (*http.Request, error) {
	target := c.baseURL + req.path
	if len(req.query) > 0 {
		target += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	httpRequest, err := http.NewRequestWithContext(ctx, req.method, target, body)
	if err != nil {
		var urlError *url.Error
		if errors.As(err, &urlError) {
			urlError.URL = RedactUserinfo(urlError.URL) // a URL that does not parse is quoted whole
		}
		return nil, err
	}
	if req.contentType != "" {
		httpRequest.Header.Set("Content-Type", req.contentType)
	}
	httpRequest.Header.Set("Accept", "application/json")
	if c.user != "" {
		httpRequest.SetBasicAuth(c.user, c.password)
	}
	return httpRequest, nil
}

// RedactUserinfo hides the password of a URL's user information, also of
// a URL net/url cannot parse (and so cannot redact): everything between
// the scheme's "//" and the last "@" before the path.
func RedactUserinfo(rawURL string) string {
	start := strings.Index(rawURL, "//")
	if start < 0 {
		return rawURL
	}
	start += 2
	end := len(rawURL)
	if slash := strings.IndexByte(rawURL[start:], '/'); slash >= 0 {
		end = start + slash
	}
	at := strings.LastIndexByte(rawURL[start:end], '@')
	if at < 0 {
		return rawURL
	}
	user, _, hasPassword := strings.Cut(rawURL[start:start+at], ":")
	if !hasPassword {
		return rawURL
	}
	return rawURL[:start] + user + ":xxxxx" + rawURL[start+at:]
}

func readBounded(reader io.Reader, limitBytes int64) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(reader, limitBytes+1))
	if err != nil {
		return nil, err
	}
	if int64(len(body)) > limitBytes {
		return nil, fmt.Errorf("reply body exceeds %d bytes", limitBytes)
	}
	return body, nil
}

// newError builds the *Error for a reply: the JSON {"error": ...} message,
// else a JSON {"status": ...} (health checks), else the text body, else the
// status text.
func newError(status int, body []byte) *Error {
	var shape struct {
		Error  string `json:"error"`
		Status string `json:"status"`
	}
	message := ""
	if json.Unmarshal(body, &shape) == nil {
		message = shape.Error
		if message == "" {
			message = shape.Status
		}
	} else {
		message = strings.TrimSpace(string(body))
	}
	if len(message) > errorBodyBytesMax {
		message = message[:errorBodyBytesMax]
	}
	if message == "" {
		message = strings.ToLower(http.StatusText(status))
	}
	return &Error{Status: status, Message: message}
}

// getJSON sends a GET and decodes a 200 reply into out.
func (c *Client) getJSON(ctx context.Context, path string, query url.Values, out any) error {
	_, body, err := c.send(ctx, request{method: http.MethodGet, path: path, query: query}, http.StatusOK)
	if err != nil {
		return err
	}
	return decodeReply(body, out)
}

// sendJSON encodes in as the request body (if non-nil), sends it, and
// decodes the reply into out (if non-nil) when the status is accepted.
func (c *Client) sendJSON(ctx context.Context, method, path string, in, out any, accepted ...int) error {
	req := request{method: method, path: path}
	if in != nil {
		encoded, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", method, path, err)
		}
		req.body = encoded
		req.contentType = "application/json"
	}
	_, body, err := c.send(ctx, req, accepted...)
	if err != nil || out == nil {
		return err
	}
	return decodeReply(body, out)
}

func decodeReply(body []byte, out any) error {
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("decode reply: %w", err)
	}
	return nil
}

// Ptr returns a pointer to a copy of value, for the optional fields of
// AlterTopicRequest, ProduceOptions and ConsumeOptions.
func Ptr[T any](value T) *T { return &value }

// topicPath returns the escaped path of a topic, with an optional suffix
// such as "/produce".
func topicPath(topic, suffix string) string {
	return "/v1/topics/" + url.PathEscape(topic) + suffix
}
