package meta

import (
	"fmt"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"
)

// MarshalMessage encodes a raft message for the peer transport.
func MarshalMessage(msg *raftpb.Message) ([]byte, error) {
	data, err := deterministicProto.Marshal(msg)
	if err != nil {
		return nil, fmt.Errorf("meta: encode raft message: %w", err)
	}
	if len(data) > messageBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMessageTooLarge, len(data), messageBytesMax)
	}
	return data, nil
}

// UnmarshalMessage decodes a raft message received from a peer, refusing
// more than messageBytesMax bytes.
func UnmarshalMessage(data []byte) (*raftpb.Message, error) {
	if len(data) > messageBytesMax {
		return nil, fmt.Errorf("%w: %d bytes, at most %d", ErrMessageTooLarge, len(data), messageBytesMax)
	}
	msg := &raftpb.Message{}
	if err := proto.Unmarshal(data, msg); err != nil {
		return nil, fmt.Errorf("meta: decode raft message: %w", err)
	}
	return msg, nil
}
