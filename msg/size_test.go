package msg

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"
)

// PayloadBytes counts the bulk of each kind of envelope that carries some
// (every list of an answer or an ack too, at its elements' fixed size plus
// their strings), and nothing for the others.
func TestPayloadBytes(t *testing.T) {
	produce := Produce{Topic: "t", Records: []ProduceRecord{{Key: []byte("kk"), Payload: []byte("12345")}, {Payload: []byte("678")}}}
	consumed := ConsumeResult{Messages: []Message{{Key: []byte("k"), Payload: []byte("abcd")}, {Payload: []byte("ef")}}}
	raft := &raftpb.Message{Entries: []*raftpb.Entry{{Data: []byte("123")}, {Data: []byte("4567")}}, Snapshot: &raftpb.Snapshot{Data: []byte("snap")}}
	for _, c := range []struct {
		message PeerMessage
		want    int64
	}{
		{ForwardRequest{ID: 1, Request: produce}, 10 + 2*produceRecordFixedBytes},
		{ForwardRequest{ID: 1, Request: Produce{Topic: "t", Records: make([]ProduceRecord, ProduceBatchRecordsMax)}},
			ProduceBatchRecordsMax * produceRecordFixedBytes},
		{ForwardRequest{ID: 1, Request: Produce{Topic: "dlq", Records: []ProduceRecord{{Payload: []byte("p"),
			Origin: &DeadLetterOrigin{Topic: "orders"}}}}}, 1 + produceRecordFixedBytes + 6 + deadLetterOriginFixedBytes},
		{ForwardRequest{ID: 1, Request: CreateTopic{Name: "t", Schema: []byte(`{"type":"object"}`)}}, 17},
		{ForwardRequest{ID: 1, Request: Consume{Topic: "t"}}, 0},
		{ForwardReply{ID: 1, Reply: Reply{Result: consumed}}, 7 + 2*messageFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: ReplayResult{Message: &Message{Payload: []byte("xyz")}}}}, 3 + messageFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: ReplayResult{}}}, 0},
		{ForwardReply{ID: 1, Reply: Reply{Result: MoveChunk{Data: make([]byte, 100)}}}, 100},
		{ForwardReply{ID: 1, Reply: Reply{Result: MoveSourceState{Leases: make([]MoveLease, 1000), Segments: make([]MoveSegment, 2),
			CorruptOffsets: []uint64{7}, Cursors: []FanoutCursor{{Child: "child"}}}}}, 1000*13 + 2*17 + 8 + 5 + 16},
		{RaftMessage{Message: raft}, 11},
		{RaftMessage{}, 0},
		{Heartbeat{NowMs: 1}, 0},
		{ForwardRequest{ID: 1, Request: Ack{Topic: "t", Handles: []string{"h1", "h22"}}}, 5},
		{ForwardReply{ID: 1, Reply: Reply{Result: ConsumeResult{Messages: []Message{{ReceiptHandle: "rh"}}}}}, 2 + messageFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: ProduceResult{Records: make([]Placement, 1000)}}}, 1000 * placementBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: AckResult{Results: []AckItemResult{{Handle: "abc"}}}}}, 3 + ackOutcomeFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: TopicDetail{TopicInfo: TopicInfo{Name: "t"}, PartitionStats: make([]PartitionStats, 4096)}}},
			1 + topicFixedBytes + 4096*partitionStatsFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: TopicPage{Topics: []TopicInfo{{Name: "ab", Children: []string{"c"}}}}}}, 3 + topicFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: MembersResult{Members: []Member{{ID: "n1", Addr: "h:1", Status: "alive"}}}}}, 10 + memberFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: MovesResult{Moves: []Move{{Topic: "t", From: "n1", To: "n2", Phase: "copy"}}}}}, 9 + moveFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: ChildrenResult{Children: []ChildLag{{Name: "kid"}}}}}, 3 + childLagFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: TopicInfo{Name: "p", Children: []string{"c1", "c2"}}}}, 5 + topicFixedBytes},
		{ForwardReply{ID: 1, Reply: Reply{Result: MoveVerdict{}}}, 0},
	} {
		require.Equal(t, c.want, PayloadBytes(Envelope{From: "a", To: "b", Message: c.message}), "%T %+v", c.message, c.message)
	}
}
