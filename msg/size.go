package msg

// PayloadBytes is the bulk an envelope carries: the records produced,
// consumed or replayed (keys, payloads, and each one's fixed fields),
// the chunk of a move's read, the lists of a move's source state
// (moveStateBytes), the schema of a topic change, the data of Raft
// entries and snapshots, and every list an answer or an ack carries
// (listBytes: placements, receipt handles and their outcomes, a topic and
// its children, topics of a page, partition stats, members, moves,
// children), each element at its fixed fields' size plus its strings.
// The rest of a message (ids, names, offsets) is small and bounded by its
// type, so this is what a queue of envelopes must count to bound its
// memory (peer's send queue and the loop's peer inbox do): a produce of
// ProduceBatchRecordsMax empty records forwarded to another node, and its
// answer, carry no payload, yet each is tens of kilobytes of records or
// placements, so a queue of 4,096 of them is hundreds of megabytes.
func PayloadBytes(env Envelope) int64 {
	switch m := env.Message.(type) {
	case RaftMessage:
		return raftBytes(m)
	case ForwardRequest:
		return requestBytes(m.Request)
	case ForwardReply:
		return resultBytes(m.Reply.Result)
	}
	return 0
}

func raftBytes(m RaftMessage) int64 {
	if m.Message == nil {
		return 0
	}
	total := int64(len(m.Message.GetSnapshot().GetData()))
	for _, entry := range m.Message.Entries {
		total += int64(len(entry.Data))
	}
	return total
}

// Per record of a produce, the bytes its fixed fields take: its partition
// and the lengths of its key and payload; a dead letter's origin adds its
// partition, offset and delivery count, and its topic's name.
const (
	produceRecordFixedBytes    = 8 + 4 + 4
	deadLetterOriginFixedBytes = 8 + 8 + 4
)

// produceBytes counts a produce's records: their keys and payloads, and
// the fixed fields and origin that come with each. An empty record is
// not nothing: a batch of ProduceBatchRecordsMax of them forwarded to
// another node is as large as the placements of its answer.
func produceBytes(records []ProduceRecord) int64 {
	total := RecordsBytes(records) + int64(len(records))*produceRecordFixedBytes
	for _, record := range records {
		if record.Origin != nil {
			total += int64(len(record.Origin.Topic)) + deadLetterOriginFixedBytes
		}
	}
	return total
}

// RecordsBytes is the key and payload bytes of records.
func RecordsBytes(records []ProduceRecord) int64 {
	total := int64(0)
	for _, record := range records {
		total += int64(len(record.Key) + len(record.Payload))
	}
	return total
}

func requestBytes(request Request) int64 {
	switch r := request.(type) {
	case Produce:
		return produceBytes(r.Records)
	case CreateTopic:
		return int64(len(r.Schema))
	case AlterTopic:
		return int64(len(r.Schema))
	case Ack:
		return stringsBytes(r.Handles)
	}
	return 0
}

func resultBytes(result Result) int64 {
	switch r := result.(type) {
	case ConsumeResult:
		total := int64(0)
		for _, m := range r.Messages {
			total += messageBytes(m)
		}
		return total
	case ReplayResult:
		if r.Message == nil {
			return 0
		}
		return messageBytes(*r.Message)
	case MoveChunk:
		return int64(len(r.Data))
	case MoveSourceState:
		return moveStateBytes(r)
	}
	return listBytes(result)
}

// Per element of an answer's list, the bytes its fixed fields take (its
// strings count too): a consumed record's partition, offset, commit time
// and delivery count; a placement; an ack outcome's error; a topic's
// settings; a partition's stats; a member's flags and counts; a move's
// partition, byte counts and start; a child's lag.
const (
	messageFixedBytes        = 8 + 8 + 8 + 4
	placementBytes           = 8 + 8
	ackOutcomeFixedBytes     = 16
	topicFixedBytes          = 8 * 10
	partitionStatsFixedBytes = 8*9 + 1
	memberFixedBytes         = 8*4 + 3
	moveFixedBytes           = 8 * 4
	childLagFixedBytes       = 8*2 + 1
)

// messageBytes counts a consumed or replayed record: its key and payload,
// and the fixed fields and receipt handle that come with each.
func messageBytes(m Message) int64 {
	return int64(len(m.Key)+len(m.Payload)+len(m.ReceiptHandle)) + messageFixedBytes
}

// listBytes counts the lists of the answers that carry no records.
func listBytes(result Result) int64 {
	total := int64(0)
	switch r := result.(type) {
	case ProduceResult:
		total = int64(len(r.Records)) * placementBytes
	case AckResult:
		for _, item := range r.Results {
			total += int64(len(item.Handle)) + ackOutcomeFixedBytes
		}
	case TopicInfo:
		total = topicBytes(r)
	case TopicPage:
		for _, info := range r.Topics {
			total += topicBytes(info)
		}
	case TopicDetail:
		total = topicBytes(r.TopicInfo)
		for _, stats := range r.PartitionStats {
			total += int64(len(stats.OwnerNode)) + partitionStatsFixedBytes
		}
	case MembersResult:
		for _, m := range r.Members {
			total += int64(len(m.ID)+len(m.Addr)+len(m.Status)) + memberFixedBytes
		}
	case MovesResult:
		for _, m := range r.Moves {
			total += int64(len(m.Topic)+len(m.From)+len(m.To)+len(m.Phase)) + moveFixedBytes
		}
	case ChildrenResult:
		for _, child := range r.Children {
			total += int64(len(child.Name)) + childLagFixedBytes
		}
	}
	return total
}

// topicBytes counts a topic's settings and names.
func topicBytes(info TopicInfo) int64 {
	return int64(len(info.Name)+len(info.Owner)+len(info.DeadLetterTopic)+len(info.Role)+len(info.Parent)+len(info.AttachEpoch)) +
		stringsBytes(info.Children) + topicFixedBytes
}

// stringsBytes sums the lengths of strings.
func stringsBytes(values []string) int64 {
	total := int64(0)
	for _, value := range values {
		total += int64(len(value))
	}
	return total
}

// Per element of a move's source state, the bytes its fixed fields take:
// a lease's offset, delivery count and flag; a segment's base, size and
// flag; a corrupt offset; a fan-out cursor's epoch and next offset (its
// child's name counts too).
const (
	moveLeaseBytes       = 8 + 4 + 1
	moveSegmentBytes     = 8 + 8 + 1
	moveOffsetBytes      = 8
	moveCursorFixedBytes = 8 + 8
)

// moveStateBytes counts the lists of a move's source state: a frozen
// source's leases alone reach MoveLeasesMax entries, tens of MiB, which
// the queues of envelopes did not count (peer review).
func moveStateBytes(s MoveSourceState) int64 {
	total := int64(len(s.Leases))*moveLeaseBytes + int64(len(s.Segments))*moveSegmentBytes +
		int64(len(s.CorruptOffsets))*moveOffsetBytes
	for _, cursor := range s.Cursors {
		total += int64(len(cursor.Child)) + moveCursorFixedBytes
	}
	return total
}
