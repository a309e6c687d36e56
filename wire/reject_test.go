package wire

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire/wiretest"
)

// encodeUnchecked encodes env without the bound assertions, to build
// inputs that are over a bound.
func encodeUnchecked(t *testing.T, env msg.Envelope) []byte {
	t.Helper()
	e := encoder{boundsUnchecked: true}
	e.byte(Version)
	e.string(env.From, nodeIDLimit)
	e.string(env.To, nodeIDLimit)
	e.peerMessage(env.Message)
	require.NoError(t, e.err)
	return e.buf
}

// prefixLengths returns every prefix length of an encoding of n bytes, or
// for a long one the first and last few hundred and a spread between: a
// decode of a prefix costs up to n, so all of them would be quadratic, and
// the small samples already cut every field of every type.
func prefixLengths(n int) []int {
	const allPrefixesBytesMax, edgeBytes, spreadCount = 4 << 10, 512, 512
	var lengths []int
	for i := 0; i < n; i++ {
		if n <= allPrefixesBytesMax || i < edgeBytes || n-i <= edgeBytes || i%(n/spreadCount) == 0 {
			lengths = append(lengths, i)
		}
	}
	return lengths
}

// TestDecodeRejectsEveryTruncation: every proper prefix of the encoding of
// every sample fails with ErrMalformed.
func TestDecodeRejectsEveryTruncation(t *testing.T) {
	for _, sample := range wiretest.Samples() {
		encoded, err := EncodeEnvelope(nil, sample.Envelope)
		require.NoError(t, err)
		for _, n := range prefixLengths(len(encoded)) {
			_, err := DecodeEnvelope(encoded[:n])
			require.ErrorIs(t, err, ErrMalformed, "%s: prefix of %d of %d bytes", sample.Name, n, len(encoded))
		}
	}
}

// TestDecodeRejectsTrailingBytes: a valid encoding followed by anything
// fails with ErrMalformed.
func TestDecodeRejectsTrailingBytes(t *testing.T) {
	for _, sample := range wiretest.Samples() {
		encoded, err := EncodeEnvelope(nil, sample.Envelope)
		require.NoError(t, err)
		for _, trailer := range [][]byte{{0}, {1}, encoded[:1]} {
			_, err := DecodeEnvelope(append(bytes.Clone(encoded), trailer...))
			require.ErrorIs(t, err, ErrMalformed, "%s with trailer %x", sample.Name, trailer)
		}
	}
}

// TestDecodeRejectsVersion: any version byte but Version is ErrVersion.
func TestDecodeRejectsVersion(t *testing.T) {
	encoded, err := EncodeEnvelope(nil, msg.Envelope{Message: msg.Notify{Topic: "t"}})
	require.NoError(t, err)
	for _, version := range []byte{0, Version + 1, 0xff} {
		encoded[0] = version
		_, err := DecodeEnvelope(encoded)
		require.ErrorIs(t, err, ErrVersion, "version %d", version)
	}
}

// header is the start of an envelope from "a" to "b".
func header() []byte { return []byte{Version, 1, 'a', 1, 'b'} }

// TestDecodeRejectsUnknownTypeNumbers: a type number that is unknown, or
// known but not valid in its place (a request number as a message, a
// message number as a result...), is ErrUnknownType.
func TestDecodeRejectsUnknownTypeNumbers(t *testing.T) {
	asMessage := []typeNumber{0, 12, 15, typeCreateTopic, typeNoResult, 1 << 40}
	for _, number := range asMessage {
		_, err := DecodeEnvelope(binary.AppendUvarint(header(), uint64(number)))
		require.ErrorIs(t, err, ErrUnknownType, "message type number %d", number)
	}
	asRequest := []typeNumber{0, typeNotify, 35, 47, typeTopicInfo, typeMoveChunk}
	for _, number := range asRequest {
		b := append(header(), byte(typeForwardRequest), 0, 0)
		_, err := DecodeEnvelope(binary.AppendUvarint(b, uint64(number)))
		require.ErrorIs(t, err, ErrUnknownType, "request type number %d", number)
	}
	asResult := []typeNumber{0, typeRaftMessage, typeCreateTopic, typeMoveRead, 62, 95}
	for _, number := range asResult {
		b := append(header(), byte(typeForwardReply), 0, 0, 0)
		_, err := DecodeEnvelope(binary.AppendUvarint(b, uint64(number)))
		require.ErrorIs(t, err, ErrUnknownType, "result type number %d", number)
	}
}

// TestDecodeRejectsNonCanonicalEncodings: non-minimal varints, flag bytes
// other than 0 and 1, unknown error codes and ack actions, a delivery
// count over 32 bits and protobuf garbage are ErrMalformed.
func TestDecodeRejectsNonCanonicalEncodings(t *testing.T) {
	forwardReply := append(header(), byte(typeForwardReply))
	cases := map[string][]byte{
		"non-minimal type number": append(header(), 0x85, 0x00),
		"non-minimal id":          append(header(), byte(typeNotify)|0, 0x80, 0x00),
		"flag byte 2":             append(header(), byte(typeForwardRequest), 0, 2, byte(typeListMoves)),
		"error code 0":            append(bytes.Clone(forwardReply), 0, 0, 1, 0, 0, byte(typeNoResult)),
		"error code 10":           append(bytes.Clone(forwardReply), 0, 0, 1, 10, 0, byte(typeNoResult)),
		"ack action 4":            append(header(), byte(typeForwardRequest), 0, 0, byte(typeAck), 1, 't', 4, 0, 0),
		"delivery count 2^32": append(append(bytes.Clone(forwardReply), 0, 0, 0, byte(typeReplayResult), 1, 0, 0, 0, 0, 0, 0, 0),
			binary.AppendUvarint(nil, 1<<32)...),
		"varint over 64 bits":   append(header(), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02),
		"raft protobuf garbage": append(header(), byte(typeRaftMessage), 3, 0xff, 0xff, 0xff),
	}
	for name, b := range cases {
		_, err := DecodeEnvelope(append(b, 0)[:len(b)])
		require.ErrorIs(t, err, ErrMalformed, name)
	}
}

// TestDecodeRejectsEveryBoundExceeded: for every bound, an envelope with
// one value one over it (encoded with the assertions off) is ErrTooLarge,
// and the error names the bound.
func TestDecodeRejectsEveryBoundExceeded(t *testing.T) {
	for _, c := range overBoundCases() {
		encoded := encodeUnchecked(t, c.envelope)
		_, err := DecodeEnvelope(encoded)
		require.ErrorIs(t, err, ErrTooLarge, c.limit.name)
		require.Contains(t, err.Error(), c.limit.name)
	}
}

// TestEncodeAssertsEveryBound: encoding the same values panics, naming
// the bound.
func TestEncodeAssertsEveryBound(t *testing.T) {
	for _, c := range overBoundCases() {
		panicked := capturePanic(func() { _, _ = EncodeEnvelope(nil, c.envelope) })
		require.Contains(t, panicked, c.limit.name, "encoding over %s", c.limit.name)
	}
}

func capturePanic(f func()) (message string) {
	defer func() {
		if r := recover(); r != nil {
			message = r.(string)
		}
	}()
	f()
	return ""
}

type overBoundCase struct {
	limit    limit
	envelope msg.Envelope
}

func over(l limit) string { return strings.Repeat("x", l.max+1) }

func forwardOf(r msg.Request) msg.Envelope {
	return msg.Envelope{Message: msg.ForwardRequest{Request: r}}
}

func replyOf(result msg.Result) msg.Envelope {
	return msg.Envelope{Message: msg.ForwardReply{Reply: msg.Reply{Result: result}}}
}

// overBoundCases has one value over each bound the decoder checks.
func overBoundCases() []overBoundCase {
	return []overBoundCase{
		{nodeIDLimit, msg.Envelope{From: over(nodeIDLimit), Message: msg.Notify{}}},
		{topicNameLimit, msg.Envelope{Message: msg.Notify{Topic: over(topicNameLimit)}}},
		{pageTokenLimit, forwardOf(msg.ListTopics{PageToken: over(pageTokenLimit)})},
		{receiptHandleLimit, forwardOf(msg.Ack{Handles: []string{over(receiptHandleLimit)}})},
		{addressLimit, replyOf(msg.MembersResult{Members: []msg.Member{{Addr: over(addressLimit)}}})},
		{labelLimit, replyOf(msg.MovesResult{Moves: []msg.Move{{Phase: over(labelLimit)}}})},
		{keyLimit, forwardOf(msg.Produce{Records: []msg.ProduceRecord{{Key: []byte(over(keyLimit))}}})},
		{schemaLimit, forwardOf(msg.CreateTopic{Schema: []byte(over(schemaLimit))})},
		{schemaLimit, forwardOf(msg.AlterTopic{Schema: []byte(over(schemaLimit))})},
		{payloadLimit, replyOf(msg.ReplayResult{Message: &msg.Message{Payload: []byte(over(payloadLimit))}})},
		{recordsLimit, forwardOf(msg.Produce{Records: make([]msg.ProduceRecord, recordsLimit.max+1)})},
		{messagesLimit, replyOf(msg.ConsumeResult{Messages: make([]msg.Message, messagesLimit.max+1)})},
		{handlesLimit, replyOf(msg.AckResult{Results: make([]msg.AckItemResult, handlesLimit.max+1)})},
		{topicsLimit, replyOf(msg.TopicPage{Topics: make([]msg.TopicInfo, topicsLimit.max+1)})},
		{partitionStatsLimit, replyOf(msg.TopicDetail{PartitionStats: make([]msg.PartitionStats, partitionStatsLimit.max+1)})},
		{membersLimit, replyOf(msg.MembersResult{Members: make([]msg.Member, membersLimit.max+1)})},
		{movesLimit, replyOf(msg.MovesResult{Moves: make([]msg.Move, movesLimit.max+1)})},
		{nodeIDLimit, forwardOf(msg.MoveFreeze{MoveOf: msg.MoveOf{Target: over(nodeIDLimit)}})},
		{nodeIDLimit, forwardOf(msg.MoveStatus{MoveOf: msg.MoveOf{Target: over(nodeIDLimit)}})},
		{nodeIDLimit, forwardOf(msg.Decommission{ID: over(nodeIDLimit)})},
		{nodeIDLimit, replyOf(msg.MoveVerdict{Target: over(nodeIDLimit)})},
		{topicNameLimit, forwardOf(msg.MoveRead{MoveOf: msg.MoveOf{Topic: over(topicNameLimit)}})},
		{chunkLimit, replyOf(msg.MoveChunk{Data: make([]byte, chunkLimit.max+1)})},
		{segmentsLimit, replyOf(msg.MoveSourceState{Segments: make([]msg.MoveSegment, segmentsLimit.max+1)})},
	}
}

// TestDecodeRejectsClaimsOverBounds: the two bounds no encodable value
// can break (the encoder cuts error text, and a Raft message over its
// bound cannot fit a frame) are checked on hand-built inputs: a length over
// the bound is ErrTooLarge even with the bytes behind it missing.
func TestDecodeRejectsClaimsOverBounds(t *testing.T) {
	reply := append(header(), byte(typeForwardReply), 0, 0, 1, byte(msg.CodeInvalid))
	overMessage := binary.AppendUvarint(reply, ErrorMessageBytesMax+1)
	overMessage = append(append(overMessage, strings.Repeat("m", ErrorMessageBytesMax+1)...), byte(typeNoResult))
	_, err := DecodeEnvelope(overMessage)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Contains(t, err.Error(), "ErrorMessageBytesMax")

	overRaft := binary.AppendUvarint(append(header(), byte(typeRaftMessage)), RaftMessageBytesMax+1)
	_, err = DecodeEnvelope(overRaft)
	require.ErrorIs(t, err, ErrTooLarge)
	require.Contains(t, err.Error(), "RaftMessageBytesMax")
}

// TestDecodeRejectsInputOverFrameBytesMax: an envelope longer than a frame
// is refused before it is read.
func TestDecodeRejectsInputOverFrameBytesMax(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates FrameBytesMax")
	}
	_, err := DecodeEnvelope(make([]byte, FrameBytesMax+1))
	require.ErrorIs(t, err, ErrTooLarge)
}

// TestDecodeDoesNotAllocateClaims: inputs that claim large lengths or
// counts (within or over their bounds) with few bytes behind the claim
// fail without allocating anything near the claimed size.
func TestDecodeDoesNotAllocateClaims(t *testing.T) {
	produce := append(header(), byte(typeForwardRequest), 0, 0, byte(typeProduce), 1, 't', 0)
	consume := append(header(), byte(typeForwardReply), 0, 0, 0, byte(typeConsumeResult))
	detail := append(header(), byte(typeForwardReply), 0, 0, 0, byte(typeTopicDetail), 0, 0, 0, 0, 0, 0, 0, 0)
	chunk := append(header(), byte(typeForwardReply), 0, 0, 0, byte(typeMoveChunk))
	sourceState := append(header(), byte(typeForwardReply), 0, 0, 0, byte(typeMoveSourceState))
	claims := map[string][]byte{
		"payload of PayloadBytesMax":      binary.AppendUvarint(append(bytes.Clone(produce), 1, 0, 0), PayloadBytesMax),
		"payload of 1<<62":                binary.AppendUvarint(append(bytes.Clone(produce), 1, 0, 0), 1<<62),
		"RecordsMax records":              binary.AppendUvarint(bytes.Clone(produce), RecordsMax),
		"MessagesMax messages":            binary.AppendUvarint(consume, MessagesMax),
		"PartitionStatsMax stats":         binary.AppendUvarint(detail, PartitionStatsMax),
		"chunk of ChunkBytesMax":          binary.AppendUvarint(bytes.Clone(chunk), ChunkBytesMax),
		"chunk of 1<<62":                  binary.AppendUvarint(chunk, 1<<62),
		"SegmentsMax segments":            binary.AppendUvarint(sourceState, SegmentsMax),
		"raft message of RaftBytesMax":    binary.AppendUvarint(append(header(), byte(typeRaftMessage)), RaftMessageBytesMax),
		"node id of 1<<40":                binary.AppendUvarint([]byte{Version}, 1<<40),
		"raft message with 64 bytes left": append(binary.AppendUvarint(append(header(), byte(typeRaftMessage)), 1<<20), make([]byte, 64)...),
	}
	for name, b := range claims {
		const runs = 20
		allocated := bytesAllocated(func() {
			for range runs {
				_, err := DecodeEnvelope(b)
				require.Error(t, err, name)
			}
		})
		require.Less(t, allocated/runs, uint64(16<<10), "%s: %d bytes allocated per decode", name, allocated/runs)
	}
}

// bytesAllocated returns the bytes the heap allocated while f ran.
func bytesAllocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestEncodeRefusesUnknownTypes: values of types the codec does not know
// (nil, and pointers, which the sealed interfaces admit since a pointer
// has its value's methods) are ErrUnknownType, and dst comes back
// unchanged. Other types do not compile.
func TestEncodeRefusesUnknownTypes(t *testing.T) {
	envelopes := map[string]msg.Envelope{
		"nil message":     {},
		"pointer message": {Message: &msg.Notify{}},
		"nil request":     forwardOf(nil),
		"pointer request": forwardOf(&msg.Produce{}),
		"pointer result":  replyOf(&msg.TopicInfo{}),
		"raft pointer":    {Message: &msg.RaftMessage{}},
	}
	for name, env := range envelopes {
		dst := []byte("kept")
		out, err := EncodeEnvelope(dst, env)
		require.ErrorIs(t, err, ErrUnknownType, name)
		require.Equal(t, []byte("kept"), out, name)
	}
}

// TestEncodeAssertsFrameBytesMax: an envelope that would not fit a frame
// panics instead of producing a frame no peer accepts.
func TestEncodeAssertsFrameBytesMax(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates FrameBytesMax")
	}
	payload := make([]byte, PayloadBytesMax)
	records := make([]msg.ProduceRecord, FrameBytesMax/PayloadBytesMax+1)
	for i := range records {
		records[i].Payload = payload
	}
	panicked := capturePanic(func() { _, _ = EncodeEnvelope(nil, forwardOf(msg.Produce{Records: records})) })
	require.Contains(t, panicked, "FrameBytesMax")
}

// TestEncodeAssertsRaftMessageNotNil: a RaftMessage without a message is
// a bug of the sender.
func TestEncodeAssertsRaftMessageNotNil(t *testing.T) {
	panicked := capturePanic(func() { _, _ = EncodeEnvelope(nil, msg.Envelope{Message: msg.RaftMessage{}}) })
	require.Contains(t, panicked, "nil Message")
}
