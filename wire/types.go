package wire

// typeNumber identifies the Go type of a tagged value on the wire: the
// message of an envelope, the request of a ForwardRequest, the result of a
// Reply. One number space covers all three; a decoder accepts in each
// place only the numbers of that place and returns ErrUnknownType for any
// other.
//
// The table is append-only. A number, once assigned, names that type for
// as long as Version stays the same: it is never reused for another type,
// never renumbered, and a removed type leaves its number retired (comment
// it out, do not delete it). New types take the next free number of their
// range. Ranges: peer messages 1-15, requests 16-47, results 48-95.
type typeNumber uint64

// Peer messages: node.Envelope.Message.
const (
	typeRaftMessage    typeNumber = 1 // node.RaftMessage
	typeForwardRequest typeNumber = 2 // node.ForwardRequest
	typeForwardReply   typeNumber = 3 // node.ForwardReply
	typeSubscribe      typeNumber = 4 // node.Subscribe
	typeNotify         typeNumber = 5 // node.Notify
	typeJoin           typeNumber = 6 // node.Join
	typeJoinRelay      typeNumber = 7 // node.JoinRelay
	typeJoinAccepted   typeNumber = 8 // node.JoinAccepted
)

// Requests: node.ForwardRequest.Request.
const (
	typeCreateTopic typeNumber = 16 // node.CreateTopic
	typeListTopics  typeNumber = 17 // node.ListTopics
	typeGetTopic    typeNumber = 18 // node.GetTopic
	typeAlterTopic  typeNumber = 19 // node.AlterTopic
	typeDeleteTopic typeNumber = 20 // node.DeleteTopic
	typeProduce     typeNumber = 21 // node.Produce
	typeConsume     typeNumber = 22 // node.Consume
	typeReplay      typeNumber = 23 // node.Replay
	typeAck         typeNumber = 24 // node.Ack
	typeListMembers typeNumber = 25 // node.ListMembers
	typeListMoves   typeNumber = 26 // node.ListMoves
	// The move protocol (node/move_messages.go).
	typeMoveStatus     typeNumber = 27 // node.MoveStatus
	typeMoveRead       typeNumber = 28 // node.MoveRead
	typeMoveFreeze     typeNumber = 29 // node.MoveFreeze
	typeMoveSweepCheck typeNumber = 30 // node.MoveSweepCheck
	typeDecommission   typeNumber = 31 // node.Decommission
)

// Results: node.Reply.Result.
const (
	typeNoResult      typeNumber = 48 // nil (DeleteTopic, and every failed request)
	typeTopicInfo     typeNumber = 49 // node.TopicInfo
	typeTopicPage     typeNumber = 50 // node.TopicPage
	typeTopicDetail   typeNumber = 51 // node.TopicDetail
	typeProduceResult typeNumber = 52 // node.ProduceResult
	typeConsumeResult typeNumber = 53 // node.ConsumeResult
	typeReplayResult  typeNumber = 54 // node.ReplayResult
	typeAckResult     typeNumber = 55 // node.AckResult
	typeMembersResult typeNumber = 56 // node.MembersResult
	typeMovesResult   typeNumber = 57 // node.MovesResult
	// The move protocol (node/move_messages.go).
	typeMoveSourceState typeNumber = 58 // node.MoveSourceState
	typeMoveChunk       typeNumber = 59 // node.MoveChunk
	typeMoveVerdict     typeNumber = 60 // node.MoveVerdict
)
