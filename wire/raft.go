package wire

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"narad/msg"
)

// raftMarshal encodes Raft messages deterministically (the simulator
// hashes its trace), reusing the size computed just before.
var raftMarshal = proto.MarshalOptions{Deterministic: true, UseCachedSize: true}

// raftUnmarshal decodes Raft messages with a small recursion bound.
var raftUnmarshal = proto.UnmarshalOptions{RecursionLimit: raftRecursionDepthMax}

// raftMessage writes the protobuf encoding of m, length-prefixed. A nil
// message is a bug of the sender: a RaftMessage always carries one.
func (e *encoder) raftMessage(m *raftpb.Message) {
	assert(m != nil, "a RaftMessage with a nil Message")
	if scalar, ok := scalarRaftOf(m); ok { // most messages: without protobuf's reflection
		e.length(scalar.size(), raftMessageLimit)
		e.buf = scalar.appendTo(e.buf)
		return
	}
	size := proto.Size(m)
	e.length(size, raftMessageLimit)
	e.grow(size)
	before := len(e.buf)
	encoded, err := raftMarshal.MarshalAppend(e.buf, m)
	if err != nil || len(encoded)-before != size {
		assert(false, "raft message marshalled to %d bytes, sized %d (error %v)", len(encoded)-before, size, err)
	}
	e.buf = encoded
}

// raftMessage reads a length-prefixed protobuf Raft message into a new
// raftpb.Message, after checking its lists (checkRaftLists).
func (d *decoder) raftMessage() msg.RaftMessage {
	n := d.length(raftMessageLimit)
	if d.err != nil {
		return msg.RaftMessage{}
	}
	if m, ok := decodeScalarRaft(d.input[:n]); ok { // no lists to check
		d.input = d.input[n:]
		return msg.RaftMessage{Message: m}
	}
	if err := checkRaftLists(d.input[:n]); err != nil {
		d.fail(err)
		return msg.RaftMessage{}
	}
	m := &raftpb.Message{}
	if err := raftUnmarshal.Unmarshal(d.input[:n], m); err != nil {
		d.fail(fmt.Errorf("%w: raft message: %v", ErrMalformed, err))
		return msg.RaftMessage{}
	}
	d.input = d.input[n:]
	return msg.RaftMessage{Message: m}
}

// The field numbers of raftpb.Message this codec reads itself: the
// varint fields decodeScalarRaft decodes (the enum type, the ids, the
// terms and indexes, reject and its hint), and the lists checkRaftLists
// counts (entries, responses, and the snapshot, on the path to the
// ConfState's id lists).
const (
	raftTypeField       protowire.Number = 1
	raftToField         protowire.Number = 2
	raftFromField       protowire.Number = 3
	raftTermField       protowire.Number = 4
	raftLogTermField    protowire.Number = 5
	raftIndexField      protowire.Number = 6
	raftEntriesField    protowire.Number = 7
	raftCommitField     protowire.Number = 8
	raftSnapshotField   protowire.Number = 9
	raftRejectField     protowire.Number = 10
	raftRejectHintField protowire.Number = 11
	raftVoteField       protowire.Number = 13
	raftResponsesField  protowire.Number = 14
)

// The path from a snapshot to its ConfState's id lists:
// Snapshot.metadata, SnapshotMetadata.conf_state, whose fields 1 to 4 are
// the lists.
const (
	raftSnapshotMetadataField  protowire.Number = 2
	raftMetadataConfStateField protowire.Number = 1
	raftConfStateListLast      protowire.Number = 4
)

// checkRaftLists walks the fields of an encoded Raft message that hold
// lists, allocating nothing, before protobuf decodes it: a message with
// Responses (which peers never send) is malformed, and one with more than
// RaftEntriesMax entries, or more than RaftConfStateIDsMax ids in its
// snapshot's ConfState, too large. protobuf's own decoding bounds only
// the nesting: each empty element of a list costs a byte or two on the
// wire and eight to a hundred or more on the heap.
func checkRaftLists(b []byte) error {
	entries, ids := 0, 0
	return walkFields(b, func(number protowire.Number, kind protowire.Type, value []byte) error {
		switch {
		case number == raftResponsesField:
			return fmt.Errorf("%w: raft message with responses, which peers never send", ErrMalformed)
		case number == raftEntriesField:
			if entries++; entries > RaftEntriesMax {
				return fmt.Errorf("%w: raft message of more than RaftEntriesMax = %d entries", ErrTooLarge, RaftEntriesMax)
			}
		case number == raftSnapshotField && kind == protowire.BytesType:
			return countConfStateIDs(value, &ids)
		}
		return nil
	})
}

// countConfStateIDs adds to *ids the raft ids listed in the ConfState of
// an encoded Snapshot, failing past RaftConfStateIDsMax.
func countConfStateIDs(snapshot []byte, ids *int) error {
	return walkFields(snapshot, func(number protowire.Number, kind protowire.Type, metadata []byte) error {
		if number != raftSnapshotMetadataField || kind != protowire.BytesType {
			return nil
		}
		return walkFields(metadata, func(number protowire.Number, kind protowire.Type, confState []byte) error {
			if number != raftMetadataConfStateField || kind != protowire.BytesType {
				return nil
			}
			return walkFields(confState, func(number protowire.Number, kind protowire.Type, list []byte) error {
				if number < 1 || number > raftConfStateListLast {
					return nil
				}
				if kind == protowire.BytesType { // packed: one id per varint, each ending in a byte below 0x80
					for _, c := range list {
						if c < 0x80 {
							*ids++
						}
					}
				} else {
					*ids++
				}
				if *ids > RaftConfStateIDsMax {
					return fmt.Errorf("%w: raft snapshot listing more than RaftConfStateIDsMax = %d ids", ErrTooLarge, RaftConfStateIDsMax)
				}
				return nil
			})
		})
	})
}

// walkFields calls visit with each field of an encoded protobuf message:
// its number, wire type and value bytes (a length-delimited field's
// contents; otherwise the encoded value).
func walkFields(b []byte, visit func(protowire.Number, protowire.Type, []byte) error) error {
	for len(b) > 0 {
		number, kind, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: raft message: %v", ErrMalformed, protowire.ParseError(n))
		}
		value := protowire.ConsumeFieldValue(number, kind, b[n:])
		if value < 0 {
			return fmt.Errorf("%w: raft message: %v", ErrMalformed, protowire.ParseError(value))
		}
		contents := b[n : n+value]
		if kind == protowire.BytesType {
			contents, _ = protowire.ConsumeBytes(contents)
		}
		if err := visit(number, kind, contents); err != nil {
			return err
		}
		b = b[n+value:]
	}
	return nil
}
