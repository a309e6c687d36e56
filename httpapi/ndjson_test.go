package httpapi

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// The reference: how batch lines were decoded before the hand-rolled
// decoder, through encoding/json. FuzzNDJSONLineMatchesEncodingJSON and
// the tests below hold decodeBatchLine to it. The struct keeps its old
// name because encoding/json names it in type errors.

// batchLine is one line of a batch produce, as encoding/json fills it.
type batchLine struct {
	Key           string          `json:"key"`
	Partition     *int            `json:"partition"`
	Payload       json.RawMessage `json:"payload"`
	PayloadBase64 *string         `json:"payload_base64"`
}

// referenceDecodeBatchLine is the encoding/json decoder of a batch line.
func referenceDecodeBatchLine(text []byte) (msg.ProduceRecord, error) {
	if !utf8.Valid(text) {
		return msg.ProduceRecord{}, errLineNotUTF8
	}
	var line batchLine
	if err := decodeStrictJSON(text, &line); err != nil {
		return msg.ProduceRecord{}, referenceInAPIWords(err)
	}
	payload, err := referenceLinePayload(line)
	if err != nil {
		return msg.ProduceRecord{}, err
	}
	partition := msg.PartitionNone
	if line.Partition != nil {
		if *line.Partition < 0 {
			return msg.ProduceRecord{}, errPartitionInvalid
		}
		partition = *line.Partition
	}
	return msg.ProduceRecord{Key: keyBytes(line.Key), Partition: partition, Payload: payload}, nil
}

// referenceInAPIWords words a type error of encoding/json as the API
// does (the field and the JSON type it wants); other errors keep theirs.
func referenceInAPIWords(err error) error {
	var typeError *json.UnmarshalTypeError
	switch {
	case !errors.As(err, &typeError):
		return err
	case typeError.Field == "":
		return errors.New("a record must be an object, not a JSON " + typeError.Value)
	}
	if integer := referenceIntegerPast64Bits.FindStringSubmatch(typeError.Value); integer != nil && jsonKind(typeError.Type) == "an integer" {
		return fmt.Errorf("field %q must be an integer from -9223372036854775808 to 9223372036854775807, not %s", typeError.Field, integer[1])
	}
	return fmt.Errorf("field %q must be %s, not a JSON %s", typeError.Field, jsonKind(typeError.Type), typeError.Value)
}

// referenceIntegerPast64Bits matches what encoding/json reports of an
// integer literal it cannot fit in an integer field.
var referenceIntegerPast64Bits = regexp.MustCompile(`^number (-?[0-9]+)$`)

// referenceLinePayload returns the raw JSON of payload, or the decoded
// payload_base64.
func referenceLinePayload(line batchLine) ([]byte, error) {
	if (line.Payload != nil) == (line.PayloadBase64 != nil) {
		return nil, errPayloadChoice
	}
	payload := []byte(line.Payload)
	if line.PayloadBase64 != nil {
		decoded, err := base64.StdEncoding.DecodeString(*line.PayloadBase64)
		if err != nil {
			return nil, errors.New("invalid payload_base64: " + err.Error())
		}
		payload = decoded
	}
	if len(payload) == 0 {
		return nil, errPayloadEmpty
	}
	return payload, nil
}

// referenceDuplicateField returns the first member name of the line's
// object that names a field an earlier member already named, with names
// matched to fields by encoding/json itself. It reports false when there
// is none or when the line is not an object it can read that far.
func referenceDuplicateField(line []byte) (string, bool) {
	decoder := json.NewDecoder(bytes.NewReader(line))
	if token, err := decoder.Token(); err != nil || token != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for decoder.More() {
		token, err := decoder.Token()
		name, isName := token.(string)
		if err != nil || !isName {
			return "", false
		}
		if field := referenceFieldOf(name); field != "" {
			if seen[field] {
				return name, true
			}
			seen[field] = true
		}
		var skipped json.RawMessage
		if decoder.Decode(&skipped) != nil {
			return "", false
		}
	}
	return "", false
}

// referenceFieldOf returns the JSON name of the batchLine field that
// encoding/json fills from a member called name, or "" for none.
func referenceFieldOf(name string) string {
	var probe struct {
		Key           json.RawMessage `json:"key"`
		Partition     json.RawMessage `json:"partition"`
		Payload       json.RawMessage `json:"payload"`
		PayloadBase64 json.RawMessage `json:"payload_base64"`
	}
	object, err := json.Marshal(map[string]int{name: 0})
	if err != nil || json.Unmarshal(object, &probe) != nil {
		return ""
	}
	for _, field := range []struct {
		name  string
		value json.RawMessage
	}{{"key", probe.Key}, {"partition", probe.Partition}, {"payload", probe.Payload}, {"payload_base64", probe.PayloadBase64}} {
		if field.value != nil {
			return field.name
		}
	}
	return ""
}

// requireMatchesReference decodes line with both decoders and requires the
// same outcome: the same record, or the same error message, except that a
// repeated field is rejected by decodeBatchLine alone.
func requireMatchesReference(t *testing.T, line []byte) {
	t.Helper()
	want, wantErr := referenceDecodeBatchLine(line)
	got, gotErr := decodeBatchLine(line)
	duplicate, hasDuplicate := referenceDuplicateField(line)
	switch {
	case hasDuplicate && wantErr == nil:
		require.EqualError(t, gotErr, "json: duplicate field "+strconv.Quote(duplicate), "line %q", line)
	case hasDuplicate:
		require.Error(t, gotErr, "line %q repeats field %q", line, duplicate)
	case wantErr != nil && strings.HasPrefix(wantErr.Error(), "duplicate field ") && !json.Valid(line):
		// the reference looks for repeated keys before it parses, so a
		// malformed line that repeats one gets that error; the decoder
		// reports the syntax error first, as it documents
		require.Error(t, gotErr, "line %q", line)
	case wantErr != nil:
		require.EqualError(t, gotErr, wantErr.Error(), "line %q", line)
	default:
		require.NoError(t, gotErr, "line %q", line)
		requireSameRecord(t, want, got, line)
	}
}

// requireSameRecord compares records byte for byte, telling no key from
// an empty one.
func requireSameRecord(t *testing.T, want, got msg.ProduceRecord, line []byte) {
	t.Helper()
	require.Equal(t, want.Key == nil, got.Key == nil, "key presence, line %q", line)
	require.Equal(t, string(want.Key), string(got.Key), "key, line %q", line)
	require.Equal(t, want.Partition, got.Partition, "partition, line %q", line)
	require.Equal(t, string(want.Payload), string(got.Payload), "payload, line %q", line)
}

func TestDecodeBatchLineAccepts(t *testing.T) {
	none := msg.PartitionNone
	for _, c := range []struct {
		line      string
		key       string // "" for no key
		partition int
		payload   string
	}{
		{`{"key":"k","partition":3,"payload":{"a": [1, 2]}}`, "k", 3, `{"a": [1, 2]}`},
		{" \t{ \"payload\" :\r\n\"x\" , \"key\"\t:\"k\" } \r", "k", none, `"x"`},
		{`{"payload":null}`, "", none, `null`},
		{`{"payload":-0.5e+10}`, "", none, `-0.5e+10`},
		{`{"payload":[[],{},"",true,false,null,0]}`, "", none, `[[],{},"",true,false,null,0]`},
		{`{"payload":"\u00e9\ud83d\ude00 \"q\" \\"}`, "", none, `"\u00e9\ud83d\ude00 \"q\" \\"`},
		{`{"payload_base64":"aGk="}`, "", none, "hi"},
		{`{"payload_base64":"aGk\u003d"}`, "", none, "hi"},
		{`{"payload_base64":"aG\nk="}`, "", none, "hi"},
		{`{"key":"","payload":1}`, "", none, "1"},
		{`{"key":null,"partition":null,"payload_base64":null,"payload":1}`, "", none, "1"},
		{`{"partition":-0,"payload":1}`, "", 0, "1"},
		{`{"partition":9223372036854775807,"payload":1}`, "", math.MaxInt, "1"},
		{`{"KEY":"k","Partition":1,"PAYLOAD":1}`, "k", 1, "1"},
		{`{"\u212aey":"k","payload_ba\u017fe64":"aGk="}`, "k", none, "hi"},
		{`{"k\u0065y":"a\tb\u0000\/","payload":1}`, "a\tb\x00/", none, "1"},
		{`{"key":"\ud800x\udc00\ud800\ud800\udc00","payload":1}`, "\uFFFDx\uFFFD\uFFFD\U00010000", none, "1"},
	} {
		record, err := decodeBatchLine([]byte(c.line))
		require.NoError(t, err, c.line)
		require.Equal(t, c.key, string(record.Key), c.line)
		require.Equal(t, c.key == "", record.Key == nil, "an empty key must be no key: %q", c.line)
		require.Equal(t, c.partition, record.Partition, c.line)
		require.Equal(t, c.payload, string(record.Payload), c.line)
		requireMatchesReference(t, []byte(c.line))
	}
}

func TestDecodeBatchLineRejects(t *testing.T) {
	for _, c := range []struct{ line, message string }{
		{`{"payload":1,"topic":"x"}`, `json: unknown field "topic"`},
		{`{"payload":1,"ke\u0079s":"x"}`, `json: unknown field "keys"`},
		{`{"payload":1,"payload":2}`, `json: duplicate field "payload"`},
		{`{"key":"a","payload":1,"KEY":"b"}`, `json: duplicate field "KEY"`},
		{`{"payload_base64":null,"payload_base64":"AA==","payload":1}`, `json: duplicate field "payload_base64"`},
		{`{"x":1,"payload":1,"payload":2}`, `json: unknown field "x"`},
		{`{"payload":1,"payload_base64":"AA=="}`, errPayloadChoice.Error()},
		{`{"key":"k"}`, errPayloadChoice.Error()},
		{`{}`, errPayloadChoice.Error()},
		{`null`, errPayloadChoice.Error()},
		{`{"payload_base64":"!!"}`, "invalid payload_base64: illegal base64 data at input byte 0"},
		{`{"payload_base64":"AA="}`, "invalid payload_base64: illegal base64 data at input byte 3"},
		{`{"payload_base64":""}`, errPayloadEmpty.Error()},
		{`{"payload":1,"partition":-1}`, errPartitionInvalid.Error()},
		{`{"payload":1,"partition":1.5}`, `field "partition" must be an integer, not a JSON number 1.5`},
		{`{"payload":1,"partition":1e2}`, `field "partition" must be an integer, not a JSON number 1e2`},
		{`{"payload":1,"partition":9223372036854775808}`, `field "partition" must be an integer from -9223372036854775808 to 9223372036854775807, not 9223372036854775808`},
		{`{"payload":1,"partition":"1"}`, `field "partition" must be an integer, not a JSON string`},
		{`{"payload":1,"partition":[1]}`, `field "partition" must be an integer, not a JSON array`},
		{`{"key":7,"payload":1}`, `field "key" must be a string, not a JSON number`},
		{`{"key":true,"payload":1}`, `field "key" must be a string, not a JSON bool`},
		{`{"key":{"a":1},"payload":1}`, `field "key" must be a string, not a JSON object`},
		{`{"payload_base64":0}`, `field "payload_base64" must be a string, not a JSON number`},
		{`{"key":1,"x":1,"payload":1}`, `field "key" must be a string, not a JSON number`},
		{`[{"payload":1}]`, "a record must be an object, not a JSON array"},
		{`"payload" trailing`, "a record must be an object, not a JSON string"},
		{`12x`, "a record must be an object, not a JSON number"},
		{"{\"key\":\"\xff\xc3\xa9\xe2\x82\",\"payload\":1}", errLineNotUTF8.Error()},
		{"{\"payload\":\"\xff\"}", errLineNotUTF8.Error()},
		{"{\"payload\":1}\xc3", errLineNotUTF8.Error()},
		{`{"payload":1} {"payload":2}`, errTrailingData.Error()},
		{`{"payload":1},`, errTrailingData.Error()},
		{`null x`, errTrailingData.Error()},
		{`{"payload":`, "unexpected EOF"},
		{`{"payload":"abc`, "unexpected EOF"},
		{`{"payload":01}`, "invalid character '1' after object key:value pair"},
		{`{"payload":[1,]}`, "invalid character ']' looking for beginning of value"},
		{`{"x":1,"payload":}`, "invalid character '}' looking for beginning of value"},
		{`{"payload":"a` + "\t" + `b"}`, `invalid character '\t' in string literal`},
		{`{"payload":"\x"}`, `invalid character 'x' in string escape code`},
		{`{"payload":tru}`, "invalid character '}' in literal true (expecting 'e')"},
		{`{"payload":1,}`, "invalid character '}' looking for beginning of object key string"},
		{"\v{\"payload\":1}", `invalid character '\v' looking for beginning of value`},
		{"   ", "EOF"},
	} {
		_, err := decodeBatchLine([]byte(c.line))
		require.EqualError(t, err, c.message, c.line)
		requireMatchesReference(t, []byte(c.line))
	}
}

// TestDecodeBatchLineNestingBound: a line nests at most 10,000 arrays and
// objects deep, its own object included, as encoding/json's scanner allows.
func TestDecodeBatchLineNestingBound(t *testing.T) {
	nested := func(depth int) []byte {
		return []byte(`{"payload":` + strings.Repeat(`[{"a":`, depth/2) + strings.Repeat("[", depth%2) + "0" +
			strings.Repeat("]", depth%2) + strings.Repeat("}]", depth/2) + "}")
	}
	deepest := nested(jsonNestingDepthMax - 1)
	record, err := decodeBatchLine(deepest)
	require.NoError(t, err)
	require.Len(t, record.Payload, len(deepest)-len(`{"payload":}`))
	requireMatchesReference(t, deepest)

	tooDeep := nested(jsonNestingDepthMax)
	_, err = decodeBatchLine(tooDeep)
	require.EqualError(t, err, "invalid character '{' exceeded max depth")
	requireMatchesReference(t, tooDeep)
}

// TestDecodeBatchLineSlicesPlainStrings: a plain key and a JSON payload
// are slices of the line, capped so that appending to them cannot write
// into the line; an escaped key is a copy.
func TestDecodeBatchLineSlicesPlainStrings(t *testing.T) {
	line := []byte(`{"key":"plain","payload":{"a":1},"partition":2}`)
	record, err := decodeBatchLine(line)
	require.NoError(t, err)
	keyAt, payloadAt := bytes.Index(line, []byte("plain")), bytes.Index(line, []byte(`{"a":1}`))
	require.Same(t, &line[keyAt], &record.Key[0])
	require.Same(t, &line[payloadAt], &record.Payload[0])
	require.Equal(t, len(record.Key), cap(record.Key))
	require.Equal(t, len(record.Payload), cap(record.Payload))

	_ = append(record.Key, 'X')
	_ = append(record.Payload, 'X')
	require.Equal(t, `{"key":"plain","payload":{"a":1},"partition":2}`, string(line))

	line = []byte(`{"key":"tab\there","payload":1}`)
	record, err = decodeBatchLine(line)
	require.NoError(t, err)
	require.Equal(t, "tab\there", string(record.Key))
	require.Equal(t, -1, bytes.Index(line, record.Key), "an unquoted key is not in the line")
}

// TestStringBytesMatchesEncodingJSON unquotes strings with both decoders.
func TestStringBytesMatchesEncodingJSON(t *testing.T) {
	for _, literal := range []string{
		`""`, `"plain"`, `"\"\\\/\b\f\n\r\t"`, `"\u0041\u00e9\u20ac"`, `"\uD83D\uDE00"`, `"\ud83d\ude00"`,
		`"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`, `"\ude00\ud83d"`,
		`"\ud83d\\"`, `"\ud83d\"`, `"\u0000"`, "\"\xff\"", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xef\xbf\xbd\"",
		"\"\xf4\x90\x80\x80\"", "\"a\xe2\x82\xacb\xe2\x82\"", "\"\xe2\x82\u0041\"",
	} {
		var want string
		err := json.Unmarshal([]byte(literal), &want)
		decoder := lineDecoder{line: []byte(literal)}
		value, ok := decoder.readString()
		if err != nil {
			require.False(t, ok && value.end == len(literal), "encoding/json refuses %s: %v", literal, err)
			continue
		}
		require.True(t, ok, literal)
		require.Equal(t, len(literal), value.end, literal)
		require.Equal(t, want, string(decoder.stringBytes(value)), literal)
	}
}

// TestPlainWordsBytes checks the word-at-a-time scan against the byte
// classes, for every byte value at every position of a word.
func TestPlainWordsBytes(t *testing.T) {
	for value := range 256 {
		for position := range 8 {
			text := []byte("abcdefghABCDEFGH12345678")
			text[8+position] = byte(value)
			want := 24
			if stringByteClasses[value] != bytePlain {
				want = 8
			}
			require.Equal(t, want, plainWordsBytes(text), "byte %#x at %d", value, 8+position)
		}
	}
	require.Equal(t, 0, plainWordsBytes([]byte("1234567")), "a part word is left to the byte loop")
}

func TestParseJSONInt(t *testing.T) {
	for _, c := range []struct {
		text  string
		value int
		ok    bool
	}{
		{"0", 0, true}, {"-0", 0, true}, {"42", 42, true}, {"-42", -42, true},
		{strconv.Itoa(math.MaxInt), math.MaxInt, true}, {strconv.Itoa(math.MinInt), math.MinInt, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false},
		{"18446744073709551626", 0, false}, {"1.0", 0, false}, {"1e2", 0, false}, {"-1E0", 0, false},
	} {
		value, ok := parseJSONInt([]byte(c.text))
		require.Equal(t, c.ok, ok, c.text)
		require.Equal(t, c.value, value, c.text)
	}
}
