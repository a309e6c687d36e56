package sim

import (
	"encoding/json"
	"strconv"
)

// Clients decode every consumed or replayed message, and json.Unmarshal
// of those bodies was about 2% of a five-node moves run. The bodies are
// httpapi's own encoding (appendMessage), in one canonical form: no
// whitespace but the newline at the end, plain strings, integers. decodeWireMessage and
// decodeWireMessageList read that form themselves and hand anything else
// (an escape, a non-ASCII byte, whitespace, another kind of value, an
// unknown field, a number out of range) to json.Unmarshal, so that every
// body decodes exactly as json.Unmarshal decodes it.
// TestWireMessageDecodeMatchesJSON holds them to json.Unmarshal, and
// BenchmarkWireMessageDecode keeps it as the reference.

// decodeWireMessage decodes one message as json.Unmarshal into a
// wireMessage does.
func decodeWireMessage(body []byte) (wireMessage, error) {
	if m, rest, ok := scanWireMessage(body); ok && onlyWhitespace(rest) {
		return m, nil
	}
	var m wireMessage
	err := json.Unmarshal(body, &m)
	return m, err
}

// decodeWireMessageList decodes a batch consume's body, {"messages":[...]},
// as json.Unmarshal into a struct of its one field does.
func decodeWireMessageList(body []byte) ([]wireMessage, error) {
	if messages, ok := scanWireMessageList(body); ok {
		return messages, nil
	}
	var list struct {
		Messages []wireMessage `json:"messages"`
	}
	err := json.Unmarshal(body, &list)
	return list.Messages, err
}

// messageListPrefix opens a batch consume's body.
const messageListPrefix = `{"messages":[`

// scanWireMessageList reads the canonical form of a batch body; an empty
// list is an empty slice, not nil, as json.Unmarshal makes it.
func scanWireMessageList(b []byte) ([]wireMessage, bool) {
	if len(b) < len(messageListPrefix) || string(b[:len(messageListPrefix)]) != messageListPrefix {
		return nil, false
	}
	b = b[len(messageListPrefix):]
	messages := []wireMessage{}
	for len(b) > 0 && b[0] != ']' {
		if len(messages) > 0 {
			if b[0] != ',' {
				return nil, false
			}
			b = b[1:]
		}
		m, rest, ok := scanWireMessage(b)
		if !ok {
			return nil, false
		}
		messages, b = append(messages, m), rest
	}
	return messages, len(b) >= 2 && string(b[:2]) == "]}" && onlyWhitespace(b[2:])
}

// onlyWhitespace reports whether b is JSON whitespace alone, as may
// follow a value (httpapi ends every JSON body with a newline).
func onlyWhitespace(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// scanWireMessage reads one message object in the canonical form from the
// start of b and returns what follows it.
func scanWireMessage(b []byte) (m wireMessage, rest []byte, ok bool) {
	if len(b) < 2 || b[0] != '{' {
		return m, nil, false
	}
	if b[1] == '}' {
		return m, b[2:], true
	}
	for {
		name, value, after, ok := scanMember(b[1:])
		if !ok || !setWireField(&m, string(name), value) || len(after) == 0 {
			return m, nil, false
		}
		if after[0] == '}' {
			return m, after[1:], true
		}
		if after[0] != ',' {
			return m, nil, false
		}
		b = after
	}
}

// scanMember reads `"name":value` from the start of b, value a plain
// string (quotes included) or an integer.
func scanMember(b []byte) (name, value, rest []byte, ok bool) {
	name, b, ok = scanPlainString(b)
	if !ok || len(b) == 0 || b[0] != ':' {
		return nil, nil, nil, false
	}
	b = b[1:]
	if len(b) > 0 && b[0] == '"' {
		contents, rest, ok := scanPlainString(b)
		if !ok {
			return nil, nil, nil, false
		}
		return name, b[:len(contents)+2], rest, true
	}
	value, rest, ok = scanInteger(b)
	return name, value, rest, ok
}

// scanPlainString reads a JSON string of printable ASCII without escapes
// from the start of b and returns its contents, without the quotes.
func scanPlainString(b []byte) (contents, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[1:i], b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// scanInteger reads a JSON integer (-?(0|[1-9][0-9]*)) from the start of
// b; a fraction or an exponent is left for the caller to refuse.
func scanInteger(b []byte) (digits, rest []byte, ok bool) {
	start := 0
	if len(b) > 0 && b[0] == '-' {
		start = 1
	}
	end := start
	for end < len(b) && b[end] >= '0' && b[end] <= '9' {
		end++
	}
	if end == start || (b[start] == '0' && end > start+1) {
		return nil, nil, false
	}
	return b[:end], b[end:], true
}

// setWireField stores a member's value in m, as json.Unmarshal would for
// the exact field names of wireMessage and the other fields httpapi
// writes (ignored); false for any other name, or a value of another kind
// or out of the field's range.
func setWireField(m *wireMessage, name string, value []byte) bool {
	quoted := value[0] == '"'
	var ok bool
	switch name {
	case "topic", "key":
		return quoted
	case "timestamp":
		return !quoted
	case "payload":
		m.Payload = json.RawMessage(append([]byte(nil), value...))
		return quoted
	case "payload_encoding":
		m.PayloadEncoding = string(value[1 : len(value)-1])
		return quoted
	case "receipt_handle":
		m.ReceiptHandle = string(value[1 : len(value)-1])
		return quoted
	case "partition":
		m.Partition, ok = parseInt(value)
	case "delivery_count":
		m.DeliveryCount, ok = parseInt(value)
	case "timestamp_ms":
		m.TimestampMs, ok = parseInt64(value)
	case "offset":
		m.Offset, ok = parseUint64(value)
	}
	return ok && !quoted
}

func parseInt(value []byte) (int, bool) {
	v, err := strconv.ParseInt(string(value), 10, strconv.IntSize)
	return int(v), err == nil
}

func parseInt64(value []byte) (int64, bool) {
	v, err := strconv.ParseInt(string(value), 10, 64)
	return v, err == nil
}

func parseUint64(value []byte) (uint64, bool) {
	v, err := strconv.ParseUint(string(value), 10, 64)
	return v, err == nil
}
