package wire_test

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
	"narad/wire/wiretest"
)

// roundTrip encodes env, decodes the bytes, and checks that re-encoding
// the decoded value yields the same bytes (every value has one encoding).
func roundTrip(t *testing.T, env msg.Envelope) msg.Envelope {
	t.Helper()
	encoded, err := wire.EncodeEnvelope(nil, env)
	require.NoError(t, err)
	decoded, err := wire.DecodeEnvelope(encoded)
	require.NoError(t, err)
	again, err := wire.EncodeEnvelope(nil, decoded)
	require.NoError(t, err)
	require.Equal(t, encoded, again, "the decoded value re-encodes to other bytes")
	return decoded
}

// TestRoundTripSamples: every sample (every message, request and result
// type, with edge values) decodes to exactly the value encoded.
func TestRoundTripSamples(t *testing.T) {
	for _, sample := range wiretest.Samples() {
		t.Run(sample.Name, func(t *testing.T) {
			decoded := roundTrip(t, sample.Envelope)
			require.Equal(t, wiretest.Comparable(sample.Envelope), wiretest.Comparable(decoded))
		})
	}
}

// TestEncodeAppendsToDst: the encoding is appended after what dst holds.
func TestEncodeAppendsToDst(t *testing.T) {
	env := msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: "orders"}}
	alone, err := wire.EncodeEnvelope(nil, env)
	require.NoError(t, err)
	appended, err := wire.EncodeEnvelope([]byte("prefix"), env)
	require.NoError(t, err)
	require.Equal(t, append([]byte("prefix"), alone...), appended)
}

// TestDecodedValuesDoNotAliasInput: changing the input after decoding does
// not change the decoded keys and payloads.
func TestDecodedValuesDoNotAliasInput(t *testing.T) {
	env := msg.Envelope{Message: msg.ForwardRequest{Request: msg.Produce{Topic: "t",
		Records: []msg.ProduceRecord{{Key: []byte("key"), Payload: []byte("payload")}, {Payload: []byte("second")}}}}}
	encoded, err := wire.EncodeEnvelope(nil, env)
	require.NoError(t, err)
	decoded, err := wire.DecodeEnvelope(encoded)
	require.NoError(t, err)
	for i := range encoded {
		encoded[i] = 0xee
	}
	require.Equal(t, env, decoded)
	records := decoded.Message.(msg.ForwardRequest).Request.(msg.Produce).Records
	_ = append(records[0].Payload, 'x') // must not overwrite the next slice in the arena
	require.Equal(t, []byte("second"), records[1].Payload)
}

// TestAlterTopicPointers: a nil field stays nil, a pointer to 0 stays a
// pointer to 0, field by field.
func TestAlterTopicPointers(t *testing.T) {
	zero, zero64 := 0, int64(0)
	request := msg.AlterTopic{Name: "t", Partitions: &zero, VisibilityTimeoutMs: &zero64}
	decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardRequest{Request: request}})
	got := decoded.Message.(msg.ForwardRequest).Request.(msg.AlterTopic)
	require.NotNil(t, got.Partitions)
	require.Equal(t, 0, *got.Partitions)
	require.NotNil(t, got.VisibilityTimeoutMs)
	require.Equal(t, int64(0), *got.VisibilityTimeoutMs)
	require.Nil(t, got.RetentionMs)
	require.Nil(t, got.InFlightMax)
	require.Nil(t, got.AckedAheadMax)
}

// TestNilAndEmptyNormalization: the lists printed as JSON arrays decode
// non-nil even when nil was encoded; other empty slices decode as nil.
func TestNilAndEmptyNormalization(t *testing.T) {
	results := []msg.Result{
		msg.TopicPage{}, msg.TopicDetail{}, msg.ConsumeResult{}, msg.MembersResult{}, msg.MovesResult{},
		msg.ProduceResult{Records: []msg.Placement{}}, msg.AckResult{Results: []msg.AckItemResult{}},
		msg.ConsumeResult{Messages: []msg.Message{{Key: []byte{}, Payload: []byte{}}}},
		msg.MoveSourceState{Segments: []msg.MoveSegment{}}, msg.MoveChunk{Data: []byte{}},
	}
	want := []msg.Result{
		msg.TopicPage{Topics: []msg.TopicInfo{}}, msg.TopicDetail{PartitionStats: []msg.PartitionStats{}},
		msg.ConsumeResult{Messages: []msg.Message{}}, msg.MembersResult{Members: []msg.Member{}},
		msg.MovesResult{Moves: []msg.Move{}}, msg.ProduceResult{}, msg.AckResult{},
		msg.ConsumeResult{Messages: []msg.Message{{}}},
		msg.MoveSourceState{}, msg.MoveChunk{},
	}
	for i, result := range results {
		decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardReply{Reply: msg.Reply{Result: result}}})
		require.Equal(t, want[i], decoded.Message.(msg.ForwardReply).Reply.Result, "result %d (%T)", i, result)
	}
	request := msg.Produce{Records: []msg.ProduceRecord{{Key: []byte{}, Payload: []byte{}}}}
	decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardRequest{Request: request}})
	require.Equal(t, msg.Produce{Records: []msg.ProduceRecord{{}}}, decoded.Message.(msg.ForwardRequest).Request)
	decoded = roundTrip(t, msg.Envelope{Message: msg.ForwardRequest{Request: msg.Ack{Handles: []string{}}}})
	require.Equal(t, msg.Ack{}, decoded.Message.(msg.ForwardRequest).Request)
}

// TestErrorsDecodeAsNodeErrors: an error of another type travels as
// CodeInternal with its text, in a reply and in an ack item; a *msg.Error
// keeps its code and message.
func TestErrorsDecodeAsNodeErrors(t *testing.T) {
	other := errors.New("disk on fire")
	reply := msg.Reply{ID: 3, Err: other, Result: msg.AckResult{Results: []msg.AckItemResult{
		{Handle: "h", Err: other}, {Handle: "g", Err: msg.Conflict("topic already exists")}, {Handle: "ok"},
	}}}
	decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardReply{Reply: reply}})
	got := decoded.Message.(msg.ForwardReply).Reply
	require.Equal(t, &msg.Error{Code: msg.CodeInternal, Message: "disk on fire"}, got.Err)
	items := got.Result.(msg.AckResult).Results
	require.Equal(t, &msg.Error{Code: msg.CodeInternal, Message: "disk on fire"}, items[0].Err)
	require.Equal(t, &msg.Error{Code: msg.CodeConflict, Message: "topic already exists"}, items[1].Err)
	require.NoError(t, items[2].Err)
	require.Equal(t, msg.CodeInternal, msg.CodeOf(got.Err))
}

// TestLongErrorMessagesAreCut: error text over ErrorMessageBytesMax is cut
// at a UTF-8 boundary to at most the bound, keeping its beginning; text
// at the bound travels whole.
func TestLongErrorMessagesAreCut(t *testing.T) {
	atBound := strings.Repeat("a", wire.ErrorMessageBytesMax)
	for _, message := range []string{strings.Repeat("a", wire.ErrorMessageBytesMax+1), strings.Repeat("é", wire.ErrorMessageBytesMax), atBound} {
		decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardReply{Reply: msg.Reply{Err: msg.Invalid("%s", message)}}})
		got := decoded.Message.(msg.ForwardReply).Reply.Err.(*msg.Error)
		require.Equal(t, msg.CodeInvalid, got.Code)
		require.LessOrEqual(t, len(got.Message), wire.ErrorMessageBytesMax)
		require.True(t, utf8.ValidString(got.Message), "cut inside a rune")
		if message == atBound {
			require.Equal(t, message, got.Message)
			continue
		}
		require.Greater(t, len(got.Message), wire.ErrorMessageBytesMax-16, "cut far below the bound")
		kept := strings.TrimSuffix(got.Message, " [cut]")
		require.NotEqual(t, kept, got.Message, "a cut message is marked")
		require.True(t, strings.HasPrefix(message, kept), "a cut message keeps its beginning")
	}
}

// TestReplayResultMessagePointer: a nil message stays nil; a non-nil one
// decodes to a new pointer to an equal message.
func TestReplayResultMessagePointer(t *testing.T) {
	message := &msg.Message{Topic: "t", Offset: 9, Payload: []byte("p")}
	for _, result := range []msg.ReplayResult{{}, {Message: message}} {
		decoded := roundTrip(t, msg.Envelope{Message: msg.ForwardReply{Reply: msg.Reply{Result: result}}})
		got := decoded.Message.(msg.ForwardReply).Reply.Result.(msg.ReplayResult)
		require.Equal(t, result, got)
		if result.Message != nil {
			require.NotSame(t, result.Message, got.Message)
		}
	}
}
