package wiretest

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"narad/node"
)

// RaftBytes stands in for a node.RaftMessage in a Comparable envelope: the
// deterministic protobuf encoding of the message. A protobuf message holds
// internal state that reflect.DeepEqual would compare; its deterministic
// encoding is equal exactly when the messages are.
type RaftBytes struct {
	Bytes []byte
}

// Comparable returns env with a RaftMessage replaced by its RaftBytes, so
// that two envelopes can be compared with reflect.DeepEqual or
// require.Equal.
func Comparable(env node.Envelope) node.Envelope {
	if m, ok := env.Message.(node.RaftMessage); ok {
		encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Message)
		if err != nil {
			panic(fmt.Sprintf("wiretest: marshal of a raft message failed: %v", err))
		}
		env.Message = RaftBytes{Bytes: encoded}
	}
	return env
}
