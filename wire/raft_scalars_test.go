package wire

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// randomScalarRaft returns a message with a random subset of the varint
// fields decodeScalarRaft reads, and sometimes a field it leaves to
// protobuf.
func randomScalarRaft(rng *rand.Rand) *raftpb.Message {
	m := &raftpb.Message{}
	value := func() *uint64 {
		v := []uint64{0, 1, 127, 128, 1 << 35, 1<<64 - 1, rng.Uint64()}[rng.IntN(7)]
		return &v
	}
	for _, field := range []**uint64{&m.To, &m.From, &m.Term, &m.LogTerm, &m.Index, &m.Commit, &m.RejectHint, &m.Vote} {
		if rng.IntN(2) == 0 {
			*field = value()
		}
	}
	if rng.IntN(4) > 0 {
		m.Type = raftpb.MessageType(rng.IntN(len(raftpb.MessageType_name))).Enum()
	}
	if rng.IntN(3) == 0 {
		m.Reject = proto.Bool(rng.IntN(2) == 0)
	}
	switch rng.IntN(10) {
	case 0:
		m.Context = []byte("ctx")
	case 1:
		m.Entries = []*raftpb.Entry{{Term: proto.Uint64(1), Index: proto.Uint64(2), Data: []byte("x")}}
	}
	return m
}

// decodeScalarRaft decodes exactly what protobuf decodes, fields present
// exactly when protobuf's are, and declines every message with another
// field: for encoded messages, and for their bytes changed at random.
func TestDecodeScalarRaftAgreesWithProtobuf(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	fast := 0
	for i := 0; i < 20_000; i++ {
		encoded, err := raftMarshal.Marshal(randomScalarRaft(rng))
		require.NoError(t, err)
		if i%2 == 1 && len(encoded) > 0 {
			encoded[rng.IntN(len(encoded))] = byte(rng.Uint32())
		}
		if i%5 == 0 { // a field out of order, or repeated
			encoded = protowire.AppendVarint(protowire.AppendTag(encoded, protowire.Number(1+rng.IntN(14)), protowire.VarintType), rng.Uint64N(30))
		}
		got, ok := decodeScalarRaft(encoded)
		want := &raftpb.Message{}
		wantErr := raftUnmarshal.Unmarshal(encoded, want)
		if !ok {
			continue
		}
		fast++
		require.NoError(t, wantErr, "fast path took %x, which protobuf refuses", encoded)
		require.True(t, proto.Equal(want, got), "%x: protobuf %v, fast path %v", encoded, want, got)
		require.Empty(t, want.ProtoReflect().GetUnknown())
		again, err := raftMarshal.Marshal(got)
		require.NoError(t, err)
		wantAgain, err := raftMarshal.Marshal(want)
		require.NoError(t, err)
		require.Equal(t, wantAgain, again)
	}
	require.Greater(t, fast, 5_000)
}

// The encoding of a message of varint fields alone is protobuf's, byte
// for byte; any other message is left to protobuf.
func TestScalarRaftEncodesAsProtobuf(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for range 20_000 {
		m := randomScalarRaft(rng)
		if rng.IntN(10) == 0 {
			m.Context = []byte{} // present, though empty
		}
		want, err := raftMarshal.Marshal(m)
		require.NoError(t, err)
		s, ok := scalarRaftOf(m)
		if !ok {
			require.True(t, len(m.Entries) > 0 || m.Context != nil, "%v left to protobuf", m)
			continue
		}
		fast++
		require.Equal(t, len(want), s.size(), "%v", m)
		require.Equal(t, string(want), string(s.appendTo(nil)), "%v", m)
	}
	require.Greater(t, fast, 10_000)
	withUnknown := &raftpb.Message{Term: proto.Uint64(1)}
	withUnknown.ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 5))
	_, ok := scalarRaftOf(withUnknown)
	require.False(t, ok, "a message with unknown fields is protobuf's to encode")
}

// A heartbeat decodes in one allocation.
func TestDecodeScalarRaftAllocatesOnce(t *testing.T) {
	encoded, err := raftMarshal.Marshal(&raftpb.Message{Type: raftpb.MessageType_MsgHeartbeat.Enum(), To: proto.Uint64(2),
		From: proto.Uint64(1), Term: proto.Uint64(7), Commit: proto.Uint64(90)})
	require.NoError(t, err)
	allocs := testing.AllocsPerRun(100, func() {
		if _, ok := decodeScalarRaft(encoded); !ok {
			t.Fatal("a heartbeat left to protobuf")
		}
	})
	require.Equal(t, 1.0, allocs)
}
