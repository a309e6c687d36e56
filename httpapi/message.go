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
	dst = append(dst, `{"topic":`...)
	dst = appendJSONString(dst, message.Topic)
	dst = append(dst, `,"partition":`...)
	dst = strconv.AppendInt(dst, int64(message.Partition), 10)
	dst = append(dst, `,"offset":`...)
	dst = strconv.AppendUint(dst, message.Offset, 10)
	dst = appendStringField(dst, "key", string(message.Key))
	dst = append(dst, `,"payload":`...)
	dst, encoding := appendPayload(dst, message.Payload)
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

// messageFieldsBytes is room for the names and numbers of a consumed
// message's JSON, beside its topic, key, payload and receipt handle.
const messageFieldsBytes = 256

// messageBuffer returns an empty buffer with room for the JSON of one
// plain message (a payload in base64 included), so that appendMessage
// does not grow it field by field.
func messageBuffer(message msg.Message) []byte {
	return make([]byte, 0, messageFieldsBytes+len(message.Topic)+len(message.Key)+
		base64.StdEncoding.EncodedLen(len(message.Payload))+len(message.ReceiptHandle))
}

// appendDeadLetter appends the origin of a dead letter
// (docs/api.md#dead-letters).
func appendDeadLetter(dst []byte, origin msg.DeadLetterOrigin) []byte {
	dst = append(dst, `,"dead_letter":{"topic":`...)
	dst = appendJSONString(dst, origin.Topic)
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
	return appendJSONString(dst, value)
}

// appendJSONString appends value as a JSON string exactly as marshalJSON
// would: directly when every byte is printable ASCII other than a quote
// and a backslash (topic names, receipt handles, most keys and text
// payloads), which encode as themselves, else through marshalJSON.
func appendJSONString[Text string | []byte](dst []byte, value Text) []byte {
	for i := 0; i < len(value); i++ {
		if c := value[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' {
			return append(dst, marshalJSON(string(value))...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, value...)
	return append(dst, '"')
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

// appendPayload appends the JSON form of a payload: valid JSON (in valid
// UTF-8) verbatim, other valid UTF-8 as a JSON string, anything else as a
// base64 string with the encoding it returns.
func appendPayload(dst, payload []byte) ([]byte, string) {
	if !utf8.Valid(payload) {
		dst = append(dst, '"')
		dst = base64.StdEncoding.AppendEncode(dst, payload)
		return append(dst, '"'), payloadEncodingBase64
	}
	if json.Valid(payload) {
		return append(dst, payload...), ""
	}
	return appendJSONString(dst, payload), ""
}
