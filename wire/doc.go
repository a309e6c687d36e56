// Package wire is the binary codec for messages between nodes: it turns a
// msg.Envelope into bytes and back, and carries those bytes as frames on
// a stream. The production transport (host) uses it on every peer
// connection, and the simulator encodes every message it delivers with it,
// so nodes never share memory and the codec runs in every simulated run.
//
// # What it owns
//
//   - The envelope encoding (EncodeEnvelope, DecodeEnvelope) of every peer
//     message package msg defines (msg.PeerMessage: RaftMessage,
//     ForwardRequest, ForwardReply, Subscribe, Notify, Join, JoinRelay,
//     JoinAccepted, Heartbeat, ForwardCancel, Retired), of every msg.Request a ForwardRequest carries, and of
//     msg.Reply with every msg.Result.
//   - The type number table (types.go), append-only: a number is never
//     reused or renumbered.
//   - The frame format (AppendFrame, ReadFrame): magic, version, length,
//     CRC-32C, payload.
//   - The bounds (bounds.go) of every length and count.
//
// # Encoding
//
// An envelope is the Version byte, From, To, the type number of the
// message, then the message's fields in declaration order. Integers are
// varints (zig-zag for signed types), lengths and counts are unsigned
// varints, byte strings (keys, payloads) are raw bytes after their length:
// records are the hot path and are never re-encoded as text. Flags are one
// byte, 0 or 1. Optional values (AlterTopic's pointer fields, a reply's
// error, ReplayResult.Message) are a flag byte followed by the value when
// present, so a nil pointer stays nil and a pointer to 0 stays a pointer
// to 0. Tagged values (a forwarded request, a reply's result) are a type
// number followed by the value. A RaftMessage is its protobuf encoding
// (deterministic marshalling), length-prefixed.
//
// # Invariants
//
//   - Bounds on both sides: on encode, a length or count over its bound is
//     a bug of the sender and panics through assert, naming the bound (the
//     one exception is error text, cut at ErrorMessageBytesMax). On decode
//     it returns ErrTooLarge, and nothing of a claimed size is allocated
//     before the claim is checked against its bound and against the bytes
//     present.
//   - Strict decoding: DecodeEnvelope refuses another version, an unknown
//     type number, a truncated input, trailing bytes, a non-minimal varint,
//     a flag byte other than 0 or 1, an unknown error code or ack action.
//     Every input it accepts is therefore exactly the encoding of the value
//     it decodes to, except inside a RaftMessage, whose bytes are
//     protobuf's. Decoding never panics.
//   - Decoded values own their memory: nothing aliases the input. The byte
//     slices of one envelope (keys, payloads) share one allocation, so
//     one of them kept alive keeps all of them; a caller that retains a
//     key or payload long after the envelope is handled should copy it.
//
// # Canonical values
//
// A decoded value equals the encoded one (reflect.DeepEqual; proto.Equal
// for the Raft message, which protobuf decodes into a new raftpb.Message)
// when the encoded one was canonical:
//
//   - Empty byte slices and empty lists decode as nil, except the lists
//     that the HTTP API prints as JSON arrays, which decode as empty
//     non-nil slices, so that a forwarded reply encodes to the same HTTP
//     body as a local one: ConsumeResult.Messages, TopicPage.Topics,
//     TopicDetail.PartitionStats, MembersResult.Members and
//     MovesResult.Moves.
//   - A non-nil error (Reply.Err, AckItemResult.Err) decodes as a
//     *msg.Error. An error that is not a *msg.Error is encoded as
//     CodeInternal with its text (what msg.CodeOf makes of it), and a
//     text over ErrorMessageBytesMax is cut.
//
// # Inputs and outputs
//
// EncodeEnvelope takes a msg.Envelope whose message, request and result
// are the value types msg defines (not pointers to them) and returns
// ErrUnknownType for anything else. DecodeEnvelope and ReadFrame take
// untrusted bytes and return a value or an error wrapping ErrMalformed,
// ErrTooLarge, ErrUnknownType or ErrVersion. The package has no state, no
// goroutines and no clock.
package wire
