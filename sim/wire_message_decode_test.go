package sim

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"narad/httpapi"
	"narad/msg"
)

// drawText draws a string that is mostly plain, sometimes empty, quoted,
// escaped, non-ASCII or not UTF-8 at all.
func drawText(t *rapid.T, label string) string {
	return rapid.OneOf(rapid.StringMatching(`[a-z0-9:_-]{0,12}`), rapid.Just(""), rapid.Just(`q"uote`),
		rapid.Just("back\\slash"), rapid.Just("tab\there"), rapid.Just("ünï"), rapid.Just("\xff\xfe"),
		rapid.Just("<&>")).Draw(t, label)
}

// drawPayload draws a payload as the simulator sends them (an id as a
// plain JSON string) or as it may not: other JSON, text, binary.
func drawPayload(t *rapid.T) []byte {
	return rapid.OneOf(rapid.Map(rapid.StringMatching(`[a-z0-9-]{0,20}`), func(id string) []byte { return []byte(`"` + id + `"`) }),
		rapid.Just([]byte(`{"a":[1,2.5,null]}`)), rapid.Just([]byte(`17`)), rapid.Just([]byte(`"esc\"aped"`)),
		rapid.Just([]byte("plain text")), rapid.Just([]byte{0xff, 0x00}), rapid.Just([]byte{})).Draw(t, "payload")
}

func drawMessage(t *rapid.T) msg.Message {
	m := msg.Message{Topic: drawText(t, "topic"), Partition: rapid.IntRange(-3, 1<<20).Draw(t, "partition"),
		Offset: rapid.Uint64().Draw(t, "offset"), Key: []byte(drawText(t, "key")), Payload: drawPayload(t),
		TimestampMs: rapid.Int64().Draw(t, "timestamp"), ReceiptHandle: drawText(t, "handle"),
		DeliveryCount: rapid.Uint32().Draw(t, "deliveries")}
	if rapid.IntRange(0, 9).Draw(t, "dead-letter") == 0 {
		m.DeadLetter = &msg.DeadLetterOrigin{Topic: drawText(t, "origin"), Partition: 1, Offset: 2, DeliveryCount: 3}
	}
	return m
}

// mutate changes a few bytes of body, or cuts it short.
func mutate(t *rapid.T, body []byte) []byte {
	out := append([]byte(nil), body...)
	for range rapid.IntRange(0, 3).Draw(t, "mutations") {
		if len(out) == 0 {
			break
		}
		i := rapid.IntRange(0, len(out)-1).Draw(t, "at")
		switch rapid.IntRange(0, 2).Draw(t, "how") {
		case 0:
			out[i] = rapid.SampledFrom([]byte(`{}[]":, 0-9.eE\aZ`)).Draw(t, "byte")
		case 1:
			out = out[:i]
		default:
			out = append(out[:i:i], append([]byte(" "), out[i:]...)...)
		}
	}
	return out
}

// TestWireMessageDecodeMatchesJSON: the message decoders give exactly
// what json.Unmarshal gives (value and failure) for httpapi's encoding of
// any message, single or in a batch, and for any mutation of it; and they
// take their own path, not json's, for the bodies the simulator sees.
func TestWireMessageDecodeMatchesJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		messages := rapid.SliceOfN(rapid.Custom(drawMessage), 0, 4).Draw(t, "messages")
		batch := httpapi.Encode(msg.Consume{Max: 5}, msg.Reply{Result: msg.ConsumeResult{Messages: messages, Batch: true}}).Body
		checkListDecodesAsJSON(t, batch)
		checkListDecodesAsJSON(t, mutate(t, batch))
		if !slices.ContainsFunc(messages, func(m msg.Message) bool { return !simulatorShaped(m) }) {
			_, ok := scanWireMessageList(batch)
			require.True(t, ok, "a batch the simulator sees takes the scanner's path: %s", batch)
		}
		if len(messages) == 0 {
			return
		}
		single := httpapi.Encode(msg.Replay{}, msg.Reply{Result: msg.ReplayResult{Message: &messages[0]}}).Body
		checkMessageDecodesAsJSON(t, single)
		checkMessageDecodesAsJSON(t, mutate(t, single))
		if simulatorShaped(messages[0]) {
			_, rest, ok := scanWireMessage(single)
			require.True(t, ok && onlyWhitespace(rest), "a message the simulator sees takes the scanner's path: %s", single)
		}
	})
}

// simulatorShaped reports whether m is as the simulator's records are:
// plain strings, an id for payload, no dead-letter origin.
func simulatorShaped(m msg.Message) bool {
	_, plainPayload := plainJSONString(m.Payload)
	_, plainTopic := plainJSONString([]byte(`"` + m.Topic + `"`))
	_, plainKey := plainJSONString([]byte(`"` + string(m.Key) + `"`))
	_, plainHandle := plainJSONString([]byte(`"` + m.ReceiptHandle + `"`))
	return plainPayload && plainTopic && plainKey && plainHandle && m.DeadLetter == nil
}

func checkMessageDecodesAsJSON(t *rapid.T, body []byte) {
	var want wireMessage
	wantErr := json.Unmarshal(body, &want)
	got, err := decodeWireMessage(body)
	require.Equal(t, wantErr == nil, err == nil, "failure of %s: json %v, decoder %v", body, wantErr, err)
	require.Equal(t, want, got, "decoding %s", body)
}

func checkListDecodesAsJSON(t *rapid.T, body []byte) {
	var want struct {
		Messages []wireMessage `json:"messages"`
	}
	wantErr := json.Unmarshal(body, &want)
	got, err := decodeWireMessageList(body)
	require.Equal(t, wantErr == nil, err == nil, "failure of %s: json %v, decoder %v", body, wantErr, err)
	require.Equal(t, want.Messages, got, "decoding %s", body)
}

// BenchmarkWireMessageDecode compares the decoder with json.Unmarshal, the
// reference it stands in for, on a batch the simulator could see.
func BenchmarkWireMessageDecode(b *testing.B) {
	message := msg.Message{Topic: "orders", Partition: 3, Offset: 12345, Payload: []byte(`"p1-000123"`),
		TimestampMs: 1_700_000_000_123, ReceiptHandle: "3:12345:77:abcdef0123456789", DeliveryCount: 1}
	body := httpapi.Encode(msg.Consume{Max: 5}, msg.Reply{Result: msg.ConsumeResult{
		Messages: []msg.Message{message, message, message}, Batch: true}}).Body
	b.Run("own", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeWireMessageList(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			var list struct {
				Messages []wireMessage `json:"messages"`
			}
			if err := json.Unmarshal(body, &list); err != nil {
				b.Fatal(err)
			}
		}
	})
}
