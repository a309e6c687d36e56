package httpserve

import (
	"errors"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
)

// refusal is a request the server answers itself, with Connection: close.
type refusal struct {
	status  int
	reason  Reason
	message string
}

func (r *refusal) Error() string { return r.message }

func refuse(status int, reason Reason, message string) *refusal {
	return &refusal{status: status, reason: reason, message: message}
}

var (
	errHeaderTooLarge = refuse(http.StatusRequestHeaderFieldsTooLarge, ReasonHeaderTooLarge, "request header too large")
	errTooManyFields  = refuse(http.StatusRequestHeaderFieldsTooLarge, ReasonHeaderTooLarge, "too many request header fields")
)

// readHeader reads until a whole header block is buffered and returns it;
// a *refusal, or the read's error (the connection then closes silently).
func (c *conn) readHeader() ([]byte, error) {
	for {
		c.in.skipBlankLines()
		if block := c.in.headerEnd(); block != nil {
			return block, nil
		}
		if c.in.buffered() >= headerBytesMax {
			return nil, errHeaderTooLarge
		}
		if err := c.needMore(); err != nil {
			if errors.Is(err, errInputFull) {
				return nil, errHeaderTooLarge
			}
			return nil, err
		}
	}
}

// parseRequest fills c.request from a header block, or refuses it.
func (c *conn) parseRequest(block []byte) *refusal {
	text := string(block) // one allocation: every field below is a substring of it
	requestLine, fields, _ := strings.Cut(text, "\n")
	method, target, major, minor, failure := parseRequestLine(strings.TrimSuffix(requestLine, "\r"))
	if failure != nil {
		return failure
	}
	if failure := c.parseFields(fields); failure != nil {
		return failure
	}
	*c.request = *c.template
	request := c.request
	request.Method, request.RequestURI, request.ProtoMajor, request.ProtoMinor = method, target, major, minor
	request.Proto = "HTTP/1.1"
	if minor == 0 {
		request.Proto = "HTTP/1.0"
	}
	request.Header, request.RemoteAddr, request.TLS = c.header, c.remoteAddr, c.tlsState
	if failure := c.parseTarget(target); failure != nil {
		return failure
	}
	if failure := c.parseHost(); failure != nil {
		return failure
	}
	if failure := c.parseFraming(); failure != nil {
		return failure
	}
	connection := c.header["Connection"]
	c.closeAfter = minor == 0 && !hasTokenIn(connection, "keep-alive") || hasTokenIn(connection, "close")
	request.Close = c.closeAfter
	return nil
}

// parseRequestLine splits "METHOD target HTTP/x.y".
func parseRequestLine(line string) (method, target string, major, minor int, failure *refusal) {
	method, rest, found := strings.Cut(line, " ")
	target, proto, found2 := strings.Cut(rest, " ")
	if !found || !found2 || !isToken(method) || target == "" || !isTargetText(target) {
		return "", "", 0, 0, refuse(http.StatusBadRequest, ReasonMalformed, "malformed request line")
	}
	switch proto {
	case "HTTP/1.1":
		return method, target, 1, 1, nil
	case "HTTP/1.0":
		return method, target, 1, 0, nil
	}
	if len(proto) == len("HTTP/1.1") && strings.HasPrefix(proto, "HTTP/1.") && '2' <= proto[7] && proto[7] <= '9' {
		return method, target, 1, 1, nil // a later 1.x minor is served as 1.1 (RFC 9110 2.5)
	}
	if version, ok := strings.CutPrefix(proto, "HTTP/"); ok && version != "" && strings.Trim(version, "0123456789.") == "" {
		return "", "", 0, 0, refuse(http.StatusHTTPVersionNotSupported, ReasonVersion, "HTTP version not supported")
	}
	return "", "", 0, 0, refuse(http.StatusBadRequest, ReasonMalformed, "malformed HTTP version")
}

// parseFields fills c.header from the field lines.
func (c *conn) parseFields(fields string) *refusal {
	clear(c.header)
	c.values = c.values[:0]
	for fields != "" {
		var line string
		line, fields, _ = strings.Cut(fields, "\n")
		line = strings.TrimSuffix(line, "\r")
		name, value, found := strings.Cut(line, ":")
		if !found || !isToken(name) {
			return refuse(http.StatusBadRequest, ReasonMalformed, "malformed header field")
		}
		value = strings.Trim(value, " \t")
		if !isFieldValue(value) {
			return refuse(http.StatusBadRequest, ReasonMalformed, "malformed header value")
		}
		name = canonicalName(name)
		if len(c.values) == headerFieldsMax {
			return errTooManyFields
		}
		c.values = append(c.values, value)
		if existing, ok := c.header[name]; ok {
			c.header[name] = append(existing, value)
		} else {
			c.header[name] = c.values[len(c.values)-1 : len(c.values) : len(c.values)]
		}
	}
	return nil
}

// parseTarget fills the reused URL from the request target.
func (c *conn) parseTarget(target string) *refusal {
	c.request.URL = &c.url
	if target[0] == '/' && strings.IndexByte(target, '%') < 0 {
		path, query, _ := strings.Cut(target, "?")
		c.url = url.URL{Path: path, RawQuery: query}
		return nil
	}
	if target == "*" {
		c.url = url.URL{Path: "*"}
		return nil
	}
	parsed, err := url.ParseRequestURI(target)
	if err != nil {
		return refuse(http.StatusBadRequest, ReasonMalformed, "malformed request target")
	}
	c.url = *parsed
	return nil
}

// parseHost moves the Host field to request.Host, as net/http does;
// HTTP/1.1 requires exactly one.
func (c *conn) parseHost() *refusal {
	hosts := c.header["Host"]
	if len(hosts) > 1 || len(hosts) == 0 && c.request.ProtoMinor == 1 {
		return refuse(http.StatusBadRequest, ReasonMalformed, "missing or repeated Host header")
	}
	if len(hosts) == 1 && !isHostText(hosts[0]) {
		return refuse(http.StatusBadRequest, ReasonMalformed, "malformed Host header")
	}
	delete(c.header, "Host")
	c.request.Host = c.url.Host
	if c.request.Host == "" && len(hosts) == 1 {
		c.request.Host = hosts[0]
	}
	return nil
}

// chunked is every chunked request's TransferEncoding; handlers must not
// change it.
var chunked = []string{"chunked"}

// parseFraming decides how the body is delimited and sets the request's
// Body and ContentLength.
func (c *conn) parseFraming() *refusal {
	request, encodings, lengths := c.request, c.header["Transfer-Encoding"], c.header["Content-Length"]
	c.body.reset()
	switch {
	case len(encodings) > 0 && len(lengths) > 0:
		return refuse(http.StatusBadRequest, ReasonFraming, "both Content-Length and Transfer-Encoding")
	case len(encodings) > 0 && request.ProtoMinor == 0:
		return refuse(http.StatusBadRequest, ReasonFraming, "Transfer-Encoding in an HTTP/1.0 request") // RFC 9112 6.1
	case len(encodings) > 0:
		if len(encodings) != 1 || !strings.EqualFold(encodings[0], "chunked") {
			return refuse(http.StatusNotImplemented, ReasonFraming, "unsupported transfer encoding")
		}
		c.body.mode, request.ContentLength, request.TransferEncoding = bodyChunked, -1, chunked
	case len(lengths) > 0:
		length, err := strconv.ParseUint(lengths[0], 10, 63) // digits only: no sign, not even "-0"
		for _, other := range lengths[1:] {
			if other != lengths[0] {
				err = strconv.ErrSyntax
			}
		}
		if err != nil {
			return refuse(http.StatusBadRequest, ReasonFraming, "malformed Content-Length")
		}
		request.ContentLength = int64(length)
		if length > 0 {
			c.body.mode, c.body.remaining = bodyLength, int64(length)
		}
	}
	if c.body.mode == bodyDone {
		request.Body = http.NoBody
	} else {
		request.Body = &c.body
	}
	return c.parseExpect()
}

// parseExpect accepts Expect: 100-continue (the 100 is sent when the
// handler first reads the body; an HTTP/1.0 request, or one without a
// body, gets none) and refuses every other expectation, with or without
// a body: a body-less request that carried one was served (a DELETE with
// "Expect: magic" deleted its topic), although nothing refused may reach
// the API.
func (c *conn) parseExpect() *refusal {
	expect := c.header["Expect"]
	switch {
	case len(expect) == 0:
		return nil
	case len(expect) == 1 && strings.EqualFold(expect[0], "100-continue"):
		c.body.expectContinue = c.body.mode != bodyDone && c.request.ProtoMinor > 0
		return nil
	}
	return refuse(http.StatusExpectationFailed, ReasonExpectation, "unsupported expectation")
}

// canonicalName returns name in canonical form without allocating when
// it already is.
func canonicalName(name string) string {
	upper := true
	for i := 0; i < len(name); i++ {
		b := name[i]
		if upper && 'a' <= b && b <= 'z' || !upper && 'A' <= b && b <= 'Z' {
			return textproto.CanonicalMIMEHeaderKey(name)
		}
		upper = b == '-'
	}
	return name
}

// isToken reports a non-empty RFC 9110 token.
func isToken(text string) bool { return text != "" && allIn(&tokenByte, text) }

// isHostText reports a Host value made only of the bytes a host, a port
// and an IP literal may hold (RFC 3986 reg-name, IP-literal, port, and
// '%' for escapes and zones); empty is allowed.
func isHostText(text string) bool { return allIn(&hostByte, text) }

// tokenByte marks the bytes of an RFC 9110 token; hostByte those
// isHostText allows.
var (
	tokenByte = alphanumericAnd("!#$%&'*+-.^_`|~")
	hostByte  = alphanumericAnd("!$%&'()*+,-.:;=[]_~")
)

// alphanumericAnd marks the ASCII letters and digits and the bytes of
// extra.
func alphanumericAnd(extra string) (table [256]bool) {
	for b := '0'; b <= 'z'; b++ {
		table[b] = 'A' <= b && b <= 'Z' || 'a' <= b && b <= 'z' || '0' <= b && b <= '9'
	}
	for _, b := range extra {
		table[b] = true
	}
	return table
}

// allIn reports whether every byte of text is marked in table.
func allIn(table *[256]bool, text string) bool {
	for i := 0; i < len(text); i++ {
		if !table[text[i]] {
			return false
		}
	}
	return true
}

// isTargetText reports a request target without controls or spaces.
func isTargetText(text string) bool {
	for i := 0; i < len(text); i++ {
		if text[i] <= ' ' || text[i] == 0x7f {
			return false
		}
	}
	return true
}

// isFieldValue reports a field value without controls other than tab.
func isFieldValue(text string) bool {
	for i := 0; i < len(text); i++ {
		if b := text[i]; b < ' ' && b != '\t' || b == 0x7f {
			return false
		}
	}
	return true
}

// hasToken reports whether a comma-separated list holds token, in any
// case.
func hasToken(list, token string) bool {
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, ",")
		if strings.EqualFold(strings.Trim(item, " \t"), token) {
			return true
		}
	}
	return false
}

func hasTokenIn(lists []string, token string) bool {
	for _, list := range lists {
		if hasToken(list, token) {
			return true
		}
	}
	return false
}
