package wire

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// confStateVoters wraps list (encoded occurrences of ConfState field 1,
// the voters) as Message.snapshot(9).metadata(2).conf_state(1).
func confStateVoters(list []byte) []byte {
	wrap := func(field byte, inner []byte) []byte {
		out := []byte{field<<3 | 2}
		out = binary.AppendUvarint(out, uint64(len(inner)))
		return append(out, inner...)
	}
	return wrap(9, wrap(2, wrap(1, list)))
}

// The raft ids a snapshot's ConfState lists are counted before protobuf
// decodes them: past RaftConfStateIDsMax (packed or not) the message is
// too large, and decoding it allocates a small multiple of its bytes.
func TestRaftConfStateListsAreBoundedByInput(t *testing.T) {
	const elements = 1 << 21
	packed := binary.AppendUvarint([]byte{1<<3 | 2}, elements)
	packed = append(packed, bytes.Repeat([]byte{0x00}, elements)...)
	for _, tc := range []struct {
		name string
		list []byte
	}{
		{"packed", packed},
		{"unpacked", bytes.Repeat([]byte{1 << 3, 0x00}, elements)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := raftEnvelopeAround(t, confStateVoters(tc.list))
			var before, after, kept runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			decoded, err := DecodeEnvelope(env)
			runtime.ReadMemStats(&after)
			runtime.GC()
			runtime.ReadMemStats(&kept)
			runtime.KeepAlive(decoded)
			allocated := after.TotalAlloc - before.TotalAlloc
			retained := int64(kept.HeapAlloc) - int64(before.HeapAlloc)
			t.Logf("input %d bytes, error %v: allocated %d bytes (%.1fx), retained by the decoded message %d bytes (%.1fx)",
				len(env), err, allocated, float64(allocated)/float64(len(env)), retained, float64(retained)/float64(len(env)))
			require.ErrorIs(t, err, ErrTooLarge)
			require.Less(t, float64(allocated), 16*float64(len(env)), "decoding %d bytes allocated %d", len(env), allocated)
		})
	}
}

// A snapshot listing a cluster's voters and learners decodes.
func TestARaftSnapshotWithItsVotersDecodes(t *testing.T) {
	voters := []byte{}
	for id := range byte(5) {
		voters = append(voters, 1<<3, id+1) // unpacked voters
	}
	learners := append(binary.AppendUvarint([]byte{2<<3 | 2}, 2), 6, 7) // packed learners
	decoded, err := DecodeEnvelope(raftEnvelopeAround(t, confStateVoters(append(voters, learners...))))
	require.NoError(t, err)
	require.NotNil(t, decoded.Message)
}
