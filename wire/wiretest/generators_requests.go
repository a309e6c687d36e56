package wiretest

import (
	"pgregory.net/rapid"

	"narad/msg"
)

// Request draws a request of any type.
func Request() *rapid.Generator[msg.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.CreateTopic{Name: topic().Draw(t, "name"), Partitions: rapid.Int().Draw(t, "partitions"),
				RetentionMs: rapid.Int64().Draw(t, "retention"), VisibilityTimeoutMs: rapid.Int64().Draw(t, "visibility"),
				InFlightMax: rapid.Int().Draw(t, "inFlight"), AckedAheadMax: rapid.Int().Draw(t, "ackedAhead"),
				Schema: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "schema"), CreatedBy: rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "createdBy"),
				CreatorCreatedAtMs: rapid.Int64().Draw(t, "creatorCreatedAtMs"),
				MaxDeliveries:      rapid.Int().Draw(t, "maxDeliveries"), DeadLetterTopic: topic().Draw(t, "deadLetterTopic"),
				Parent: topic().Draw(t, "parent"), FanoutDelayMs: rapid.Int64().Draw(t, "delay"), ExpectedOwner: nodeID().Draw(t, "expectedOwner")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.ListTopics{Limit: rapid.Int().Draw(t, "limit"), PageToken: topic().Draw(t, "token")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.GetTopic{Name: topic().Draw(t, "name"), Partition: rapid.Int().Draw(t, "partition"), Confirm: rapid.Bool().Draw(t, "confirm")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.AlterTopic{Name: topic().Draw(t, "name"), Partitions: optional(t, "partitions", rapid.Int()),
				RetentionMs: optional(t, "retention", rapid.Int64()), VisibilityTimeoutMs: optional(t, "visibility", rapid.Int64()),
				InFlightMax: optional(t, "inFlight", rapid.Int()), AckedAheadMax: optional(t, "ackedAhead", rapid.Int()),
				Schema: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "schema"), MaxDeliveries: optional(t, "maxDeliveries", rapid.Int()),
				DeadLetterTopic: optional(t, "deadLetterTopic", topic()), ExpectedOwner: nodeID().Draw(t, "expectedOwner")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.DeleteTopic{Name: topic().Draw(t, "name"), ExpectedOwner: nodeID().Draw(t, "expectedOwner")}
		}),
		fanoutRequest(),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.Produce{Topic: topic().Draw(t, "topic"), Records: listRaw(produceRecord(), 4).Draw(t, "records"), Batch: rapid.Bool().Draw(t, "batch"),
				FanoutEpoch: rapid.Uint64().Draw(t, "fanout epoch"), SchemaID: rapid.Uint64().Draw(t, "schema id"),
				TopicIncarnation: rapid.Uint64().Draw(t, "topic incarnation"), TopicCreatedAtMs: rapid.Int64().Draw(t, "topic created at")}
		}),
		dataRequest(),
	)
}

// dataRequest draws the requests of the data path and the listings.
func dataRequest() *rapid.Generator[msg.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.Consume{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
				Max: rapid.Int().Draw(t, "max"), WaitMs: rapid.Int64().Draw(t, "wait"),
				TopicIncarnation: rapid.Uint64().Draw(t, "incarnation"), TopicCreatedAtMs: rapid.Int64().Draw(t, "created")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.Replay{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"), Offset: rapid.Uint64().Draw(t, "offset"),
				TopicIncarnation: rapid.Uint64().Draw(t, "incarnation"), TopicCreatedAtMs: rapid.Int64().Draw(t, "created")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			action := msg.AckAction(rapid.IntRange(int(msg.AckCommit), int(msg.AckReturn)).Draw(t, "action"))
			return msg.Ack{Topic: topic().Draw(t, "topic"), Handles: listRaw(handle(), 4).Draw(t, "handles"), Action: action, Batch: rapid.Bool().Draw(t, "batch")}
		}),
		rapid.Just[msg.Request](msg.ListMembers{}),
		rapid.Just[msg.Request](msg.ListMoves{}),
		moveRequest(),
	)
}

// moveRequest draws the requests of the move protocol.
func moveRequest() *rapid.Generator[msg.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Request { return msg.MoveStatus{MoveOf: moveOf(t)} }),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.MoveRead{MoveOf: moveOf(t), Base: rapid.Uint64().Draw(t, "base"), Position: rapid.Int64().Draw(t, "position")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request { return msg.MoveFreeze{MoveOf: moveOf(t)} }),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.MoveSweepCheck{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.Decommission{ID: nodeID().Draw(t, "id"), Cancel: rapid.Bool().Draw(t, "cancel")}
		}),
	)
}

func produceRecord() *rapid.Generator[msg.ProduceRecord] {
	return rapid.Custom(func(t *rapid.T) msg.ProduceRecord {
		return msg.ProduceRecord{Key: bytesRaw(16).Draw(t, "key"), Partition: rapid.Int().Draw(t, "partition"), Payload: bytesRaw(64).Draw(t, "payload"),
			Origin: optional(t, "origin", deadLetterOrigin())}
	})
}

// fanoutRequest draws the requests of fan-out.
func fanoutRequest() *rapid.Generator[msg.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.AttachChild{Parent: topic().Draw(t, "parent"), Child: topic().Draw(t, "child"), DelayMs: rapid.Int64().Draw(t, "delay"),
				ExpectedOwner: nodeID().Draw(t, "expectedOwner")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request {
			return msg.DetachChild{Parent: topic().Draw(t, "parent"), Child: topic().Draw(t, "child"), ExpectedOwner: nodeID().Draw(t, "expectedOwner")}
		}),
		rapid.Custom(func(t *rapid.T) msg.Request { return msg.ListChildren{Parent: topic().Draw(t, "parent")} }),
	)
}

// moveOf draws the fields that name a move.
func moveOf(t *rapid.T) msg.MoveOf {
	return msg.MoveOf{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
		Target: nodeID().Draw(t, "target"), MoveStartedAtMs: rapid.Int64().Draw(t, "started"),
		TopicIncarnation: rapid.Uint64().Draw(t, "incarnation"), TopicCreatedAtMs: rapid.Int64().Draw(t, "created")}
}
