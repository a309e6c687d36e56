package wire

import (
	"encoding/binary"

	"narad/msg"
)

// result writes the type number and fields of a reply's result.
func (e *encoder) result(result msg.Result) {
	switch r := result.(type) {
	case nil:
		e.typeNumber(typeNoResult)
	case msg.TopicInfo:
		e.typeNumber(typeTopicInfo)
		e.topicInfo(&r)
	case msg.TopicPage:
		e.typeNumber(typeTopicPage)
		e.topicPage(r)
	case msg.TopicDetail:
		e.typeNumber(typeTopicDetail)
		e.topicDetail(&r)
	case msg.ProduceResult:
		e.typeNumber(typeProduceResult)
		e.produceResult(r)
	case msg.ChildrenResult:
		e.typeNumber(typeChildrenResult)
		e.childrenResult(r)
	default:
		e.dataResult(result)
	}
}

// dataResult writes the results of the data path and the cluster
// listings (split from result to keep each switch short).
func (e *encoder) dataResult(result msg.Result) {
	switch r := result.(type) {
	case msg.ConsumeResult:
		e.typeNumber(typeConsumeResult)
		e.consumeResult(r)
	case msg.ReplayResult:
		e.typeNumber(typeReplayResult)
		e.replayResult(r)
	case msg.AckResult:
		e.typeNumber(typeAckResult)
		e.ackResult(r)
	case msg.MembersResult:
		e.typeNumber(typeMembersResult)
		e.membersResult(r)
	case msg.MovesResult:
		e.typeNumber(typeMovesResult)
		e.movesResult(r)
	default:
		e.moveResult(result)
	}
}

// result reads the type number and fields of a reply's result.
func (d *decoder) result() msg.Result {
	switch t := d.typeNumber(); t {
	case typeNoResult:
		return nil
	case typeTopicInfo:
		return d.topicInfo()
	case typeTopicPage:
		return d.topicPage()
	case typeTopicDetail:
		return msg.TopicDetail{TopicInfo: d.topicInfo(), PartitionStats: d.partitionStatsList()}
	case typeProduceResult:
		return d.produceResult()
	case typeChildrenResult:
		return d.childrenResult()
	case typeConsumeResult:
		return d.consumeResult()
	case typeReplayResult:
		return d.replayResult()
	case typeAckResult:
		return d.ackResult()
	case typeMembersResult:
		return msg.MembersResult{Members: d.members()}
	case typeMovesResult:
		return msg.MovesResult{Moves: d.moves()}
	default:
		return d.moveResult(t)
	}
}

func (e *encoder) topicInfo(r *msg.TopicInfo) {
	e.string(r.Name, topicNameLimit)
	e.int(r.Partitions)
	e.varint(r.RetentionMs)
	e.varint(r.VisibilityTimeoutMs)
	e.int(r.InFlightMax)
	e.int(r.AckedAheadMax)
	e.varint(r.CreatedAt)
	e.string(r.Owner, nodeIDLimit)
	e.int(r.SchemaVersion)
	e.int(r.MaxDeliveries)
	e.string(r.DeadLetterTopic, topicNameLimit)
	e.string(r.Role, labelLimit)
	e.length(len(r.Children), childrenLimit)
	for _, child := range r.Children {
		e.string(child, topicNameLimit)
	}
	e.string(r.Parent, topicNameLimit)
	e.string(r.AttachEpoch, labelLimit)
	e.varint(r.FanoutDelayMs)
}

func (d *decoder) topicInfo() msg.TopicInfo {
	return msg.TopicInfo{
		Name:                d.string(topicNameLimit),
		Partitions:          d.int(),
		RetentionMs:         d.varint(),
		VisibilityTimeoutMs: d.varint(),
		InFlightMax:         d.int(),
		AckedAheadMax:       d.int(),
		CreatedAt:           d.varint(),
		Owner:               d.string(nodeIDLimit),
		SchemaVersion:       d.int(),
		MaxDeliveries:       d.int(),
		DeadLetterTopic:     d.string(topicNameLimit),
		Role:                d.string(labelLimit),
		Children:            d.childNames(),
		Parent:              d.string(topicNameLimit),
		AttachEpoch:         d.string(labelLimit),
		FanoutDelayMs:       d.varint(),
	}
}

// childNames reads a parent's children; nil when there are none (JSON
// leaves "children" out).
func (d *decoder) childNames() []string {
	var names []string
	if n := d.count(childrenLimit, childNameBytesMin); n > 0 {
		names = make([]string, n)
	}
	for i := range names {
		names[i] = d.string(topicNameLimit)
	}
	return names
}

func (e *encoder) childrenResult(r msg.ChildrenResult) {
	e.string(r.Parent, topicNameLimit)
	e.length(len(r.Children), childrenLimit)
	for _, child := range r.Children {
		e.string(child.Name, topicNameLimit)
		e.varint(child.DelayMs)
		e.uvarint(child.LagMessages)
		e.bool(child.LagComplete)
	}
}

// childrenResult reads a list of children; Children is never nil (JSON
// "children": []).
func (d *decoder) childrenResult() msg.ChildrenResult {
	r := msg.ChildrenResult{Parent: d.string(topicNameLimit)}
	r.Children = make([]msg.ChildLag, d.count(childrenLimit, childLagBytesMin))
	for i := range r.Children {
		r.Children[i] = msg.ChildLag{Name: d.string(topicNameLimit), DelayMs: d.varint(),
			LagMessages: d.uvarint(), LagComplete: d.bool()}
	}
	return r
}

func (e *encoder) topicPage(r msg.TopicPage) {
	e.length(len(r.Topics), topicsLimit)
	for i := range r.Topics {
		e.topicInfo(&r.Topics[i])
	}
	e.string(r.NextPageToken, pageTokenLimit)
}

// topicPage reads a page; its Topics is never nil (JSON "topics": []).
func (d *decoder) topicPage() msg.TopicPage {
	r := msg.TopicPage{Topics: make([]msg.TopicInfo, d.count(topicsLimit, topicInfoBytesMin))}
	for i := range r.Topics {
		r.Topics[i] = d.topicInfo()
	}
	r.NextPageToken = d.string(pageTokenLimit)
	return r
}

func (e *encoder) topicDetail(r *msg.TopicDetail) {
	e.topicInfo(&r.TopicInfo)
	e.length(len(r.PartitionStats), partitionStatsLimit)
	for i := range r.PartitionStats {
		e.partitionStats(&r.PartitionStats[i])
	}
}

func (e *encoder) partitionStats(s *msg.PartitionStats) {
	e.int(s.Index)
	e.int(s.Segments)
	e.uvarint(s.OldestOffset)
	e.uvarint(s.NextOffset)
	e.uvarint(s.HighWatermark)
	e.varint(s.SizeBytes)
	e.varint(s.OldestSegmentAt)
	e.string(s.OwnerNode, nodeIDLimit)
	e.bool(s.Available)
	e.uvarint(s.Committed)
	e.int(s.InFlight)
}

// partitionStatsList reads the stats of a detail; never nil (JSON
// "partition_stats": []).
func (d *decoder) partitionStatsList() []msg.PartitionStats {
	list := make([]msg.PartitionStats, d.count(partitionStatsLimit, partitionStatsBytesMin))
	for i := range list {
		list[i] = msg.PartitionStats{
			Index:           d.int(),
			Segments:        d.int(),
			OldestOffset:    d.uvarint(),
			NextOffset:      d.uvarint(),
			HighWatermark:   d.uvarint(),
			SizeBytes:       d.varint(),
			OldestSegmentAt: d.varint(),
			OwnerNode:       d.string(nodeIDLimit),
			Available:       d.bool(),
			Committed:       d.uvarint(),
			InFlight:        d.int(),
		}
	}
	return list
}

func (e *encoder) produceResult(r msg.ProduceResult) {
	e.length(len(r.Records), recordsLimit)
	for _, placement := range r.Records {
		e.int(placement.Partition)
		e.uvarint(placement.Offset)
	}
	e.bool(r.Batch)
}

func (d *decoder) produceResult() msg.ProduceResult {
	var r msg.ProduceResult
	if n := d.count(recordsLimit, placementBytesMin); n > 0 {
		r.Records = make([]msg.Placement, n)
	}
	for i := range r.Records {
		r.Records[i] = msg.Placement{Partition: d.int(), Offset: d.uvarint()}
	}
	r.Batch = d.bool()
	return r
}

// consumeResult writes the messages of a consume reply, sizing the output
// first: with a forward this is the hot path of consume.
func (e *encoder) consumeResult(r msg.ConsumeResult) {
	e.length(len(r.Messages), messagesLimit)
	e.grow(consumedMessagesBytes(r.Messages))
	for i := range r.Messages {
		e.consumedMessage(&r.Messages[i])
	}
	e.bool(r.Batch)
}

// consumedMessagesBytes is an upper bound of the encoding of messages.
func consumedMessagesBytes(messages []msg.Message) int {
	size := 0
	for i := range messages {
		m := &messages[i]
		size += len(m.Topic) + len(m.Key) + len(m.Payload) + len(m.ReceiptHandle)
		if m.DeadLetter != nil {
			size += len(m.DeadLetter.Topic)
		}
	}
	return size + len(messages)*consumedMessageFieldsBytesMax
}

// consumeResult reads a consume reply; its Messages is never nil (JSON
// "messages": []).
func (d *decoder) consumeResult() msg.ConsumeResult {
	r := msg.ConsumeResult{Messages: make([]msg.Message, d.count(messagesLimit, consumedMessageBytesMin))}
	for i := range r.Messages {
		r.Messages[i] = d.consumedMessage()
	}
	r.Batch = d.bool()
	return r
}

func (e *encoder) consumedMessage(m *msg.Message) {
	e.string(m.Topic, topicNameLimit)
	e.int(m.Partition)
	e.uvarint(m.Offset)
	e.bytes(m.Key, keyLimit)
	e.bytes(m.Payload, payloadLimit)
	e.varint(m.TimestampMs)
	e.string(m.ReceiptHandle, receiptHandleLimit)
	e.uvarint(uint64(m.DeliveryCount))
	e.deadLetterOrigin(m.DeadLetter)
}

// deadLetterOriginFieldsBytesMax bounds the encoding of an optional
// dead-letter origin without its topic's bytes: the presence flag, the
// topic's length, the partition, the offset and the delivery count.
const deadLetterOriginFieldsBytesMax = 5 * binary.MaxVarintLen64

// deadLetterOrigin writes a presence flag and, if present, the origin.
func (e *encoder) deadLetterOrigin(o *msg.DeadLetterOrigin) {
	e.bool(o != nil)
	if o != nil {
		e.string(o.Topic, topicNameLimit)
		e.int(o.Partition)
		e.uvarint(o.Offset)
		e.uvarint(uint64(o.DeliveryCount))
	}
}

func (d *decoder) deadLetterOrigin() *msg.DeadLetterOrigin {
	if !d.bool() {
		return nil
	}
	return &msg.DeadLetterOrigin{Topic: d.string(topicNameLimit), Partition: d.int(), Offset: d.uvarint(), DeliveryCount: d.uint32()}
}

func (d *decoder) consumedMessage() msg.Message {
	m := msg.Message{
		Topic:         d.string(topicNameLimit),
		Partition:     d.int(),
		Offset:        d.uvarint(),
		Key:           d.bytes(keyLimit),
		Payload:       d.bytes(payloadLimit),
		TimestampMs:   d.varint(),
		ReceiptHandle: d.string(receiptHandleLimit),
		DeliveryCount: d.uint32(),
	}
	m.DeadLetter = d.deadLetterOrigin()
	return m
}

// replayResult writes a presence flag and, if present, the message.
func (e *encoder) replayResult(r msg.ReplayResult) {
	e.bool(r.Message != nil)
	if r.Message != nil {
		e.consumedMessage(r.Message)
	}
}

func (d *decoder) replayResult() msg.ReplayResult {
	if !d.bool() {
		return msg.ReplayResult{}
	}
	m := d.consumedMessage()
	return msg.ReplayResult{Message: &m}
}

func (e *encoder) ackResult(r msg.AckResult) {
	e.length(len(r.Results), handlesLimit)
	for _, item := range r.Results {
		e.string(item.Handle, receiptHandleLimit)
		e.error(item.Err)
	}
	e.bool(r.Batch)
}

func (d *decoder) ackResult() msg.AckResult {
	var r msg.AckResult
	if n := d.count(handlesLimit, ackItemBytesMin); n > 0 {
		r.Results = make([]msg.AckItemResult, n)
	}
	for i := range r.Results {
		r.Results[i] = msg.AckItemResult{Handle: d.string(receiptHandleLimit), Err: d.error()}
	}
	r.Batch = d.bool()
	return r
}

func (e *encoder) membersResult(r msg.MembersResult) {
	e.length(len(r.Members), membersLimit)
	for i := range r.Members {
		m := &r.Members[i]
		e.string(m.ID, nodeIDLimit)
		e.string(m.Addr, addressLimit)
		e.string(m.Status, labelLimit)
		e.bool(m.Draining)
		e.bool(m.Voter)
		e.bool(m.DiskLow)
		e.int(m.OwnedPartitions)
		e.int(m.OutboundMoves)
		e.int(m.InboundMoves)
	}
}

// members reads a member list; never nil (JSON "members": []).
func (d *decoder) members() []msg.Member {
	members := make([]msg.Member, d.count(membersLimit, memberBytesMin))
	for i := range members {
		members[i] = msg.Member{
			ID:              d.string(nodeIDLimit),
			Addr:            d.string(addressLimit),
			Status:          d.string(labelLimit),
			Draining:        d.bool(),
			Voter:           d.bool(),
			DiskLow:         d.bool(),
			OwnedPartitions: d.int(),
			OutboundMoves:   d.int(),
			InboundMoves:    d.int(),
		}
	}
	return members
}

func (e *encoder) movesResult(r msg.MovesResult) {
	e.length(len(r.Moves), movesLimit)
	for i := range r.Moves {
		m := &r.Moves[i]
		e.string(m.Topic, topicNameLimit)
		e.int(m.Partition)
		e.string(m.From, nodeIDLimit)
		e.string(m.To, nodeIDLimit)
		e.string(m.Phase, labelLimit)
		e.varint(m.BytesCopied)
		e.varint(m.BytesTotal)
		e.varint(m.StartedAtMs)
	}
}

// moves reads a move list; never nil (JSON "moves": []).
func (d *decoder) moves() []msg.Move {
	moves := make([]msg.Move, d.count(movesLimit, moveBytesMin))
	for i := range moves {
		moves[i] = msg.Move{
			Topic:       d.string(topicNameLimit),
			Partition:   d.int(),
			From:        d.string(nodeIDLimit),
			To:          d.string(nodeIDLimit),
			Phase:       d.string(labelLimit),
			BytesCopied: d.varint(),
			BytesTotal:  d.varint(),
			StartedAtMs: d.varint(),
		}
	}
	return moves
}
