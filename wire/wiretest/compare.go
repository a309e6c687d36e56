package wiretest

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"narad/msg"
)

// RaftBytes stands in for a msg.RaftMessage in a Comparable envelope: the
// deterministic protobuf encoding of the message. A protobuf message holds
// internal state that reflect.DeepEqual would compare; its deterministic
// encoding is equal exactly when the messages are.
type RaftBytes struct {
	Bytes []byte
}

// ComparableEnvelope is an envelope whose Message may be a RaftBytes in
// place of a msg.RaftMessage, which msg.Envelope's sealed message type
// does not admit.
type ComparableEnvelope struct {
	// From and To are the envelope's, unchanged.
	From, To string
	// Message is the envelope's message, a RaftMessage replaced by its
	// RaftBytes.
	Message any
}

// Comparable returns env with a RaftMessage replaced by its RaftBytes, so
// that two envelopes can be compared with reflect.DeepEqual or
// require.Equal.
func Comparable(env msg.Envelope) ComparableEnvelope {
	view := ComparableEnvelope{From: env.From, To: env.To, Message: env.Message}
	if m, ok := env.Message.(msg.RaftMessage); ok {
		encoded, err := proto.MarshalOptions{Deterministic: true}.Marshal(m.Message)
		if err != nil {
			panic(fmt.Sprintf("wiretest: marshal of a raft message failed: %v", err))
		}
		view.Message = RaftBytes{Bytes: encoded}
	}
	return view
}
