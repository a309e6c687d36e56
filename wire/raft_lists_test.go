package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/msg"
)

// raftEnvelopeAround returns the envelope encoding of a RaftMessage whose
// protobuf bytes are raw (what a peer may put in a frame).
func raftEnvelopeAround(t *testing.T, raw []byte) []byte {
	t.Helper()
	env, err := EncodeEnvelope(nil, msg.Envelope{From: "a", To: "b", Message: msg.RaftMessage{Message: &raftpb.Message{}}})
	require.NoError(t, err)
	env = env[:len(env)-1] // drop the length 0 of the empty protobuf
	env = binary.AppendUvarint(env, uint64(len(raw)))
	return append(env, raw...)
}

// Decoding a Raft message costs at most a small multiple of its bytes:
// protobuf decodes an empty list element (two bytes) into a heap object
// of a hundred bytes or more, so a frame of empty Responses (which peers
// never send) or Entries made a node allocate gigabytes (review finding:
// 125 and 69 times the input). Both are refused before protobuf runs.
func TestRaftMessageDecodingIsBoundedByItsInput(t *testing.T) {
	const elements = 1 << 20 // 2 MiB of protobuf
	for _, tc := range []struct {
		name string
		tag  byte // protobuf key of a length-delimited field
		want error
	}{
		{"responses", byte(raftResponsesField)<<3 | 2, ErrMalformed},
		{"entries", byte(raftEntriesField)<<3 | 2, ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := raftEnvelopeAround(t, bytes.Repeat([]byte{tc.tag, 0x00}, elements))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := DecodeEnvelope(env)
			runtime.ReadMemStats(&after)
			require.True(t, errors.Is(err, tc.want), "error %v", err)
			allocated := after.TotalAlloc - before.TotalAlloc
			require.Less(t, float64(allocated), 16*float64(len(env)), "decoding %d bytes allocated %d", len(env), allocated)
		})
	}
}

// A Raft message of RaftEntriesMax entries decodes; one more is refused.
func TestRaftEntriesMaxIsTheBound(t *testing.T) {
	entry := func(index uint64) *raftpb.Entry {
		return &raftpb.Entry{Term: proto.Uint64(2), Index: proto.Uint64(index), Data: []byte("c")}
	}
	entries := make([]*raftpb.Entry, RaftEntriesMax)
	for i := range entries {
		entries[i] = entry(uint64(i + 1))
	}
	encode := func(entries []*raftpb.Entry) []byte {
		message := &raftpb.Message{Type: raftpb.MessageType_MsgApp.Enum(), Term: proto.Uint64(2), Entries: entries}
		env, err := EncodeEnvelope(nil, msg.Envelope{From: "a", To: "b", Message: msg.RaftMessage{Message: message}})
		require.NoError(t, err)
		return env
	}
	decoded, err := DecodeEnvelope(encode(entries))
	require.NoError(t, err)
	require.Len(t, decoded.Message.(msg.RaftMessage).Message.Entries, RaftEntriesMax)
	_, err = DecodeEnvelope(encode(append(entries, entry(RaftEntriesMax+1))))
	require.ErrorIs(t, err, ErrTooLarge)
}
