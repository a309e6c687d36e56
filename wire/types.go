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

// Peer messages: msg.Envelope.Message.
const (
	typeRaftMessage    typeNumber = 1  // msg.RaftMessage
	typeForwardRequest typeNumber = 2  // msg.ForwardRequest
	typeForwardReply   typeNumber = 3  // msg.ForwardReply
	typeSubscribe      typeNumber = 4  // msg.Subscribe
	typeNotify         typeNumber = 5  // msg.Notify
	typeJoin           typeNumber = 6  // msg.Join
	typeJoinRelay      typeNumber = 7  // msg.JoinRelay
	typeJoinAccepted   typeNumber = 8  // msg.JoinAccepted
	typeHeartbeat      typeNumber = 9  // msg.Heartbeat
	typeForwardCancel  typeNumber = 10 // msg.ForwardCancel
	typeRetired        typeNumber = 11 // msg.Retired
)

// Requests: msg.ForwardRequest.Request.
const (
	typeCreateTopic typeNumber = 16 // msg.CreateTopic
	typeListTopics  typeNumber = 17 // msg.ListTopics
	typeGetTopic    typeNumber = 18 // msg.GetTopic
	typeAlterTopic  typeNumber = 19 // msg.AlterTopic
	typeDeleteTopic typeNumber = 20 // msg.DeleteTopic
	typeProduce     typeNumber = 21 // msg.Produce
	typeConsume     typeNumber = 22 // msg.Consume
	typeReplay      typeNumber = 23 // msg.Replay
	typeAck         typeNumber = 24 // msg.Ack
	typeListMembers typeNumber = 25 // msg.ListMembers
	typeListMoves   typeNumber = 26 // msg.ListMoves
	// The move protocol (msg/move.go).
	typeMoveStatus     typeNumber = 27 // msg.MoveStatus
	typeMoveRead       typeNumber = 28 // msg.MoveRead
	typeMoveFreeze     typeNumber = 29 // msg.MoveFreeze
	typeMoveSweepCheck typeNumber = 30 // msg.MoveSweepCheck
	typeDecommission   typeNumber = 31 // msg.Decommission
	// Fan-out.
	typeAttachChild  typeNumber = 32 // msg.AttachChild
	typeDetachChild  typeNumber = 33 // msg.DetachChild
	typeListChildren typeNumber = 34 // msg.ListChildren
)

// Results: msg.Reply.Result.
const (
	typeNoResult      typeNumber = 48 // nil (DeleteTopic, and every failed request)
	typeTopicInfo     typeNumber = 49 // msg.TopicInfo
	typeTopicPage     typeNumber = 50 // msg.TopicPage
	typeTopicDetail   typeNumber = 51 // msg.TopicDetail
	typeProduceResult typeNumber = 52 // msg.ProduceResult
	typeConsumeResult typeNumber = 53 // msg.ConsumeResult
	typeReplayResult  typeNumber = 54 // msg.ReplayResult
	typeAckResult     typeNumber = 55 // msg.AckResult
	typeMembersResult typeNumber = 56 // msg.MembersResult
	typeMovesResult   typeNumber = 57 // msg.MovesResult
	// The move protocol (msg/move.go).
	typeMoveSourceState typeNumber = 58 // msg.MoveSourceState
	typeMoveChunk       typeNumber = 59 // msg.MoveChunk
	typeMoveVerdict     typeNumber = 60 // msg.MoveVerdict
	// Fan-out.
	typeChildrenResult typeNumber = 61 // msg.ChildrenResult
)
