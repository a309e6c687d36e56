package wire

import (
	"maps"
	"math/bits"
	"slices"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
)

// Most Raft messages (heartbeats and their answers, append answers, votes)
// carry only varint fields. decodeScalarRaft decodes such a message
// itself, into one allocation instead of protobuf's one per field and one
// for the message; any other message is left to protobuf.

// scalarRaft is a message of varint fields alone, as on the wire: each
// field's value by number, and the set of numbers present. Both
// directions go through it.
type scalarRaft struct {
	values [raftVoteField + 1]uint64
	set    uint32
}

func (s scalarRaft) has(number protowire.Number) bool { return s.set&(1<<number) != 0 }

// raftUint64Field is one of raftpb.Message's uint64 fields: its number
// and the message's pointer field.
type raftUint64Field struct {
	number protowire.Number
	field  **uint64
}

// raftUint64Fields lists m's uint64 fields, the ones the scalar codec
// reads and writes besides the type and reject.
func raftUint64Fields(m *raftpb.Message) [8]raftUint64Field {
	return [...]raftUint64Field{
		{raftToField, &m.To}, {raftFromField, &m.From}, {raftTermField, &m.Term}, {raftLogTermField, &m.LogTerm},
		{raftIndexField, &m.Index}, {raftCommitField, &m.Commit}, {raftRejectHintField, &m.RejectHint}, {raftVoteField, &m.Vote},
	}
}

// raftScalars holds a decoded message together with its fields' values,
// which its pointer fields point into.
type raftScalars struct {
	message raftpb.Message
	kind    raftpb.MessageType
	reject  bool
	// values holds the uint64 fields, in raftUint64Fields' order.
	values [8]uint64
}

// decodeScalarRaft decodes b as protobuf would if every field of b is one
// of the varint fields above, each at most once, with a known message
// type; it reports false, having allocated nothing, for anything else
// (protobuf then decodes it, or refuses it).
func decodeScalarRaft(b []byte) (*raftpb.Message, bool) {
	var s scalarRaft
	for len(b) > 0 {
		number, kind, n := protowire.ConsumeTag(b)
		if n < 0 || kind != protowire.VarintType || !scalarRaftFields.has(uint64(number)) || s.has(number) {
			return nil, false
		}
		v, m := protowire.ConsumeVarint(b[n:])
		if m < 0 {
			return nil, false
		}
		s.set |= 1 << number
		s.values[number] = v
		b = b[n+m:]
	}
	if s.has(raftTypeField) && !knownRaftTypes.has(s.values[raftTypeField]) {
		return nil, false // a closed enum's unknown value goes to protobuf's unknown fields
	}
	return s.message(), true
}

// fieldSet is a set of field numbers, or of enum values, below 64.
type fieldSet uint64

func (f fieldSet) has(value uint64) bool { return value < 64 && f&(1<<value) != 0 }

// scalarRaftFields are the varint fields decodeScalarRaft decodes.
const scalarRaftFields = fieldSet(1<<raftTypeField | 1<<raftToField | 1<<raftFromField | 1<<raftTermField |
	1<<raftLogTermField | 1<<raftIndexField | 1<<raftCommitField | 1<<raftRejectField | 1<<raftRejectHintField | 1<<raftVoteField)

// knownRaftTypes are the values raftpb.MessageType names, as a set: a
// lookup per decoded message in protobuf's table of names cost a map
// access each.
var knownRaftTypes = fieldSetOf(slices.Collect(maps.Keys(raftpb.MessageType_name)))

// fieldSetOf makes the set of values, each of which must be below 64.
func fieldSetOf(values []int32) fieldSet {
	var set fieldSet
	for _, v := range values {
		assert(v >= 0 && v < 64, "a raft message type %d outside 0 to 63", v)
		set |= 1 << v
	}
	return set
}

// message makes the message of the fields present, each set exactly when
// it was on the wire, as protobuf's pointer fields are, in one
// allocation.
func (s scalarRaft) message() *raftpb.Message {
	r := &raftScalars{}
	m := &r.message
	if s.has(raftTypeField) {
		r.kind = raftpb.MessageType(int32(s.values[raftTypeField]))
		m.Type = &r.kind
	}
	if s.has(raftRejectField) {
		r.reject = protowire.DecodeBool(s.values[raftRejectField])
		m.Reject = &r.reject
	}
	for i, f := range raftUint64Fields(m) {
		if s.has(f.number) {
			r.values[i] = s.values[f.number]
			*f.field = &r.values[i]
		}
	}
	return m
}

// scalarRaftOf returns m's fields if m holds only the varint fields above
// and no unknown field; ok is false for any other message.
func scalarRaftOf(m *raftpb.Message) (s scalarRaft, ok bool) {
	if len(m.Entries) > 0 || m.Snapshot != nil || m.Context != nil || len(m.Responses) > 0 ||
		len(m.ProtoReflect().GetUnknown()) > 0 {
		return scalarRaft{}, false
	}
	for _, f := range raftUint64Fields(m) {
		if *f.field != nil {
			s.values[f.number], s.set = **f.field, s.set|1<<f.number
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
	for set := s.set; set != 0; set &= set - 1 { // the fields present, lowest number first
		number := protowire.Number(bits.TrailingZeros32(set))
		size += protowire.SizeTag(number) + protowire.SizeVarint(s.values[number])
	}
	return size
}

// appendTo appends the message's encoding as protobuf's deterministic
// marshalling writes it: the fields in number order.
func (s scalarRaft) appendTo(b []byte) []byte {
	for set := s.set; set != 0; set &= set - 1 { // the fields present, lowest number first
		number := protowire.Number(bits.TrailingZeros32(set))
		b = protowire.AppendVarint(protowire.AppendTag(b, number, protowire.VarintType), s.values[number])
	}
	return b
}
