package wiretest

import (
	"bytes"
	"fmt"
	"math"
	"strings"

	"go.etcd.io/raft/v3/raftpb"
	"google.golang.org/protobuf/proto"

	"narad/msg"
)

// Sample is a named envelope for table tests and fuzz seed corpora.
type Sample struct {
	Name     string
	Envelope msg.Envelope
}

// Sizes at the bounds of wire, restated here (wiretest does not import
// wire; wire's tests check that these agree with its constants).
const (
	NodeIDBytesMax        = 64
	ReceiptHandleBytesMax = 64
	ErrorMessageBytesMax  = 4 << 10
	AddressBytesMax       = 1 << 10
	LabelBytesMax         = 64
	SchemaBytesMax        = 256 << 10
)

// Samples returns canonical envelopes covering every peer message type,
// every request type and every result type, with edge values: zero and
// extreme integers, empty and maximum-size strings, keys and payloads,
// full lists, nil and non-nil optional values, and errors of every code.
// Every sample round-trips exactly. Some are megabytes long (a maximum
// payload, a full consume batch); callers that need small inputs filter by
// encoded size.
func Samples() []Sample {
	var samples []Sample
	samples = append(samples, messageSamples()...)
	for _, r := range requestSamples() {
		samples = append(samples, Sample{"ForwardRequest/" + r.Name, forward(r.Request)})
	}
	for _, r := range resultSamples() {
		samples = append(samples, Sample{"ForwardReply/" + r.Name, reply(msg.Reply{ID: 7, Result: r.Result})})
	}
	for code := msg.CodeInvalid; code <= msg.CodeForbidden; code++ {
		err := &msg.Error{Code: code, Message: fmt.Sprintf("failed with code %d", code)}
		samples = append(samples, Sample{fmt.Sprintf("ForwardReply/error/code-%d", code), reply(msg.Reply{ID: 8, Err: err})})
	}
	return samples
}

// NamedRequest is a named request sample.
type NamedRequest struct {
	Name    string
	Request msg.Request
}

// NamedResult is a named result sample; Result nil is DeleteTopic's.
type NamedResult struct {
	Name   string
	Result msg.Result
}

func forward(request msg.Request) msg.Envelope {
	return msg.Envelope{From: "node-1", To: "node-2", Message: msg.ForwardRequest{ID: 42, Request: request, LocalOnly: true}}
}

func reply(r msg.Reply) msg.Envelope {
	return msg.Envelope{From: "node-2", To: "node-1", Message: msg.ForwardReply{ID: 42, Reply: r}}
}

func messageSamples() []Sample {
	return []Sample{
		{"RaftMessage/empty", msg.Envelope{From: "a", To: "b", Message: msg.RaftMessage{Message: &raftpb.Message{}}}},
		{"RaftMessage/append", msg.Envelope{From: "a", To: "b", Message: RaftAppendSample()}},
		{"RaftMessage/snapshot", msg.Envelope{From: "a", To: "b", Message: raftSnapshotSample()}},
		{"ForwardRequest/zero", msg.Envelope{Message: msg.ForwardRequest{Request: msg.ListMembers{}}}},
		{"ForwardRequest/max-id", msg.Envelope{From: strings.Repeat("f", NodeIDBytesMax), To: strings.Repeat("t", NodeIDBytesMax),
			Message: msg.ForwardRequest{ID: math.MaxUint64, Request: msg.ListMoves{}, LocalOnly: true}}},
		{"ForwardReply/zero", msg.Envelope{Message: msg.ForwardReply{}}},
		{"ForwardReply/max-ids", msg.Envelope{Message: msg.ForwardReply{ID: math.MaxUint64, Reply: msg.Reply{ID: math.MaxUint64}}}},
		{"ForwardReply/error-and-result", reply(msg.Reply{Err: msg.Gone("stale"), Result: msg.ReplayResult{}})},
		{"ForwardReply/error-empty-message", reply(msg.Reply{Err: &msg.Error{Code: msg.CodeInternal}})},
		{"ForwardReply/error-max-message", reply(msg.Reply{Err: msg.Invalid("%s", strings.Repeat("é", ErrorMessageBytesMax/2))})},
		{"Subscribe/zero", msg.Envelope{Message: msg.Subscribe{}}},
		{"Subscribe/max", msg.Envelope{From: "a", To: "b", Message: msg.Subscribe{Topic: MaxTopic(), ForMs: math.MaxInt64}}},
		{"Subscribe/min", msg.Envelope{From: "a", To: "b", Message: msg.Subscribe{Topic: "t", ForMs: math.MinInt64}}},
		{"Notify/zero", msg.Envelope{Message: msg.Notify{}}},
		{"ForwardCancel/zero", msg.Envelope{Message: msg.ForwardCancel{}}},
		{"Retired", msg.Envelope{From: "a", To: "b", Message: msg.Retired{}}},
		{"ForwardCancel/max-id", msg.Envelope{From: "a", To: "b", Message: msg.ForwardCancel{ID: math.MaxUint64}}},
		{"Join/zero", msg.Envelope{Message: msg.Join{}}},
		{"Join/max", msg.Envelope{From: "a", To: "b", Message: msg.Join{RaftID: math.MaxUint64, ClusterAddr: MaxAddress(), HTTPAddr: MaxAddress()}}},
		{"JoinRelay/zero", msg.Envelope{Message: msg.JoinRelay{}}},
		{"JoinAccepted/zero", msg.Envelope{Message: msg.JoinAccepted{Voters: []msg.PeerAddress{}}}},
		{"JoinAccepted/max", msg.Envelope{From: "a", To: "b", Message: msg.JoinAccepted{Voters: []msg.PeerAddress{
			{ID: MaxNodeID(), RaftID: math.MaxUint64, ClusterAddr: MaxAddress()}, {}}}}},
		{"JoinRelay/max", msg.Envelope{From: "a", To: "b", Message: msg.JoinRelay{NodeID: MaxNodeID(),
			Join: msg.Join{RaftID: math.MaxUint64, ClusterAddr: MaxAddress(), HTTPAddr: MaxAddress()}}}},
		{"Notify/max", msg.Envelope{From: "a", To: "b", Message: msg.Notify{Topic: MaxTopic()}}},
		{"Heartbeat/zero", msg.Envelope{Message: msg.Heartbeat{}}},
		{"Heartbeat/max", msg.Envelope{From: "a", To: "b", Message: msg.Heartbeat{HTTPAddr: MaxAddress(), ClusterAddr: MaxAddress(), NowMs: math.MaxInt64, Incarnation: math.MaxUint64, DiskLow: true, DataID: MaxNodeID()}}},
		{"Heartbeat/min", msg.Envelope{From: "a", To: "b", Message: msg.Heartbeat{HTTPAddr: "h", ClusterAddr: "c", NowMs: math.MinInt64}}},
	}
}

// MaxTopic is a topic name of msg.TopicNameBytesMax bytes.
func MaxTopic() string { return strings.Repeat("t", msg.TopicNameBytesMax) }

// MaxNodeID is a node id of NodeIDBytesMax bytes.
func MaxNodeID() string { return strings.Repeat("n", NodeIDBytesMax) }

// MaxAddress is an address of AddressBytesMax bytes.
func MaxAddress() string { return strings.Repeat("a", AddressBytesMax) }

// MaxHandle is a receipt handle of ReceiptHandleBytesMax bytes.
func MaxHandle() string { return strings.Repeat("9", ReceiptHandleBytesMax) }

// RaftAppendSample is a Raft append message with entries and a nested
// response, every field set.
func RaftAppendSample() msg.RaftMessage {
	return msg.RaftMessage{Message: &raftpb.Message{
		Type:       raftpb.MessageType_MsgApp.Enum(),
		To:         proto.Uint64(2),
		From:       proto.Uint64(1),
		Term:       proto.Uint64(math.MaxUint64),
		LogTerm:    proto.Uint64(0),
		Index:      proto.Uint64(100),
		Entries:    []*raftpb.Entry{{Term: proto.Uint64(5), Index: proto.Uint64(101), Data: []byte("entry")}, {Type: raftpb.EntryType_EntryConfChangeV2.Enum()}},
		Commit:     proto.Uint64(99),
		Vote:       proto.Uint64(1),
		Reject:     proto.Bool(false),
		RejectHint: proto.Uint64(7),
		Context:    []byte{},
	}}
}

func raftSnapshotSample() msg.RaftMessage {
	return msg.RaftMessage{Message: &raftpb.Message{
		Type: raftpb.MessageType_MsgSnap.Enum(),
		Snapshot: &raftpb.Snapshot{Data: bytes.Repeat([]byte{0xab}, 1000), Metadata: &raftpb.SnapshotMetadata{
			ConfState: &raftpb.ConfState{Voters: []uint64{1, 2, 3}, Learners: []uint64{4}},
			Index:     proto.Uint64(1 << 40), Term: proto.Uint64(3),
		}},
	}}
}
