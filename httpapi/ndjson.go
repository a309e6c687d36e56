package httpapi

// The decoder of one line of a batch produce (docs/api.md#batch-produce),
// written by hand because the generic encoding/json path (scan the line, scan
// it again to fill a struct, then look for trailing data) was most of the
// server's CPU on large batches. It reads the line once, copies nothing on
// the common path (plain strings and JSON payloads are slices of the line)
// and is exactly as strict as decoding the line strictly into the struct
//
//	type batchLine struct {
//		Key           string          `json:"key"`
//		Partition     *int            `json:"partition"`
//		Payload       json.RawMessage `json:"payload"`
//		PayloadBase64 *string         `json:"payload_base64"`
//	}
//
// with encoding/json and unknown fields disallowed, which is what earlier
// versions did: the same lines are accepted, with the same field-name
// matching (exact, else case-insensitive under Unicode folding), the same
// string unquoting (unpaired surrogate escapes become U+FFFD) and the same
// treatment of null (no key, no partition, no base64 payload; a JSON
// payload of null is the 4 bytes null). Rejected lines get their errors in
// the order encoding/json found them: a syntax error first (in its words),
// then the first field error in line order (in the API's words, as a JSON
// body's: the field and the JSON type it wants), then data after the
// object, then the payload and partition checks. Deliberate differences:
// a line that is not valid UTF-8 is rejected before anything else
// (encoding/json turned its bad bytes into U+FFFD in strings and kept
// them in a raw payload, which is then no JSON text), and a field given
// twice is rejected (encoding/json kept the last value).

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"unicode/utf16"
	"unicode/utf8"

	"narad/msg"
)

// jsonNestingDepthMax bounds the arrays and objects open at once in a
// line, the line's own object included. encoding/json's scanner has the
// same bound, so a line this decoder accepts is one it accepted.
const jsonNestingDepthMax = 10000

// containerStackBytes is how many open containers skipContainer tracks
// without allocating; deeper payloads grow its stack on the heap.
const containerStackBytes = 64

// Errors of one batch line; the caller adds the line number.
var (
	errPayloadChoice    = errors.New("want exactly one of payload and payload_base64")
	errPayloadEmpty     = errors.New("payload is empty")
	errPartitionInvalid = errors.New("partition must be >= 0")
)

// lineField is one of the fields a batch line may carry.
type lineField int

const (
	fieldKey lineField = iota
	fieldPartition
	fieldPayload
	fieldPayloadBase64
	lineFieldCount
)

// lineFieldNames are the JSON names of the line fields.
var lineFieldNames = [lineFieldCount]string{"key", "partition", "payload", "payload_base64"}

// lineFieldKinds name the JSON values each field takes, for a type error.
// The payload takes any value, so its entry is never used.
var lineFieldKinds = [lineFieldCount]string{"a string", "an integer", "any value", "a string"}

// valueKind is the kind of a JSON value.
type valueKind uint8

const (
	kindAbsent valueKind = iota // no value: a field not given, or given as null where null means absent
	kindObject
	kindArray
	kindString
	kindNumber
	kindBool
	kindNull
)

// valueKindNames name the kinds in type errors, as encoding/json does.
var valueKindNames = [...]string{
	kindObject: "object", kindArray: "array", kindString: "string",
	kindNumber: "number", kindBool: "bool", kindNull: "null",
}

// jsonValue is where one syntactically valid value lies in a line.
type jsonValue struct {
	kind  valueKind
	start int // line[start:end] is the value's text, quotes included
	end   int
	// escaped: a string holding a backslash escape.
	escaped bool
	// nonASCII: a string holding a byte of 0x80 or more.
	nonASCII bool
}

// lineDecoder reads one line. decodeBatchLine makes one per line; nothing
// outlives the call.
type lineDecoder struct {
	// line is the text; never changed, and the record's plain key and JSON
	// payload are slices of it.
	line []byte
	// position indexes the next byte to read; it only grows, up to len(line).
	position int
	// depth counts the arrays and objects open at position; a syntax
	// error once it would pass jsonNestingDepthMax.
	depth int
	// nonASCII is set once a string holding a byte of 0x80 or more was
	// read (decodeBatchLine then checks the line is UTF-8).
	nonASCII bool
	// firstError is the first field error (unknown, duplicate or mistyped
	// field) in line order; nil while there is none. Later ones are dropped,
	// as encoding/json reports only the first.
	firstError error
	// seen marks the fields whose name was read; each may be read once.
	seen [lineFieldCount]bool
	// fields holds each field's value; kindAbsent when not given or null
	// (a payload of null is kept: it is the payload "null").
	fields [lineFieldCount]jsonValue
	// partition is the value of fields[fieldPartition] when that is a number.
	partition int
}

// decodeBatchLine decodes one NDJSON line into a record. A JSON payload is
// stored as its raw JSON bytes, exactly as they appear in the line.
func decodeBatchLine(line []byte) (msg.ProduceRecord, error) {
	decoder := lineDecoder{line: line}
	parsed := decoder.readTopLevel()
	if parsed {
		decoder.skipSpace()
	}
	whole := parsed && decoder.position == len(line)
	// A line read whole holds bytes of 0x80 or more only inside strings
	// (anywhere else they are a syntax error), which note them: an ASCII
	// line, the common case, costs no second pass for its UTF-8 check.
	if (!whole || decoder.nonASCII) && !utf8.Valid(line) {
		return msg.ProduceRecord{}, errLineNotUTF8
	}
	switch {
	case !parsed:
		return msg.ProduceRecord{}, syntaxError(line)
	case decoder.firstError != nil:
		return msg.ProduceRecord{}, decoder.firstError
	case !whole:
		return msg.ProduceRecord{}, errTrailingData
	}
	return decoder.record()
}

// errLineNotUTF8 refuses a line with bytes that are not UTF-8: JSON text
// is UTF-8, and a record's key and payload come back as JSON text.
var errLineNotUTF8 = errors.New("not valid UTF-8 (a record's line is JSON text)")

// syntaxError words the syntax error of a malformed line exactly as
// encoding/json does, so clients keep seeing the messages they saw. It
// runs only for a line already found malformed, so its cost is no concern.
func syntaxError(line []byte) error {
	var value json.RawMessage
	err := json.NewDecoder(bytes.NewReader(line)).Decode(&value)
	assert(err != nil, "the batch line decoder rejected %q, which encoding/json reads as valid", line)
	return err
}

// record checks the fields of a line that parsed and builds its record.
func (d *lineDecoder) record() (msg.ProduceRecord, error) {
	payload, err := d.payload()
	if err != nil {
		return msg.ProduceRecord{}, err
	}
	partition := msg.PartitionNone
	if d.fields[fieldPartition].kind == kindNumber {
		if d.partition < 0 {
			return msg.ProduceRecord{}, errPartitionInvalid
		}
		partition = d.partition
	}
	var key []byte // the empty key "" is no key (docs/api.md#produce)
	if given := d.fields[fieldKey]; given.kind == kindString && given.end-given.start > len(`""`) {
		key = d.stringBytes(given)
	}
	if len(key) > msg.KeyBytesMax {
		return msg.ProduceRecord{}, fmt.Errorf("key is %d bytes, at most %d allowed", len(key), msg.KeyBytesMax)
	}
	return msg.ProduceRecord{Key: key, Partition: partition, Payload: payload}, nil
}

// payload returns the payload bytes of a line: the raw JSON of payload,
// or the decoded payload_base64.
func (d *lineDecoder) payload() ([]byte, error) {
	raw, encoded := d.fields[fieldPayload], d.fields[fieldPayloadBase64]
	if (raw.kind == kindAbsent) == (encoded.kind == kindAbsent) {
		return nil, errPayloadChoice
	}
	if raw.kind != kindAbsent {
		return d.line[raw.start:raw.end:raw.end], nil
	}
	text := d.stringBytes(encoded)
	decoded := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	size, err := base64.StdEncoding.Decode(decoded, text)
	if err != nil {
		return nil, errors.New("invalid payload_base64: " + err.Error())
	}
	if size == 0 {
		return nil, errPayloadEmpty
	}
	return decoded[:size:size], nil
}

// readTopLevel reads the line's one value. An object is read as the
// line's fields; null is a line with no fields; any other value is a field
// error. It returns false on a syntax error.
func (d *lineDecoder) readTopLevel() bool {
	d.skipSpace()
	if d.peek() == '{' {
		return d.readLineObject()
	}
	value, ok := d.readValue()
	if ok && value.kind != kindNull {
		d.fail(errors.New(typeMismatch("a record", "an object", valueKindNames[value.kind])))
	}
	return ok
}

// readLineObject reads the line's object, its members being fields.
func (d *lineDecoder) readLineObject() bool {
	d.position++ // the '{'
	d.depth = 1
	d.skipSpace()
	if d.peek() == '}' {
		d.position++
		return true
	}
	for {
		if !d.readMember() {
			return false
		}
		d.skipSpace()
		switch d.next() {
		case ',':
			d.skipSpace()
		case '}':
			return true
		default:
			return false
		}
	}
}

// readMember reads one `"name": value` of the line's object.
func (d *lineDecoder) readMember() bool {
	name, ok := d.readName()
	if !ok {
		return false
	}
	field, known := d.matchField(name)
	value, ok := d.readValue()
	if !ok {
		return false
	}
	if known {
		d.storeField(field, value)
	}
	return true
}

// readName reads a member name and its colon, leaving position at the
// member's value.
func (d *lineDecoder) readName() (jsonValue, bool) {
	if d.peek() != '"' {
		return jsonValue{}, false
	}
	name, ok := d.readString()
	if !ok {
		return jsonValue{}, false
	}
	d.skipSpace()
	if d.next() != ':' {
		return jsonValue{}, false
	}
	d.skipSpace()
	return name, true
}

// skipName reads a member name of a payload object and its colon.
func (d *lineDecoder) skipName() bool {
	_, ok := d.readName()
	return ok
}

// matchField finds the field a member name names and marks it seen. An
// unknown or repeated name is a field error.
func (d *lineDecoder) matchField(name jsonValue) (lineField, bool) {
	text := d.stringBytes(name)
	field, known := lookupField(text)
	switch {
	case !known:
		d.failf("json: unknown field %s", quoteClipped(text))
		return 0, false
	case d.seen[field]:
		d.failf("json: duplicate field %s", quoteClipped(text))
		return 0, false
	}
	d.seen[field] = true
	return field, true
}

// lookupField matches a name the way encoding/json matches struct
// fields: exactly, else under Unicode case folding.
func lookupField(name []byte) (lineField, bool) {
	for field, fieldName := range lineFieldNames {
		if string(name) == fieldName {
			return lineField(field), true
		}
	}
	for field, fieldName := range lineFieldNames {
		if bytes.EqualFold(name, []byte(fieldName)) {
			return lineField(field), true
		}
	}
	return 0, false
}

// storeField keeps the value of a known field, or records a type error
// when the field cannot hold it. Null leaves a field absent, except the
// payload, whose null is the payload "null".
func (d *lineDecoder) storeField(field lineField, value jsonValue) {
	switch {
	case field == fieldPayload:
		d.fields[field] = value
	case value.kind == kindNull:
	case field == fieldPartition && value.kind == kindNumber:
		d.storePartition(value)
	case field != fieldPartition && value.kind == kindString:
		d.fields[field] = value
	default:
		d.failType(valueKindNames[value.kind], field)
	}
}

// storePartition keeps a partition number that fits an int.
func (d *lineDecoder) storePartition(value jsonValue) {
	text := d.line[value.start:value.end]
	partition, ok := parseJSONInt(text)
	if !ok {
		d.failType("number "+clipMessage(text), fieldPartition)
		return
	}
	d.partition = partition
	d.fields[fieldPartition] = value
}

// parseJSONInt parses a valid JSON number the way encoding/json fills an
// int: only an integer without fraction or exponent ("-0" is 0), and only
// within the range of int.
func parseJSONInt(text []byte) (int, bool) {
	negative := text[0] == '-'
	digits := text
	magnitudeMax := uint64(math.MaxInt)
	if negative {
		digits = text[1:]
		magnitudeMax++
	}
	var magnitude uint64
	for _, c := range digits {
		if !isDigit(c) {
			return 0, false
		}
		digit := uint64(c - '0')
		if magnitude > (magnitudeMax-digit)/10 {
			return 0, false
		}
		magnitude = magnitude*10 + digit
	}
	if negative {
		return -int(magnitude), true // at the bound int(magnitude) is math.MinInt, and so is its negation
	}
	return int(magnitude), true
}

// fail records a field error unless an earlier one is already recorded.
func (d *lineDecoder) fail(err error) {
	if d.firstError == nil {
		d.firstError = err
	}
}

// failf is fail with a formatted error, formatted only when it is kept.
func (d *lineDecoder) failf(format string, args ...any) {
	if d.firstError == nil {
		d.firstError = fmt.Errorf(format, args...)
	}
}

// failType records that field cannot hold a value of the kind described.
func (d *lineDecoder) failType(described string, field lineField) {
	if d.firstError == nil {
		d.firstError = errors.New(typeMismatch(fieldNamed(lineFieldNames[field]), lineFieldKinds[field], described))
	}
}

// peek returns the byte at position, or 0 at the end of the line. A 0
// byte is valid nowhere outside a string, so the two need no telling apart.
func (d *lineDecoder) peek() byte {
	if d.position < len(d.line) {
		return d.line[d.position]
	}
	return 0
}

// next returns the byte at position and steps past it, or returns 0 at
// the end of the line.
func (d *lineDecoder) next() byte {
	if d.position == len(d.line) {
		return 0
	}
	d.position++
	return d.line[d.position-1]
}

// skipSpace steps over JSON whitespace.
func (d *lineDecoder) skipSpace() {
	for d.position < len(d.line) && isSpace(d.line[d.position]) {
		d.position++
	}
}

// isSpace reports whether c is JSON whitespace.
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isDigit reports whether c is an ASCII digit.
func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// readValue reads the value at position, whatever its kind, checking its
// syntax as encoding/json's scanner does. It returns false on a syntax
// error.
func (d *lineDecoder) readValue() (jsonValue, bool) {
	c := d.peek()
	if c != '{' && c != '[' {
		return d.readScalar()
	}
	start := d.position
	kind := kindObject
	if c == '[' {
		kind = kindArray
	}
	ok := d.skipContainer()
	return jsonValue{kind: kind, start: start, end: d.position}, ok
}

// readScalar reads the string, number or literal at position.
func (d *lineDecoder) readScalar() (jsonValue, bool) {
	switch c := d.peek(); {
	case c == '"':
		return d.readString()
	case c == '-' || isDigit(c):
		return d.readNumber()
	case c == 't':
		return d.readLiteral("true", kindBool)
	case c == 'f':
		return d.readLiteral("false", kindBool)
	case c == 'n':
		return d.readLiteral("null", kindNull)
	}
	return jsonValue{}, false
}

// Steps of skipContainer after a value.
const (
	stepFailed     = iota // a syntax error
	stepValueDue          // a comma (and in an object a name) was read: a value comes next
	stepClosedLast        // the outermost container closed: the container is read
)

// skipContainer reads the array or object at position and everything in
// it. It keeps its own stack of open containers rather than recursing, so
// a deeply nested payload costs no deep call stack.
func (d *lineDecoder) skipContainer() bool {
	closers := make([]byte, 0, containerStackBytes) // the closing byte of each open container, innermost last
	for {
		if c := d.peek(); c == '{' || c == '[' {
			if !d.openContainer() {
				return false
			}
			// '{'+2 is '}' and '['+2 is ']'. Unless the container is empty, a
			// value is due, in an object after a name.
			closers = append(closers, c+2)
			if d.peek() != c+2 {
				if c == '{' && !d.skipName() {
					return false
				}
				continue
			}
		} else if _, ok := d.readScalar(); !ok {
			return false
		}
		var step int
		closers, step = d.afterValue(closers)
		if step != stepValueDue {
			return step == stepClosedLast
		}
	}
}

// openContainer steps past the '{' or '[' at position and the space after it.
func (d *lineDecoder) openContainer() bool {
	d.depth++
	d.position++
	d.skipSpace()
	return d.depth <= jsonNestingDepthMax
}

// afterValue reads what follows a value (or an empty container's opener)
// inside containers: the closers of the containers that end there, then a
// comma and, in an object, the next member's name. It returns the
// containers still open and what comes next.
func (d *lineDecoder) afterValue(closers []byte) ([]byte, int) {
	for len(closers) > 0 {
		d.skipSpace()
		closer := closers[len(closers)-1]
		switch d.next() {
		case closer:
			closers = closers[:len(closers)-1]
			d.depth--
		case ',':
			d.skipSpace()
			if closer == '}' && !d.skipName() {
				return closers, stepFailed
			}
			return closers, stepValueDue
		default:
			return closers, stepFailed
		}
	}
	return closers, stepClosedLast
}

// Classes of the bytes inside a string.
const (
	bytePlain    = iota // ASCII that stands for itself
	byteNonASCII        // 0x80 or above: part of a UTF-8 sequence, valid or not
	byteSpecial         // quote, backslash or control character
)

// stringByteClasses classifies every byte value for readString.
var stringByteClasses = func() (classes [256]uint8) {
	for c := range classes {
		switch {
		case c < ' ' || c == '"' || c == '\\':
			classes[c] = byteSpecial
		case c >= utf8.RuneSelf:
			classes[c] = byteNonASCII
		}
	}
	return classes
}()

// readString reads the string at position (its opening quote). Like
// encoding/json it accepts any byte of 0x20 or above, valid UTF-8 or not;
// unquoting replaces the invalid ones.
func (d *lineDecoder) readString() (jsonValue, bool) {
	value := jsonValue{kind: kindString, start: d.position}
	line := d.line
	i := d.position + 1
	for {
		i += plainWordsBytes(line[i:])
		for i < len(line) && stringByteClasses[line[i]] == bytePlain {
			i++
		}
		if i == len(line) {
			return value, false
		}
		switch c := line[i]; {
		case c == '"':
			d.position, value.end = i+1, i+1
			return value, true
		case c == '\\':
			size := escapeBytes(line[i:])
			if size == 0 {
				return value, false
			}
			value.escaped = true
			i += size
		case c >= utf8.RuneSelf:
			value.nonASCII, d.nonASCII = true, true
			i++
		default: // a control character
			return value, false
		}
	}
}

// Word masks of plainWordsBytes: every byte 0x01, 0x20, '"', '\\' or 0x80.
const (
	wordOnes      = 0x0101010101010101
	wordSpaces    = 0x20 * wordOnes
	wordQuotes    = '"' * wordOnes
	wordBackslash = '\\' * wordOnes
	wordHighBits  = 0x80 * wordOnes
)

// plainWordsBytes returns the length of the longest run of whole 8-byte
// words at the start of text whose bytes are all bytePlain. It tests a
// word at once: (x - wordOnes) &^ x has a high bit set exactly when some
// byte of x is zero (a borrow only starts at a zero byte), and the same
// with wordSpaces finds a byte below 0x20 in a word with no high bit set.
func plainWordsBytes(text []byte) int {
	length := 0
	for len(text)-length >= 8 {
		word := binary.LittleEndian.Uint64(text[length:])
		quotes, backslashes := word^wordQuotes, word^wordBackslash
		special := (word - wordSpaces) | (quotes-wordOnes)&^quotes | (backslashes-wordOnes)&^backslashes
		if (special&^word|word)&wordHighBits != 0 {
			return length
		}
		length += 8
	}
	return length
}

// escapeBytes returns the length of the valid escape at the start of
// text (a backslash), or 0 when it is not one.
func escapeBytes(text []byte) int {
	if len(text) < 2 {
		return 0
	}
	switch text[1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 2
	case 'u':
		if len(text) >= 6 && isHex(text[2]) && isHex(text[3]) && isHex(text[4]) && isHex(text[5]) {
			return 6
		}
	}
	return 0
}

// readNumber reads the number at position: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (d *lineDecoder) readNumber() (jsonValue, bool) {
	start := d.position
	if d.peek() == '-' {
		d.position++
	}
	switch c := d.peek(); {
	case c == '0':
		d.position++
	case !d.readDigits():
		return jsonValue{}, false
	}
	if d.peek() == '.' {
		d.position++
		if !d.readDigits() {
			return jsonValue{}, false
		}
	}
	if c := d.peek(); c == 'e' || c == 'E' {
		d.position++
		if c := d.peek(); c == '+' || c == '-' {
			d.position++
		}
		if !d.readDigits() {
			return jsonValue{}, false
		}
	}
	return jsonValue{kind: kindNumber, start: start, end: d.position}, true
}

// readDigits reads one or more digits; false when there is none.
func (d *lineDecoder) readDigits() bool {
	start := d.position
	for isDigit(d.peek()) {
		d.position++
	}
	return d.position > start
}

// readLiteral reads the literal text (true, false or null) at position.
func (d *lineDecoder) readLiteral(text string, kind valueKind) (jsonValue, bool) {
	start, end := d.position, d.position+len(text)
	if end > len(d.line) || string(d.line[start:end]) != text {
		return jsonValue{}, false
	}
	d.position = end
	return jsonValue{kind: kind, start: start, end: end}, true
}

// stringBytes returns the text a string value stands for. A string with
// no escape that is valid UTF-8 is a slice of the line, capped so that an
// append cannot write into the line; any other is unquoted into a copy.
func (d *lineDecoder) stringBytes(value jsonValue) []byte {
	inner := d.line[value.start+1 : value.end-1 : value.end-1]
	if !value.escaped && (!value.nonASCII || utf8.Valid(inner)) {
		return inner
	}
	return appendUnquoted(make([]byte, 0, len(inner)+utf8.UTFMax), inner)
}

// appendUnquoted appends the text of a validated string's inside, unquoted
// as encoding/json unquotes: escapes decoded, a surrogate pair joined,
// and each unpaired surrogate and each byte that is not valid UTF-8
// replaced by U+FFFD.
func appendUnquoted(out, inner []byte) []byte {
	for i := 0; i < len(inner); {
		c := inner[i]
		switch {
		case c == '\\':
			var size int
			out, size = appendEscape(out, inner[i:])
			i += size
		case c < utf8.RuneSelf:
			out = append(out, c)
			i++
		default:
			r, size := utf8.DecodeRune(inner[i:])
			out = utf8.AppendRune(out, r)
			i += size
		}
	}
	return out
}

// appendEscape appends what the validated escape at the start of text
// stands for and returns how many bytes of text it took. A \u escape of a
// high surrogate takes the next \u escape too when the two form a pair.
func appendEscape(out, text []byte) ([]byte, int) {
	if text[1] != 'u' {
		return append(out, unescapeByte(text[1])), 2
	}
	r := hex4(text[2:6])
	if !utf16.IsSurrogate(r) {
		return utf8.AppendRune(out, r), 6
	}
	if len(text) >= 12 && text[6] == '\\' && text[7] == 'u' {
		if pair := utf16.DecodeRune(r, hex4(text[8:12])); pair != utf8.RuneError {
			return utf8.AppendRune(out, pair), 12
		}
	}
	return utf8.AppendRune(out, utf8.RuneError), 6
}

// unescapeByte maps the letter of a one-letter escape to its byte.
func unescapeByte(letter byte) byte {
	switch letter {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return letter // '"', '\\' and '/' stand for themselves
}

// hex4 parses four validated hex digits.
func hex4(digits []byte) rune {
	var r rune
	for _, c := range digits {
		r = r<<4 | rune(hexValue(c))
	}
	return r
}

// hexValue is the value of a hex digit; 0xff when c is not one.
func hexValue(c byte) byte {
	switch {
	case isDigit(c):
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10
	}
	return 0xff
}

// isHex reports whether c is a hex digit.
func isHex(c byte) bool { return hexValue(c) != 0xff }
