package httpapi

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"narad/msg"
)

// payloadEncodingBase64 marks a payload that is neither JSON nor UTF-8.
const payloadEncodingBase64 = "base64"

// appendMessage appends the JSON object of one consumed or replayed
// message (docs/api.md#consumed-message). It is written by hand rather
// than through encoding/json so that a JSON payload is embedded byte for
// byte: encoding/json would compact it.
func appendMessage(dst []byte, message msg.Message) []byte {
	payload, encoding := encodePayload(message.Payload)
	dst = append(dst, `{"topic":`...)
	dst = append(dst, marshalJSON(message.Topic)...)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(message.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendUint(dst, message.Offset, 10)
	dst = appendStringField(dst, "key", string(message.Key))
	dst = append(dst, `,"payload":`...)
	dst = append(dst, payload...)
	dst = appendStringField(dst, "payload_encoding", encoding)
	dst = append(dst, `,"timestamp":`...)
	dst = strconv.AppendInt(dst, message.TimestampMs/1000, 10)
	dst = append(dst, `,"timestamp_ms":`...)
	dst = strconv.AppendInt(dst, message.TimestampMs, 10)
	dst = appendStringField(dst, "receipt_handle", message.ReceiptHandle)
	if message.DeliveryCount > 0 {
		dst = append(dst, `,"delivery_count":`...)
		dst = strconv.AppendUint(dst, uint64(message.DeliveryCount), 10)
	}
	if message.DeadLetter != nil {
		dst = appendDeadLetter(dst, *message.DeadLetter)
	}
	return append(dst, '}')
}

// appendDeadLetter appends the origin of a dead letter
// (docs/api.md#dead-letters).
func appendDeadLetter(dst []byte, origin msg.DeadLetterOrigin) []byte {
	dst = append(dst, `,"dead_letter":{"topic":`...)
	dst = append(dst, marshalJSON(origin.Topic)...)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(origin.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendUint(dst, origin.Offset, 10)
	dst = append(dst, `,"delivery_count":`...)
	dst = strconv.AppendUint(dst, uint64(origin.DeliveryCount), 10)
	return append(dst, '}')
}

// appendStringField appends `,"name":"value"`, or nothing for an empty
// value (the omitempty fields of a message).
func appendStringField(dst []byte, name, value string) []byte {
	if value == "" {
		return dst
	}
	dst = append(dst, ',', '"')
	dst = append(dst, name...)
	dst = append(dst, '"', ':')
	return append(dst, marshalJSON(value)...)
}

// appendMessageList appends {"messages":[...]}; an empty list is [].
func appendMessageList(dst []byte, messages []msg.Message) []byte {
	dst = append(dst, `{"messages":[`...)
	for i, message := range messages {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendMessage(dst, message)
	}
	return append(dst, ']', '}')
}

// encodePayload chooses the JSON form of a payload: valid JSON (in valid
// UTF-8) verbatim, other valid UTF-8 as a JSON string, anything else as a
// base64 string with the encoding named.
func encodePayload(payload []byte) (encoded []byte, encoding string) {
	if !utf8.Valid(payload) {
		return marshalJSON(base64.StdEncoding.EncodeToString(payload)), payloadEncodingBase64
	}
	if json.Valid(payload) {
		return payload, ""
	}
	return marshalJSON(string(payload)), ""
}
