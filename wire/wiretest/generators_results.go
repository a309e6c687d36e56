package wiretest

import (
	"pgregory.net/rapid"

	"narad/msg"
)

// Result draws a result of any type, or nil.
func Result() *rapid.Generator[msg.Result] {
	return rapid.OneOf(
		rapid.Just[msg.Result](nil),
		rapid.Map(topicInfo(), func(info msg.TopicInfo) msg.Result { return info }),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.TopicPage{Topics: listRaw(topicInfo(), 3).Draw(t, "topics"), NextPageToken: topic().Draw(t, "token")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.TopicDetail{TopicInfo: topicInfo().Draw(t, "info"), PartitionStats: listRaw(partitionStats(), 3).Draw(t, "stats")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.ProduceResult{Records: listRaw(placement(), 4).Draw(t, "records"), Batch: rapid.Bool().Draw(t, "batch")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.ConsumeResult{Messages: listRaw(message(), 3).Draw(t, "messages"), Batch: rapid.Bool().Draw(t, "batch")}
		}),
		listResult(),
	)
}

// listResult draws the remaining results: replay, ack and the listings.
func listResult() *rapid.Generator[msg.Result] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.ReplayResult{Message: rapid.OneOf(rapid.Just[*msg.Message](nil), rapid.Ptr(message(), false)).Draw(t, "message")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.AckResult{Results: listRaw(ackItem(), 4).Draw(t, "results"), Batch: rapid.Bool().Draw(t, "batch")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.MembersResult{Members: listRaw(member(), 3).Draw(t, "members")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result { return msg.MovesResult{Moves: listRaw(move(), 3).Draw(t, "moves")} }),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.ChildrenResult{Parent: topic().Draw(t, "parent"), Children: listRaw(childLag(), 3).Draw(t, "children")}
		}),
		moveResult(),
	)
}

// moveResult draws the results of the move protocol.
func moveResult() *rapid.Generator[msg.Result] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.MoveSourceState{Segments: listRaw(moveSegment(), 4).Draw(t, "segments"),
				HWM: rapid.Uint64().Draw(t, "hwm"), Committed: rapid.Uint64().Draw(t, "committed"), Frozen: rapid.Bool().Draw(t, "frozen"),
				NextUndelivered: rapid.Uint64().Draw(t, "next undelivered"), Leases: listRaw(moveLease(), 4).Draw(t, "leases"),
				Cursors: listRaw(fanoutCursor(), 3).Draw(t, "cursors"), CorruptCount: rapid.Uint64().Draw(t, "corrupt count"),
				CorruptOffsets: listRaw(rapid.Uint64(), 3).Draw(t, "corrupt offsets")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Result { return msg.MoveChunk{Data: bytesRaw(64).Draw(t, "data")} }),
		rapid.Custom(func(t *rapid.T) msg.Result {
			return msg.MoveVerdict{Owner: nodeID().Draw(t, "owner"), Target: nodeID().Draw(t, "target"),
				AppliedIndex: rapid.Uint64().Draw(t, "applied")}
		}),
	)
}

func moveSegment() *rapid.Generator[msg.MoveSegment] {
	return rapid.Custom(func(t *rapid.T) msg.MoveSegment {
		return msg.MoveSegment{Base: rapid.Uint64().Draw(t, "base"), Size: rapid.Int64().Draw(t, "size"), Sealed: rapid.Bool().Draw(t, "sealed")}
	})
}

func moveLease() *rapid.Generator[msg.MoveLease] {
	return rapid.Custom(func(t *rapid.T) msg.MoveLease {
		return msg.MoveLease{Offset: rapid.Uint64().Draw(t, "lease offset"), DeliveryCount: rapid.Uint32().Draw(t, "lease deliveries"),
			ReturnedUnseen: rapid.Bool().Draw(t, "lease returned unseen")}
	})
}

func topicInfo() *rapid.Generator[msg.TopicInfo] {
	return rapid.Custom(func(t *rapid.T) msg.TopicInfo {
		return msg.TopicInfo{Name: topic().Draw(t, "name"), Partitions: rapid.Int().Draw(t, "partitions"),
			RetentionMs: rapid.Int64().Draw(t, "retention"), VisibilityTimeoutMs: rapid.Int64().Draw(t, "visibility"),
			InFlightMax: rapid.Int().Draw(t, "inFlight"), AckedAheadMax: rapid.Int().Draw(t, "ackedAhead"),
			CreatedAt: rapid.Int64().Draw(t, "created"), Owner: nodeID().Draw(t, "owner"),
			SchemaVersion: rapid.Int().Draw(t, "schemaVersion"), MaxDeliveries: rapid.Int().Draw(t, "maxDeliveries"),
			DeadLetterTopic: topic().Draw(t, "deadLetterTopic"),
			Role:            rapid.SampledFrom([]string{"", "parent", "child"}).Draw(t, "role"),
			Children:        listRaw(topic(), 3).Draw(t, "children"), Parent: topic().Draw(t, "parent"),
			AttachEpoch: rapid.StringMatching(`[0-9a-f]{0,16}`).Draw(t, "epoch"), FanoutDelayMs: rapid.Int64().Draw(t, "delay")}
	})
}

func partitionStats() *rapid.Generator[msg.PartitionStats] {
	return rapid.Custom(func(t *rapid.T) msg.PartitionStats {
		return msg.PartitionStats{Index: rapid.Int().Draw(t, "index"), Segments: rapid.Int().Draw(t, "segments"),
			OldestOffset: rapid.Uint64().Draw(t, "oldest"), NextOffset: rapid.Uint64().Draw(t, "next"),
			HighWatermark: rapid.Uint64().Draw(t, "hwm"), SizeBytes: rapid.Int64().Draw(t, "size"),
			OldestSegmentAt: rapid.Int64().Draw(t, "oldestAt"), OwnerNode: nodeID().Draw(t, "owner"),
			Available: rapid.Bool().Draw(t, "available"), Committed: rapid.Uint64().Draw(t, "committed"),
			InFlight: rapid.Int().Draw(t, "inFlight")}
	})
}

func placement() *rapid.Generator[msg.Placement] {
	return rapid.Custom(func(t *rapid.T) msg.Placement {
		return msg.Placement{Partition: rapid.Int().Draw(t, "partition"), Offset: rapid.Uint64().Draw(t, "offset")}
	})
}

func message() *rapid.Generator[msg.Message] {
	return rapid.Custom(func(t *rapid.T) msg.Message {
		return msg.Message{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
			Offset: rapid.Uint64().Draw(t, "offset"), Key: bytesRaw(16).Draw(t, "key"), Payload: bytesRaw(64).Draw(t, "payload"),
			TimestampMs: rapid.Int64().Draw(t, "timestamp"), ReceiptHandle: handle().Draw(t, "handle"),
			DeliveryCount: rapid.Uint32().Draw(t, "deliveries"), DeadLetter: optional(t, "deadLetter", deadLetterOrigin())}
	})
}

func deadLetterOrigin() *rapid.Generator[msg.DeadLetterOrigin] {
	return rapid.Custom(func(t *rapid.T) msg.DeadLetterOrigin {
		return msg.DeadLetterOrigin{Topic: topic().Draw(t, "origin topic"), Partition: rapid.Int().Draw(t, "origin partition"),
			Offset: rapid.Uint64().Draw(t, "origin offset"), DeliveryCount: rapid.Uint32().Draw(t, "origin deliveries")}
	})
}

func ackItem() *rapid.Generator[msg.AckItemResult] {
	return rapid.Custom(func(t *rapid.T) msg.AckItemResult {
		return msg.AckItemResult{Handle: handle().Draw(t, "handle"), Err: errorValue().Draw(t, "err")}
	})
}

func member() *rapid.Generator[msg.Member] {
	return rapid.Custom(func(t *rapid.T) msg.Member {
		return msg.Member{ID: nodeID().Draw(t, "id"), Addr: rapid.StringN(0, -1, AddressBytesMax).Draw(t, "addr"),
			Status: label().Draw(t, "status"), Draining: rapid.Bool().Draw(t, "draining"), Voter: rapid.Bool().Draw(t, "voter"), DiskLow: rapid.Bool().Draw(t, "disk low"),
			OwnedPartitions: rapid.Int().Draw(t, "owned"), OutboundMoves: rapid.Int().Draw(t, "outbound"),
			InboundMoves: rapid.Int().Draw(t, "inbound")}
	})
}

func move() *rapid.Generator[msg.Move] {
	return rapid.Custom(func(t *rapid.T) msg.Move {
		return msg.Move{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
			From: nodeID().Draw(t, "from"), To: nodeID().Draw(t, "to"), Phase: label().Draw(t, "phase"),
			BytesCopied: rapid.Int64().Draw(t, "copied"), BytesTotal: rapid.Int64().Draw(t, "total"),
			StartedAtMs: rapid.Int64().Draw(t, "started")}
	})
}

func childLag() *rapid.Generator[msg.ChildLag] {
	return rapid.Custom(func(t *rapid.T) msg.ChildLag {
		return msg.ChildLag{Name: topic().Draw(t, "name"), DelayMs: rapid.Int64().Draw(t, "delay"),
			LagMessages: rapid.Uint64().Draw(t, "lag"), LagComplete: rapid.Bool().Draw(t, "complete")}
	})
}

func fanoutCursor() *rapid.Generator[msg.FanoutCursor] {
	return rapid.Custom(func(t *rapid.T) msg.FanoutCursor {
		return msg.FanoutCursor{Child: topic().Draw(t, "child"), Epoch: rapid.Uint64().Draw(t, "epoch"), NextOffset: rapid.Uint64().Draw(t, "next")}
	})
}
