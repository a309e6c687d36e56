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

// The fields of raftpb.Message whose elements checkRaftLists counts.
const (
	raftEntriesField   protowire.Number = 7
	raftResponsesField protowire.Number = 14
)

// checkRaftLists walks the top-level fields of an encoded Raft message,
// allocating nothing, before protobuf decodes it: a message with
// Responses (which peers never send) is malformed, and one with more than
// RaftEntriesMax entries too large. protobuf's own decoding bounds only
// the nesting: each empty element of a list costs two bytes on the wire
// and a hundred or more on the heap.
func checkRaftLists(b []byte) error {
	entries := 0
	for len(b) > 0 {
		number, kind, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("%w: raft message: %v", ErrMalformed, protowire.ParseError(n))
		}
		switch number {
		case raftResponsesField:
			return fmt.Errorf("%w: raft message with responses, which peers never send", ErrMalformed)
		case raftEntriesField:
			if entries++; entries > RaftEntriesMax {
				return fmt.Errorf("%w: raft message of more than RaftEntriesMax = %d entries", ErrTooLarge, RaftEntriesMax)
			}
		}
		value := protowire.ConsumeFieldValue(number, kind, b[n:])
		if value < 0 {
			return fmt.Errorf("%w: raft message: %v", ErrMalformed, protowire.ParseError(value))
		}
		b = b[n+value:]
	}
	return nil
}
