package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"mime"
	"net"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"narad/msg"
)

// errTrailingData: a JSON body holds more than one value.
var errTrailingData = errors.New("unexpected data after the JSON value")

// parseQuery parses the query string strictly: a malformed pair fails the
// request instead of being dropped, and so does a parameter given twice
// (no route lets the first or the last win silently).
// A request without a query, the common produce, gets no map: reading a
// nil url.Values finds nothing, and no caller writes to it.
func parseQuery(r *http.Request) (url.Values, *ErrorResponse) {
	if r.URL.RawQuery == "" {
		return nil, nil
	}
	values, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, invalidf("invalid query string: %v", err)
	}
	for _, given := range values { //determinism:ok only whether any is given twice
		if len(given) > 1 {
			return nil, duplicateParameter(values)
		}
	}
	return values, nil
}

// checkQuery is parseQuery's failure, or nil, without building the map
// when the query is plain (no escape, '+' or ';': each name is then its
// text as written) and short, as the common query is: its route's
// decoder parses it again. Any other query is parsed (url.ParseQuery
// also bounds the number of parameters).
func checkQuery(r *http.Request) *ErrorResponse {
	if r.URL.RawQuery == "" {
		return nil
	}
	query := r.URL.RawQuery
	if strings.ContainsAny(query, "%+;") || strings.Count(query, "&") >= plainQueryPairsMax || plainQueryRepeatsName(query) {
		_, failed := parseQuery(r)
		return failed
	}
	return nil
}

// plainQueryPairsMax bounds the pairs of a query checkQuery reads itself
// (its scan for a repeated name is quadratic).
const plainQueryPairsMax = 32

// plainQueryRepeatsName reports whether a query without escapes names a
// parameter twice, as url.ParseQuery reads names: the text of each
// non-empty '&'-separated pair before its first '='.
func plainQueryRepeatsName(query string) bool {
	for rest := query; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if pair == "" {
			continue
		}
		name, _, _ := strings.Cut(pair, "=")
		for later := rest; later != ""; {
			var other string
			other, later, _ = strings.Cut(later, "&")
			if otherName, _, _ := strings.Cut(other, "="); other != "" && otherName == name {
				return true
			}
		}
	}
	return false
}

// duplicateParameter names the first parameter, in name order, given
// more than once (one at least is).
func duplicateParameter(values url.Values) *ErrorResponse {
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if len(values[name]) > 1 {
			return invalidf("duplicate query parameter %s", quoteClipped(name))
		}
	}
	assert(false, "duplicateParameter found no parameter given twice")
	return nil
}

// rejectDuplicates fails when one of names appears more than once (for a
// query not read through parseQuery).
func rejectDuplicates(query url.Values, names ...string) *ErrorResponse {
	for _, name := range names {
		if len(query[name]) > 1 {
			return invalidf("duplicate query parameter %s", quoteClipped(name))
		}
	}
	return nil
}

// pathTopic returns the {topic} path value, checked against the topic
// name rule.
func pathTopic(r *http.Request) (string, *ErrorResponse) {
	name := r.PathValue("topic")
	if !validTopicName(name) {
		return "", failure(errInvalidTopicName)
	}
	return name, nil
}

// errInvalidTopicName: a name breaks the rule of docs/api.md#conventions. The
// name is not echoed: it may be long.
var errInvalidTopicName = msg.Invalid("invalid topic name: " + topicNameRule)

// topicNameRule is what a topic name must be, as the errors about one say.
const topicNameRule = `want 1 to 255 characters of A-Z a-z 0-9 . _ -, and not "." or ".."`

// invalidTopicNameIn refuses name, given in the field called field
// (parent, child, dead_letter_topic), quoting it clipped and saying the
// rule it breaks.
func invalidTopicNameIn(field, name string) *ErrorResponse {
	return invalidf("invalid %s name %s: %s", field, quoteClipped(name), topicNameRule)
}

// validTopicName reports whether name matches ^[A-Za-z0-9._-]{1,255}$ and
// is neither "." nor ".." (a topic name becomes a directory name).
func validTopicName(name string) bool {
	if len(name) == 0 || len(name) > msg.TopicNameBytesMax || name == "." || name == ".." {
		return false
	}
	for i := 0; i < len(name); i++ {
		if !topicNameByte(name[i]) {
			return false
		}
	}
	return true
}

func topicNameByte(b byte) bool {
	return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') ||
		b == '.' || b == '_' || b == '-'
}

// optionalPartition parses the first "partition" parameter: absent is
// msg.PartitionNone, present must be an integer from 0 to math.MaxInt.
func optionalPartition(query url.Values) (int, *ErrorResponse) {
	if !query.Has("partition") {
		return msg.PartitionNone, nil
	}
	partition, err := strconv.Atoi(query.Get("partition"))
	if err != nil || partition < 0 {
		return 0, failure(errInvalidPartition)
	}
	return partition, nil
}

// errInvalidPartition: a partition parameter is not an integer from 0 to
// math.MaxInt (made once: a produce may carry one).
var errInvalidPartition = msg.Invalid("%s", outOfRange("partition", 0, math.MaxInt))

// boundedInt parses the first value of name as an integer in
// [lowest, highest]; absent gives fallback.
func boundedInt(query url.Values, name string, lowest, highest, fallback int) (int, *ErrorResponse) {
	if !query.Has(name) {
		return fallback, nil
	}
	value, err := strconv.Atoi(query.Get(name))
	if err != nil || value < lowest || value > highest {
		return 0, invalidf("%s", outOfRange(name, uint64(lowest), uint64(highest)))
	}
	return value, nil
}

// outOfRange is the refusal of every integer query parameter: it names
// the range, both ends, so that it stays true of any text refused, a
// number too large for the parameter's type included ("want an integer
// >= 0" was said of an offset past 2^64-1, which is one). The ends are
// never negative.
func outOfRange(name string, lowest, highest uint64) string {
	return "invalid " + name + ": want an integer from " +
		strconv.FormatUint(lowest, 10) + " to " + strconv.FormatUint(highest, 10)
}

// readBody reads the whole body, failing with 413 past bytesMax. It reads
// at most bytesMax+1 bytes, and its buffer grows with the bytes that
// arrive: an announced Content-Length reserves nothing (a client could
// announce megabytes and send one byte). A body read to its end within
// bytesMax is closed at once: the HTTP server then has nothing left to
// discard before it answers (it otherwise copies the rest of an unclosed
// body through io.Discard, an allocation and a read per request).
func readBody(r *http.Request, bytesMax int64) ([]byte, *ErrorResponse) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 { // nothing to read: no buffer, uncharged
		return nil, nil
	}
	if r.ContentLength > bytesMax {
		return nil, failure(ErrBodyTooLarge)
	}
	reserver, _ := r.Body.(bodyReserver)
	body, err := readGrowing(r.Body, r.ContentLength, bytesMax, reserver)
	if errors.Is(err, errBodyOverCap) {
		return nil, failure(ErrBodyTooLarge)
	}
	if err != nil {
		return nil, readFailure(err)
	}
	_ = r.Body.Close() // read to its end: closing it cannot fail or lose anything
	return body, nil
}

// readStartBytes is the first buffer of a body read, reserved before any
// of its bytes arrived; it doubles as they arrive. The connection's own
// input buffer is as large: a request that sent its header and nothing
// more holds this much of the body budget (at 64 KiB, 4,096 such
// connections held the default 256 MiB budget, and every produce got 503).
const readStartBytes = 4 << 10

// errBodyOverCap: a body read by readGrowing holds more than its cap.
var errBodyOverCap = errors.New("request body over its cap")

// readGrowing reads everything into a buffer that doubles as bytes
// arrive, never past the announced length and one byte more while the
// body keeps to it: the byte is where the read that finds the end goes,
// so that a body of the announced length (every body the HTTP server
// hands over) is read into one buffer, never copied, and the buffer is at
// most twice what was received. Each buffer size is reserved from the
// request body budget (reserver, nil outside the server) before it is
// allocated. The buffer never outgrows bytesMax: a body that fills it is
// probed for one more byte aside (errBodyOverCap if there is one), so
// that a body at its cap needs a reservation of its cap, no more (a
// chunked body finds its end only on the read after its last bytes).
func readGrowing(r io.Reader, contentLength, bytesMax int64, reserver bodyReserver) ([]byte, error) {
	exact := int64(0) // the announced length and the byte that finds the end; 0 when not announced
	if contentLength > 0 {
		exact = contentLength + 1
	}
	size := min(int64(readStartBytes), bytesMax)
	if exact > 0 {
		size = min(size, exact)
	}
	if reserver != nil && !reserver.reserve(size) {
		return nil, errBodyBudgetFull
	}
	body := make([]byte, 0, size)
	for {
		if len(body) == cap(body) {
			if int64(cap(body)) >= bytesMax {
				return body, probeEnd(r)
			}
			grown := min(int64(2*cap(body)), bytesMax)
			if exact > int64(cap(body)) {
				grown = min(grown, exact)
			}
			if reserver != nil && !reserver.reserve(grown) {
				return nil, errBodyBudgetFull
			}
			body = append(make([]byte, 0, grown), body...) // exactly grown: the size reserved
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, nil
		}
		if err != nil {
			return body, err
		}
	}
}

// probeEnd reads past a body that filled its cap: nil when it ends there,
// errBodyOverCap when a byte follows. A body under the budget reads that
// byte aside (readAside): charged to the budget, it asked for one byte
// more than a body at its cap may hold, and at the smallest budget (one
// largest batch) a chunked body over its cap got a 503 to retry, forever,
// instead of its 413.
func probeEnd(r io.Reader) error {
	read := r.Read
	if aside, ok := r.(asideReader); ok {
		read = aside.readAside
	}
	var probe [1]byte
	for {
		n, err := read(probe[:])
		switch {
		case n > 0:
			return errBodyOverCap
		case err == io.EOF:
			return nil
		case err != nil:
			return err
		}
	}
}

// readFailure classifies an error reading a body; a server-side
// http.MaxBytesReader cap is a 413 as well.
func readFailure(err error) *ErrorResponse {
	if errors.Is(err, errBodyBudgetFull) {
		return failure(errBodyBudget)
	}
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return failure(ErrBodyTooLarge)
	}
	// The error text names the connection's addresses: say only its kind.
	var netError net.Error
	switch {
	case errors.As(err, &netError) && netError.Timeout():
		return invalidf("could not read request body: timed out")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return invalidf("could not read request body: it ended before its announced length")
	}
	return invalidf("could not read request body")
}

// readJSONBody reads a JSON body of at most the codec's JSON cap and
// decodes it strictly into value, a struct: any other JSON than an object
// is refused, null included.
func (c *Codec) readJSONBody(r *http.Request, value any) *ErrorResponse {
	body, failed := readBody(r, c.config.JSONBodyBytesMax)
	if failed != nil {
		return failed
	}
	if !utf8.Valid(body) {
		// encoding/json would turn the bad bytes into U+FFFD: a password
		// set so could never be typed again
		return invalidf("invalid json: the body is not valid UTF-8")
	}
	if bytes.Equal(bytes.TrimSpace(body), jsonNull) {
		// encoding/json leaves a struct as it was for null: the body would
		// read as {} and be refused for a missing field, or not at all
		return invalidf("invalid json: %s", typeMismatch("the body", "an object", "null"))
	}
	if err := decodeStrictJSON(body, value); err != nil {
		if nestsTooDeep(body, err) {
			return invalidf("invalid json: %s", tooDeepMessage("the body"))
		}
		return invalidf("invalid json: %s", describeJSONError(err))
	}
	return nil
}

// tooDeepMessage says that subject, a JSON text, nests past the parser's
// bound, which it names (encoding/json's own words name neither).
func tooDeepMessage(subject string) string {
	return fmt.Sprintf("%s nests its arrays and objects more than %d levels deep (at most %d)",
		subject, jsonNestingDepthMax, jsonNestingDepthMax)
}

// jsonNull is the JSON null literal.
var jsonNull = []byte("null")

// describeJSONError says what was wrong with a body in the API's terms: a
// value of the wrong type names its field and the JSON type it wants,
// not the server's Go types.
func describeJSONError(err error) string {
	var typeError *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty"
	case !errors.As(err, &typeError):
		return clipMessage(strings.TrimPrefix(err.Error(), "json: ")) // "invalid json: unknown field", not "invalid json: json: ..."
	}
	subject := "the body"
	if typeError.Field != "" {
		subject = fieldNamed(typeError.Field)
	}
	return typeMismatch(subject, jsonKind(typeError.Type), clipMessage(typeError.Value))
}

// typeMismatch words a JSON value of the wrong type, in a body or a batch
// line: what it is (the body, a record, a field), the JSON it must be, and
// the JSON value it is ("number", "number 1.5", "array", ...).
func typeMismatch(subject, wants, got string) string {
	if literal, isNumber := strings.CutPrefix(got, "number "); isNumber && wants == "an integer" && integerLiteral(literal) {
		// an integer, past what 64 bits hold: "must be an integer" would deny it is one
		return fmt.Sprintf("%s must be an integer from %d to %d, not %s", subject, math.MinInt64, math.MaxInt64, literal)
	}
	return subject + " must be " + wants + ", not a JSON " + got
}

// integerLiteral reports whether a JSON number is written as an integer:
// digits, after an optional minus, with no fraction or exponent.
func integerLiteral(number string) bool {
	digits := strings.TrimPrefix(number, "-")
	return digits != "" && strings.Trim(digits, "0123456789") == ""
}

// fieldNamed is a field as typeMismatch names it.
func fieldNamed(name string) string { return "field " + strconv.Quote(name) }

// jsonKind names the JSON values a Go type decodes from.
func jsonKind(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// decodeStrictJSON decodes exactly one JSON value with no unknown fields
// and no key given twice in one object (the last would silently win);
// whitespace may follow it, nothing else.
func decodeStrictJSON(data []byte, value any) error {
	if key, within := locateDuplicateKey(data, reflect.TypeOf(value)); key != "" {
		return errDuplicateKey(key, within)
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(value); err != nil {
		return err
	}
	if _, err := decoder.Token(); err != io.EOF {
		return errTrailingData
	}
	return nil
}

// hasMediaType reports whether r's Content-Type is mediaType (a valid
// lower-case type), parameters and letter case aside. A value without
// parameters is compared as mime.ParseMediaType would (trimmed, any
// case) without the map of parameters it allocates.
func hasMediaType(r *http.Request, mediaType string) bool {
	value := r.Header.Get("Content-Type")
	if !strings.Contains(value, ";") {
		return asciiLowerEqual(strings.TrimSpace(value), mediaType)
	}
	parsed, _, err := mime.ParseMediaType(value)
	return err == nil && parsed == mediaType
}

// asciiLowerEqual reports whether value, with its ASCII letters lowered,
// is lower (only ASCII folds: a media type is a token).
func asciiLowerEqual(value, lower string) bool {
	if len(value) != len(lower) {
		return false
	}
	for i := range len(value) {
		c := value[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}
