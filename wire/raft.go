package wire

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
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
// raftpb.Message.
func (d *decoder) raftMessage() msg.RaftMessage {
	n := d.length(raftMessageLimit)
	m := &raftpb.Message{}
	if err := raftUnmarshal.Unmarshal(d.input[:n], m); err != nil {
		d.fail(fmt.Errorf("%w: raft message: %v", ErrMalformed, err))
		return msg.RaftMessage{}
	}
	d.input = d.input[n:]
	return msg.RaftMessage{Message: m}
}
