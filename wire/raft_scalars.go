package wire

import (
	"math"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Most Raft messages (heartbeats and their answers, append answers, votes)
// carry only varint fields. decodeScalarRaft decodes such a message
// itself, into one allocation instead of protobuf's one per field and one
// for the message; any other message is left to protobuf.

// The varint fields of raftpb.Message that decodeScalarRaft reads (the
// enum type, the ids, the terms and indexes, reject and its hint).
const (
	raftTypeField       protowire.Number = 1
	raftToField         protowire.Number = 2
	raftFromField       protowire.Number = 3
	raftTermField       protowire.Number = 4
	raftLogTermField    protowire.Number = 5
	raftIndexField      protowire.Number = 6
	raftCommitField     protowire.Number = 8
	raftRejectField     protowire.Number = 10
	raftRejectHintField protowire.Number = 11
	raftVoteField       protowire.Number = 13
)

// raftScalars holds a decoded message together with its fields' values,
// which its pointer fields point into.
type raftScalars struct {
	message raftpb.Message
	kind    raftpb.MessageType
	reject  bool
	// values holds the uint64 fields, in the order of buildScalarRaft's
	// list.
	values [8]uint64
}

// decodeScalarRaft decodes b as protobuf would if every field of b is one
// of the varint fields above, each at most once, with a known message
// type; it reports false, having allocated nothing, for anything else
// (protobuf then decodes it, or refuses it).
func decodeScalarRaft(b []byte) (*raftpb.Message, bool) {
	var values [raftVoteField + 1]uint64
	var seen uint32
	for len(b) > 0 {
		number, kind, n := protowire.ConsumeTag(b)
		if n < 0 || kind != protowire.VarintType || !isScalarRaftField(number) || seen&(1<<number) != 0 {
			return nil, false
		}
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return nil, false
		}
		seen |= 1 << number
		values[number] = v
		b = b[n+m:]
	}
	if seen&(1<<raftTypeField) != 0 {
		if values[raftTypeField] > math.MaxInt32 {
			return nil, false
		}
		if _, known := raftpb.MessageType_name[int32(values[raftTypeField])]; !known {
			return nil, false // a closed enum's unknown value goes to protobuf's unknown fields
		}
	}
	return buildScalarRaft(values, seen), true
}

func isScalarRaftField(number protowire.Number) bool {
	switch number {
	case raftTypeField, raftToField, raftFromField, raftTermField, raftLogTermField, raftIndexField,
		raftCommitField, raftRejectField, raftRejectHintField, raftVoteField:
		return true
	}
	return false
}

// buildScalarRaft makes the message of the fields seen, each present
// exactly when it was on the wire, as protobuf's pointer fields are.
func buildScalarRaft(values [raftVoteField + 1]uint64, seen uint32) *raftpb.Message {
	s := &raftScalars{}
	m := &s.message
	has := func(number protowire.Number) bool { return seen&(1<<number) != 0 }
	if has(raftTypeField) {
		s.kind = raftpb.MessageType(int32(values[raftTypeField]))
		m.Type = &s.kind
	}
	if has(raftRejectField) {
		s.reject = protowire.DecodeBool(values[raftRejectField])
		m.Reject = &s.reject
	}
	for i, field := range [...]struct {
		number protowire.Number
		into   **uint64
	}{
		{raftToField, &m.To}, {raftFromField, &m.From}, {raftTermField, &m.Term}, {raftLogTermField, &m.LogTerm},
		{raftIndexField, &m.Index}, {raftCommitField, &m.Commit}, {raftRejectHintField, &m.RejectHint}, {raftVoteField, &m.Vote},
	} {
		if has(field.number) {
			s.values[i] = values[field.number]
			*field.into = &s.values[i]
		}
	}
	return m
}

// scalarRaft is a message of varint fields alone, ready to encode:
// each field's value by number, and the set of numbers present.
type scalarRaft struct {
	values [raftVoteField + 1]uint64
	set    uint32
}

// scalarRaftOf returns m's fields if m holds only the varint fields above
// and no unknown field; ok is false for any other message.
func scalarRaftOf(m *raftpb.Message) (s scalarRaft, ok bool) {
	if len(m.Entries) > 0 || m.Snapshot != nil || m.Context != nil || len(m.Responses) > 0 ||
		len(m.ProtoReflect().GetUnknown()) > 0 {
		return scalarRaft{}, false
	}
	for _, field := range [...]struct {
		number protowire.Number
		value  *uint64
	}{
		{raftToField, m.To}, {raftFromField, m.From}, {raftTermField, m.Term}, {raftLogTermField, m.LogTerm},
		{raftIndexField, m.Index}, {raftCommitField, m.Commit}, {raftRejectHintField, m.RejectHint}, {raftVoteField, m.Vote},
	} {
		if field.value != nil {
			s.values[field.number], s.set = *field.value, s.set|1<<field.number
		}
	}
	if m.Type != nil {
		s.values[raftTypeField], s.set = uint64(int64(*m.Type)), s.set|1<<raftTypeField // an enum is an int32, sign-extended
	}
	if m.Reject != nil {
		s.values[raftRejectField], s.set = protowire.EncodeBool(*m.Reject), s.set|1<<raftRejectField
	}
	return s, true
}

// size is the length of the message's encoding.
func (s scalarRaft) size() int {
	size := 0
	for number := raftTypeField; number <= raftVoteField; number++ {
		if s.set&(1<<number) != 0 {
			size += protowire.SizeTag(number) + protowire.SizeVarint(s.values[number])
		}
	}
	return size
}

// appendTo appends the message's encoding as protobuf's deterministic
// marshalling writes it: the fields in number order.
func (s scalarRaft) appendTo(b []byte) []byte {
	for number := raftTypeField; number <= raftVoteField; number++ {
		if s.set&(1<<number) != 0 {
			b = protowire.AppendVarint(protowire.AppendTag(b, number, protowire.VarintType), s.values[number])
		}
	}
	return b
}
