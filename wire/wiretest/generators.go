package wiretest

import (
	"errors"

	"go.etcd.io/raft/v3/raftpb"
	"pgregory.net/rapid"

	"narad/msg"
)

// The generators draw values within the bounds of wire, in raw form: nil
// and empty slices both occur, and errors may be of a type other than
// *msg.Error, so a round trip yields Canonical of the value drawn. Lists
// and byte strings are kept short (their bounds are tested by table tests);
// strings, integers and error texts range up to their bounds.

// Envelope draws an envelope with any peer message.
func Envelope() *rapid.Generator[msg.Envelope] {
	return rapid.Custom(func(t *rapid.T) msg.Envelope {
		return msg.Envelope{
			From:    nodeID().Draw(t, "from"),
			To:      nodeID().Draw(t, "to"),
			Message: peerMessage().Draw(t, "message"),
		}
	})
}

func peerMessage() *rapid.Generator[msg.PeerMessage] {
	return rapid.OneOf(
		raftMessage(),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			return msg.ForwardRequest{ID: rapid.Uint64().Draw(t, "id"), Request: Request().Draw(t, "request"), LocalOnly: rapid.Bool().Draw(t, "local")}
		}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			return msg.ForwardReply{ID: rapid.Uint64().Draw(t, "id"), Reply: replyValue().Draw(t, "reply")}
		}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			return msg.Subscribe{Topic: topic().Draw(t, "topic"), ForMs: rapid.Int64().Draw(t, "for")}
		}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage { return msg.Notify{Topic: topic().Draw(t, "topic")} }),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage { return msg.ForwardCancel{ID: rapid.Uint64().Draw(t, "id")} }),
		rapid.Just[msg.PeerMessage](msg.Retired{}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage { return join().Draw(t, "join") }),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			return msg.JoinRelay{NodeID: nodeID().Draw(t, "joiner"), Join: join().Draw(t, "join")}
		}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			address := rapid.StringN(0, 32, AddressBytesMax)
			voters := rapid.SliceOfN(rapid.Custom(func(t *rapid.T) msg.PeerAddress {
				return msg.PeerAddress{ID: nodeID().Draw(t, "id"), RaftID: rapid.Uint64().Draw(t, "raft"), ClusterAddr: address.Draw(t, "address")}
			}), 0, 8).Draw(t, "voters")
			return msg.JoinAccepted{Voters: voters}
		}),
		rapid.Custom(func(t *rapid.T) msg.PeerMessage {
			address := rapid.StringN(0, 32, AddressBytesMax)
			return msg.Heartbeat{HTTPAddr: address.Draw(t, "http"), ClusterAddr: address.Draw(t, "cluster"), NowMs: rapid.Int64().Draw(t, "now"),
				Incarnation: rapid.Uint64().Draw(t, "incarnation"), DiskLow: rapid.Bool().Draw(t, "disk low"), DataID: nodeID().Draw(t, "data id")}
		}),
	)
}

func join() *rapid.Generator[msg.Join] {
	return rapid.Custom(func(t *rapid.T) msg.Join {
		address := rapid.StringN(0, 32, AddressBytesMax)
		return msg.Join{RaftID: rapid.Uint64().Draw(t, "raft"), ClusterAddr: address.Draw(t, "cluster"), HTTPAddr: address.Draw(t, "http")}
	})
}

// raftMessage draws a msg.RaftMessage with any subset of its fields set.
func raftMessage() *rapid.Generator[msg.PeerMessage] {
	return rapid.Custom(func(t *rapid.T) msg.PeerMessage {
		return msg.RaftMessage{Message: &raftpb.Message{
			Type:       optional(t, "type", rapid.Map(rapid.Int32Range(0, 30), func(v int32) raftpb.MessageType { return raftpb.MessageType(v) })),
			To:         optional(t, "to", rapid.Uint64()),
			From:       optional(t, "from", rapid.Uint64()),
			Term:       optional(t, "term", rapid.Uint64()),
			LogTerm:    optional(t, "logTerm", rapid.Uint64()),
			Index:      optional(t, "index", rapid.Uint64()),
			Entries:    rapid.SliceOfN(raftEntry(), 0, 3).Draw(t, "entries"),
			Commit:     optional(t, "commit", rapid.Uint64()),
			Vote:       optional(t, "vote", rapid.Uint64()),
			Snapshot:   rapid.OneOf(rapid.Just[*raftpb.Snapshot](nil), raftSnapshot()).Draw(t, "snapshot"),
			Reject:     optional(t, "reject", rapid.Bool()),
			RejectHint: optional(t, "rejectHint", rapid.Uint64()),
			Context:    bytesRaw(16).Draw(t, "context"),
			// No Responses: peers never send them, and the codec refuses
			// a message that holds any (wire.RaftEntriesMax's doc).
		}}
	})
}

func raftEntry() *rapid.Generator[*raftpb.Entry] {
	return rapid.Custom(func(t *rapid.T) *raftpb.Entry {
		return &raftpb.Entry{
			Term:  optional(t, "term", rapid.Uint64()),
			Index: optional(t, "index", rapid.Uint64()),
			Type:  optional(t, "type", rapid.Map(rapid.Int32Range(0, 2), func(v int32) raftpb.EntryType { return raftpb.EntryType(v) })),
			Data:  bytesRaw(32).Draw(t, "data"),
		}
	})
}

func raftSnapshot() *rapid.Generator[*raftpb.Snapshot] {
	return rapid.Custom(func(t *rapid.T) *raftpb.Snapshot {
		return &raftpb.Snapshot{Data: bytesRaw(64).Draw(t, "data"), Metadata: &raftpb.SnapshotMetadata{
			ConfState: &raftpb.ConfState{Voters: rapid.SliceOfN(rapid.Uint64(), 0, 5).Draw(t, "voters")},
			Index:     optional(t, "index", rapid.Uint64()),
		}}
	})
}

// optional draws nil or a pointer to a value of g.
func optional[T any](t *rapid.T, label string, g *rapid.Generator[T]) *T {
	if !rapid.Bool().Draw(t, label+"-set") {
		return nil
	}
	v := g.Draw(t, label)
	return &v
}

func replyValue() *rapid.Generator[msg.Reply] {
	return rapid.Custom(func(t *rapid.T) msg.Reply {
		return msg.Reply{ID: msg.RequestID(rapid.Uint64().Draw(t, "id")), Err: errorValue().Draw(t, "err"), Result: Result().Draw(t, "result")}
	})
}

// errorValue draws nil, a *msg.Error of any code, or another error.
func errorValue() *rapid.Generator[error] {
	text := rapid.StringN(0, -1, ErrorMessageBytesMax)
	return rapid.OneOf(
		rapid.Just[error](nil),
		rapid.Custom(func(t *rapid.T) error {
			code := msg.Code(rapid.IntRange(int(msg.CodeInvalid), int(msg.CodeForbidden)).Draw(t, "code"))
			return &msg.Error{Code: code, Message: text.Draw(t, "message")}
		}),
		rapid.Map(text, func(s string) error { return errors.New(s) }),
	)
}

func nodeID() *rapid.Generator[string] { return rapid.StringN(0, -1, NodeIDBytesMax) }

func topic() *rapid.Generator[string] { return rapid.StringN(0, -1, msg.TopicNameBytesMax) }

func label() *rapid.Generator[string] { return rapid.StringN(0, -1, LabelBytesMax) }

func handle() *rapid.Generator[string] { return rapid.StringN(0, -1, ReceiptHandleBytesMax) }

// bytesRaw draws nil, an empty non-nil slice, or up to n bytes.
func bytesRaw(n int) *rapid.Generator[[]byte] {
	return rapid.OneOf(rapid.Just[[]byte](nil), rapid.Just([]byte{}), rapid.SliceOfN(rapid.Byte(), 1, n))
}

// listRaw draws nil, an empty non-nil list, or up to n elements.
func listRaw[T any](g *rapid.Generator[T], n int) *rapid.Generator[[]T] {
	return rapid.OneOf(rapid.Just[[]T](nil), rapid.Just([]T{}), rapid.SliceOfN(g, 1, n))
}
