package msg

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// PayloadBytes counts the bulk of each kind of envelope that carries some,
// and nothing for the others.
func TestPayloadBytes(t *testing.T) {
	produce := Produce{Topic: "t", Records: []ProduceRecord{{Key: []byte("kk"), Payload: []byte("12345")}, {Payload: []byte("678")}}}
	consumed := ConsumeResult{Messages: []Message{{Key: []byte("k"), Payload: []byte("abcd")}, {Payload: []byte("ef")}}}
	raft := &raftpb.Message{Entries: []*raftpb.Entry{{Data: []byte("123")}, {Data: []byte("4567")}}, Snapshot: &raftpb.Snapshot{Data: []byte("snap")}}
	for _, c := range []struct {
		message PeerMessage
		want    int64
	}{
		{ForwardRequest{ID: 1, Request: produce}, 10},
		{ForwardRequest{ID: 1, Request: CreateTopic{Name: "t", Schema: []byte(`{"type":"object"}`)}}, 17},
		{ForwardRequest{ID: 1, Request: Consume{Topic: "t"}}, 0},
		{ForwardReply{ID: 1, Reply: Reply{Result: consumed}}, 7},
		{ForwardReply{ID: 1, Reply: Reply{Result: ReplayResult{Message: &Message{Payload: []byte("xyz")}}}}, 3},
		{ForwardReply{ID: 1, Reply: Reply{Result: ReplayResult{}}}, 0},
		{ForwardReply{ID: 1, Reply: Reply{Result: MoveChunk{Data: make([]byte, 100)}}}, 100},
		{ForwardReply{ID: 1, Reply: Reply{Result: MoveSourceState{Leases: make([]MoveLease, 1000), Segments: make([]MoveSegment, 2),
			CorruptOffsets: []uint64{7}, Cursors: []FanoutCursor{{Child: "child"}}}}}, 1000*13 + 2*17 + 8 + 5 + 16},
		{RaftMessage{Message: raft}, 11},
		{RaftMessage{}, 0},
		{Heartbeat{NowMs: 1}, 0},
	} {
		require.Equal(t, c.want, PayloadBytes(Envelope{From: "a", To: "b", Message: c.message}), "%T %+v", c.message, c.message)
	}
}
