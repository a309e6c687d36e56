package wiretest

import (
	"pgregory.net/rapid"

	"narad/node"
)

// Request draws a request of any type.
func Request() *rapid.Generator[node.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.CreateTopic{Name: topic().Draw(t, "name"), Partitions: rapid.Int().Draw(t, "partitions"),
				RetentionMs: rapid.Int64().Draw(t, "retention"), VisibilityTimeoutMs: rapid.Int64().Draw(t, "visibility"),
				InFlightMax: rapid.Int().Draw(t, "inFlight"), AckedAheadMax: rapid.Int().Draw(t, "ackedAhead"),
				Schema: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "schema"), CreatedBy: rapid.StringMatching(`[a-z]{0,8}`).Draw(t, "createdBy")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.ListTopics{Limit: rapid.Int().Draw(t, "limit"), PageToken: topic().Draw(t, "token")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.GetTopic{Name: topic().Draw(t, "name"), Partition: rapid.Int().Draw(t, "partition")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.AlterTopic{Name: topic().Draw(t, "name"), Partitions: optional(t, "partitions", rapid.Int()),
				RetentionMs: optional(t, "retention", rapid.Int64()), VisibilityTimeoutMs: optional(t, "visibility", rapid.Int64()),
				InFlightMax: optional(t, "inFlight", rapid.Int()), AckedAheadMax: optional(t, "ackedAhead", rapid.Int()),
				Schema: rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "schema")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request { return node.DeleteTopic{Name: topic().Draw(t, "name")} }),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.Produce{Topic: topic().Draw(t, "topic"), Records: listRaw(produceRecord(), 4).Draw(t, "records"), Batch: rapid.Bool().Draw(t, "batch")}
		}),
		dataRequest(),
	)
}

// dataRequest draws the requests of the data path and the listings.
func dataRequest() *rapid.Generator[node.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.Consume{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
				Max: rapid.Int().Draw(t, "max"), WaitMs: rapid.Int64().Draw(t, "wait")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.Replay{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"), Offset: rapid.Uint64().Draw(t, "offset")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			action := node.AckAction(rapid.IntRange(int(node.AckCommit), int(node.AckNack)).Draw(t, "action"))
			return node.Ack{Topic: topic().Draw(t, "topic"), Handles: listRaw(handle(), 4).Draw(t, "handles"), Action: action, Batch: rapid.Bool().Draw(t, "batch")}
		}),
		rapid.Just[node.Request](node.ListMembers{}),
		rapid.Just[node.Request](node.ListMoves{}),
		moveRequest(),
	)
}

// moveRequest draws the requests of the move protocol.
func moveRequest() *rapid.Generator[node.Request] {
	return rapid.OneOf(
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.MoveStatus{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
				Target: nodeID().Draw(t, "target"), MoveStartedAtMs: rapid.Int64().Draw(t, "started")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.MoveRead{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
				Base: rapid.Uint64().Draw(t, "base"), Position: rapid.Int64().Draw(t, "position")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.MoveFreeze{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition"),
				Target: nodeID().Draw(t, "target"), MoveStartedAtMs: rapid.Int64().Draw(t, "started")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.MoveSweepCheck{Topic: topic().Draw(t, "topic"), Partition: rapid.Int().Draw(t, "partition")}
		}),
		rapid.Custom(func(t *rapid.T) node.Request {
			return node.Decommission{ID: nodeID().Draw(t, "id"), Cancel: rapid.Bool().Draw(t, "cancel")}
		}),
	)
}

func produceRecord() *rapid.Generator[node.ProduceRecord] {
	return rapid.Custom(func(t *rapid.T) node.ProduceRecord {
		return node.ProduceRecord{Key: bytesRaw(16).Draw(t, "key"), Partition: rapid.Int().Draw(t, "partition"), Payload: bytesRaw(64).Draw(t, "payload")}
	})
}
