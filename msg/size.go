package msg

// PayloadBytes is the bulk an envelope carries: the keys and payloads of
// records (produced, consumed, replayed), the chunk of a move's read, the
// lists of a move's source state (moveStateBytes), the schema of a topic
// change and the data of Raft entries and snapshots. The
// rest of a message (ids, names, offsets) is small and bounded by its
// type, so this is what a queue of envelopes must count to bound its
// memory (peer's send queue does).
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
		return RecordsBytes(r.Records)
	case CreateTopic:
		return int64(len(r.Schema))
	case AlterTopic:
		return int64(len(r.Schema))
	}
	return 0
}

func resultBytes(result Result) int64 {
	switch r := result.(type) {
	case ConsumeResult:
		total := int64(0)
		for _, m := range r.Messages {
			total += int64(len(m.Key) + len(m.Payload))
		}
		return total
	case ReplayResult:
		if r.Message == nil {
			return 0
		}
		return int64(len(r.Message.Key) + len(r.Message.Payload))
	case MoveChunk:
		return int64(len(r.Data))
	case MoveSourceState:
		return moveStateBytes(r)
	}
	return 0
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
