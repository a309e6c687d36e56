package wire

import (
	"encoding/binary"

	"narad/msg"
)

// Version is the version of the envelope and frame formats. A decoder
// refuses any other version with ErrVersion; a change of format that an
// older node cannot read takes a new version.
const Version = 20 // 2: Member carries Voter; 3: topics carry a JSON Schema, MoveStatus names its move; 4: CreateTopic carries its creator; 5: dead letters, and a frozen source's queue state; 6: topics carry fan-out links, and a frozen source its fan-out cursors; 7: the peer ack action Return (a probe's record handed back uncounted); 8: a heartbeat carries its node's incarnation; 9: topic changes carry the owner their caller was checked against; 10: a frozen source's queue state marks records handed back unseen, a produce carries its fan-out epoch, and a topic's creation its creator's creation time; 11: a produce part carries its schema id and the identity of the topic it was placed for, and a member the moves into it; 12: MoveRead names its move, and the move requests the creation of their topic; 13: ForwardCancel and Retired; 14: a heartbeat and a listed member carry DiskLow; 15: a heartbeat carries its node's data directory id; 16: GetTopic carries Confirm (a node's question to the metastore leader); 17: the metastore's commands are written as version 2 (bound to their term), which a node of 16 cannot apply: it would stop at the first, so the peers of a mixed cluster are refused at connect instead; 18: an alter of a topic carries same_schema_kept (the latest schema sent again makes no version), which a node of 17 cannot decode; 19: an attach of a fan-out child, and a create with a parent, carry same_schema_attached (the child's schema compared with its parent's once parsed), and a user's create name_fold_checked (no two users' names differ only in case), which a node of 18 cannot decode; 20: a forwarded consume or replay carries the identity of the topic it was routed for, which a node of 19 cannot decode

// Bounds of the codec, checked on decode (an input over a bound returns
// ErrTooLarge before anything of the claimed size is allocated) and
// asserted on encode (a value over a bound is a bug of the sender). The
// bounds of client-facing values are the node's own limits, so anything
// the node accepts can be forwarded; the rest are generous caps on values
// the cluster produces itself.
const (
	// NodeIDBytesMax bounds Envelope.From and To and every node id in a
	// request or result (TopicInfo.Owner, PartitionStats.OwnerNode,
	// Member.ID, Move.From and Move.To, MoveFreeze.Target,
	// Decommission.ID, MoveVerdict.Owner and Target). 64 is the longest
	// Linux host name, the default node id. It also bounds the user names
	// TopicInfo.Owner, CreateTopic.CreatedBy and the ExpectedOwner of topic
	// changes, at most 64 bytes too.
	NodeIDBytesMax = 64
	// TopicNameBytesMax bounds every topic name.
	TopicNameBytesMax = msg.TopicNameBytesMax
	// PageTokenBytesMax bounds ListTopics.PageToken and
	// TopicPage.NextPageToken: a page token is the last topic name of the
	// previous page, so a longer one can name no topic.
	PageTokenBytesMax = msg.TopicNameBytesMax
	// ReceiptHandleBytesMax bounds a receipt handle; the longest handle the
	// node formats is 49 bytes.
	ReceiptHandleBytesMax = 64
	// ErrorMessageBytesMax bounds the text of an error. It is the one bound
	// not asserted on encode: error text may quote input or wrap an error
	// from the operating system, so a longer text is cut at this bound
	// (at a UTF-8 boundary, ending with errorMessageCutSuffix).
	ErrorMessageBytesMax = 4 << 10
	// AddressBytesMax bounds Member.Addr (a host name of up to 253 bytes
	// and a port, with room to spare).
	AddressBytesMax = 1 << 10
	// LabelBytesMax bounds the short enumeration strings Member.Status and
	// Move.Phase.
	LabelBytesMax = 64
	// KeyBytesMax bounds the key of one record or message.
	KeyBytesMax = msg.KeyBytesMax
	// PayloadBytesMax bounds the payload of one record or message.
	PayloadBytesMax = msg.MessageBytesMax
	// SchemaBytesMax bounds the JSON Schema of CreateTopic and AlterTopic.
	SchemaBytesMax = msg.SchemaBytesMax
	// RecordsMax bounds Produce.Records and ProduceResult.Records.
	RecordsMax = msg.ProduceBatchRecordsMax
	// MessagesMax bounds ConsumeResult.Messages.
	MessagesMax = msg.ConsumeBatchMax
	// HandlesMax bounds Ack.Handles and AckResult.Results.
	HandlesMax = msg.AckBatchHandlesMax
	// TopicsMax bounds TopicPage.Topics.
	TopicsMax = msg.TopicsPageMax
	// PartitionStatsMax bounds TopicDetail.PartitionStats (the node's
	// configurable partition maximum defaults to 108).
	PartitionStatsMax = 1 << 16
	// ChildrenMax bounds TopicInfo.Children, ChildrenResult.Children and
	// MoveSourceState.Cursors.
	ChildrenMax = msg.FanoutChildrenMax
	// MembersMax bounds MembersResult.Members.
	MembersMax = 1 << 12
	// MovesMax bounds MovesResult.Moves.
	MovesMax = 1 << 12
	// ChunkBytesMax bounds MoveChunk.Data. A chunk is at most the source
	// log's storage.LogConfig.ChunkBytesMax, which storage's Validate caps
	// at 64 MiB (default 1 MiB); this bound is that cap, so a chunk of any
	// valid log config can be sent. bounds_test.go checks that storage
	// refuses a larger chunk size.
	ChunkBytesMax = 64 << 20
	// SegmentsMax bounds MoveSourceState.Segments, the retained segments of
	// one partition. Storage does not bound their count; 1 << 20 segments
	// is 4 GiB of partition at the smallest segment size storage accepts
	// (4 KiB) and 64 TiB at the default (64 MiB), and their list encodes in
	// about 21 MiB, well within a frame. A source with more segments must
	// not send them in one state (encoding panics).
	SegmentsMax = 1 << 20
	// LeasesMax bounds MoveSourceState.Leases (msg.MoveLeasesMax: a
	// partition's in-flight and acked-ahead caps); their list encodes in
	// at most 32 MiB, which fits a frame beside the largest segment list.
	LeasesMax = msg.MoveLeasesMax
	// CorruptOffsetsMax bounds MoveSourceState.CorruptOffsets: the source
	// lists at most its log's CorruptOffsetsReportedMax, which storage's
	// Validate caps at 1 << 20 (default 64); bounds_test.go checks that
	// storage refuses a larger one. The list encodes in at most 10 MiB.
	CorruptOffsetsMax = 1 << 20

	// FrameBytesMax bounds one encoded envelope, which is one frame's
	// payload. It must hold the largest message the node may legally send:
	// a forwarded consume reply of MessagesMax messages, each with a
	// payload of PayloadBytesMax and a key of KeyBytesMax (about 100 MiB).
	// A move chunk of ChunkBytesMax (64 MiB), a batch produce
	// (msg.ProduceBatchBytesMax of payload plus keys, about 12 MiB) and
	// every other message are smaller. bounds_test.go encodes each worst
	// case and checks that it fits.
	FrameBytesMax = MessagesMax*consumedMessageBytesMax + frameSlackBytes
	// RaftMessageBytesMax bounds the protobuf encoding of one Raft
	// message: what is left of a frame after the envelope header.
	RaftMessageBytesMax = FrameBytesMax - envelopeHeaderBytesMax

	// consumedMessageBytesMax is the largest encoding of one msg.Message:
	// its variable-length fields at their bounds (the dead-letter origin
	// names a second topic), plus at most binary.MaxVarintLen64 bytes for
	// each of its thirteen length prefixes, integers and flags.
	consumedMessageBytesMax = 2*TopicNameBytesMax + KeyBytesMax + PayloadBytesMax +
		ReceiptHandleBytesMax + consumedMessageFieldsBytesMax
	consumedMessageFieldsBytesMax = 13 * binary.MaxVarintLen64
	// frameSlackBytes covers what surrounds the messages of a consume
	// reply: the envelope header, the forward and reply ids, the result tag
	// and the message count.
	frameSlackBytes = 64 << 10
	// envelopeHeaderBytesMax is the longest envelope header: the version
	// byte, two node ids with their lengths, and the type number.
	envelopeHeaderBytesMax = 1 + 2*(binary.MaxVarintLen64+NodeIDBytesMax) + binary.MaxVarintLen64
	// raftRecursionDepthMax bounds the nesting of a decoded Raft message
	// (Message.Responses holds Messages). Peers send no responses at all;
	// the bound keeps a hostile input from recursing deeply.
	raftRecursionDepthMax = 16
	// RaftEntriesMax bounds the entries of one Raft message. protobuf
	// decodes an entry of two bytes on the wire into about 140 bytes of
	// heap, so without a count a frame of RaftMessageBytesMax could make a
	// node allocate about 7 GiB; at this bound a message's entries hold at
	// most about 20 MiB. An append carries at most meta's MaxSizePerMsg (1
	// MiB) of entries, each a command of tens of bytes at least (the empty
	// entries of an election are one per term), so no legal message comes
	// near it.
	RaftEntriesMax = 1 << 17
	// RaftConfStateIDsMax bounds the raft ids a Raft message's snapshot
	// lists in its ConfState (voters, learners, outgoing voters, next
	// learners, over every occurrence, which protobuf merges): each costs
	// one byte on the wire and eight on the heap, plus append's regrowth.
	// The metastore learns at most 4,096 voters, so four full lists fit.
	RaftConfStateIDsMax = 1 << 14
)

// limit names a bound, so that an assertion or a decode error says which
// bound a value broke.
type limit struct {
	name string
	max  int
}

// The limits of every length and count the codec checks.
var (
	frameLimit          = limit{"FrameBytesMax", FrameBytesMax}
	nodeIDLimit         = limit{"NodeIDBytesMax", NodeIDBytesMax}
	topicNameLimit      = limit{"TopicNameBytesMax", TopicNameBytesMax}
	pageTokenLimit      = limit{"PageTokenBytesMax", PageTokenBytesMax}
	receiptHandleLimit  = limit{"ReceiptHandleBytesMax", ReceiptHandleBytesMax}
	errorMessageLimit   = limit{"ErrorMessageBytesMax", ErrorMessageBytesMax}
	addressLimit        = limit{"AddressBytesMax", AddressBytesMax}
	labelLimit          = limit{"LabelBytesMax", LabelBytesMax}
	keyLimit            = limit{"KeyBytesMax", KeyBytesMax}
	payloadLimit        = limit{"PayloadBytesMax", PayloadBytesMax}
	schemaLimit         = limit{"SchemaBytesMax", SchemaBytesMax}
	raftMessageLimit    = limit{"RaftMessageBytesMax", RaftMessageBytesMax}
	recordsLimit        = limit{"RecordsMax", RecordsMax}
	messagesLimit       = limit{"MessagesMax", MessagesMax}
	handlesLimit        = limit{"HandlesMax", HandlesMax}
	topicsLimit         = limit{"TopicsMax", TopicsMax}
	partitionStatsLimit = limit{"PartitionStatsMax", PartitionStatsMax}
	membersLimit        = limit{"MembersMax", MembersMax}
	childrenLimit       = limit{"ChildrenMax", ChildrenMax}
	movesLimit          = limit{"MovesMax", MovesMax}
	chunkLimit          = limit{"ChunkBytesMax", ChunkBytesMax}
	segmentsLimit       = limit{"SegmentsMax", SegmentsMax}
	leasesLimit         = limit{"LeasesMax", LeasesMax}
	corruptOffsetsLimit = limit{"CorruptOffsetsMax", CorruptOffsetsMax}
)

// The smallest encoding of one element of each list: every field at its
// shortest (an empty string or a one-byte varint). A count that claims
// more elements than the bytes left could hold is refused before the list
// is allocated. bounds_test.go checks each against a zero-value element.
const (
	produceRecordBytesMin   = 4  // key length, partition, payload length, origin flag
	receiptHandleBytesMin   = 1  // length
	topicInfoBytesMin       = 16 // sixteen one-byte fields
	childNameBytesMin       = 1  // length
	childLagBytesMin        = 4  // four one-byte fields
	fanoutCursorBytesMin    = 3  // child length, epoch, next offset
	partitionStatsBytesMin  = 11 // eleven one-byte fields
	placementBytesMin       = 2  // partition, offset
	consumedMessageBytesMin = 9  // nine one-byte fields (no dead-letter origin)
	ackItemBytesMin         = 2  // handle length, error flag
	memberBytesMin          = 9  // nine one-byte fields
	moveBytesMin            = 8  // eight one-byte fields
	moveSegmentBytesMin     = 3  // base, size, sealed flag
	moveLeaseBytesMin       = 3  // offset, delivery count, returned unseen
	corruptOffsetBytesMin   = 1  // offset
	peerAddressBytesMin     = 3  // id length, raft id, address length
)
