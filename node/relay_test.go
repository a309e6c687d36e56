package node

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// relayRecorder keeps the replies a relay's continuation got.
type relayRecorder struct{ replies []msg.Reply }

func (r *relayRecorder) done(reply msg.Reply) { r.replies = append(r.replies, reply) }

func relayRecord(partition int, payload string) []msg.ProduceRecord {
	return []msg.ProduceRecord{{Partition: partition, Payload: []byte(payload)}}
}

// TestLocalRelayCompletesOnlyAfterItsSyncRound: a relay into a partition
// this node owns is appended, rides the partition's sync round, and its
// continuation runs at that round's Advance, never before; no reply of it
// reaches the driver.
func TestLocalRelayCompletesOnlyAfterItsSyncRound(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	var got relayRecorder
	require.NoError(t, h.node.relay("dead", 0, relayRecord(1, "poison"), got.done))
	require.Empty(t, got.replies, "not completed from within relay")
	require.Equal(t, 1, h.node.RelaysInFlight())
	rd := h.node.Ready()
	require.Len(t, rd.Syncs, 1, "the relay's record needs its partition's sync round")
	require.Empty(t, rd.Replies, "a relay has no client reply")
	require.NoError(t, rd.Syncs[0].Run())
	require.Empty(t, got.replies, "not completed before Advance")
	h.node.Advance(rd)
	require.Len(t, got.replies, 1, "completed once, at the round's Advance")
	require.NoError(t, got.replies[0].Err)
	placements := got.replies[0].Result.(msg.ProduceResult).Records
	require.Equal(t, []msg.Placement{{Partition: 1, Offset: 0}}, placements)
	require.Zero(t, h.node.RelaysInFlight())
	replayed := h.ok(msg.Replay{Topic: "dead", Partition: 1, Offset: 0}).(msg.ReplayResult)
	require.Equal(t, "poison", string(replayed.Message.Payload), "the relayed record is durable and visible")
}

// TestRelayFailuresCompleteLater: a relay into a topic this node does not
// know fails with NotFound, through the continuation at the next
// Advance; a relay past RelaysInFlightMax is refused at once and its
// continuation never runs.
func TestRelayFailuresCompleteLater(t *testing.T) {
	h := newHarness(t)
	h.createTopic("dead")
	var missing relayRecorder
	require.NoError(t, h.node.relay("nowhere", 0, relayRecord(msg.PartitionNone, "x"), missing.done))
	require.Empty(t, missing.replies, "not completed from within relay")
	h.flush()
	require.Len(t, missing.replies, 1)
	require.Equal(t, msg.CodeNotFound, msg.CodeOf(missing.replies[0].Err))

	h.node.cfg.RelaysInFlightMax = 1
	var first, second relayRecorder
	require.NoError(t, h.node.relay("dead", 0, relayRecord(0, "a"), first.done))
	err := h.node.relay("dead", 0, relayRecord(0, "b"), second.done)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(err), "the second relay is past the cap")
	h.flush()
	require.Len(t, first.replies, 1)
	require.NoError(t, first.replies[0].Err)
	require.Empty(t, second.replies, "a refused relay is never completed")
	require.NoError(t, h.node.relay("dead", 0, relayRecord(0, "c"), second.done), "room again once the first completed")
	h.flush()
	require.Len(t, second.replies, 1)
}

// TestForwardedRelayCompletesWithTheOwnersReply: a relay into another
// node's partition is forwarded there and completes with the owner's
// placement once the owner synced it; a relay towards an owner that does
// not answer fails with Unavailable after the forward timeout.
func TestForwardedRelayCompletesWithTheOwnersReply(t *testing.T) {
	c := newClusterHarness(t, 3)
	leader := c.electWithTopic("dead", 3)
	owners := c.owners(leader, "dead")
	at := owners[0]
	remote := slices.IndexFunc(owners, func(owner string) bool { return owner != at })
	require.GreaterOrEqual(t, remote, 0)

	var got relayRecorder
	require.NoError(t, c.nodes[at].relay("dead", 0, relayRecord(remote, "poison"), got.done))
	forwardedBefore := c.forwarded[owners[remote]]
	c.handle(c.nodes[at])
	require.Empty(t, got.replies, "not completed before the owner answered")
	c.settle()
	require.Equal(t, forwardedBefore+1, c.forwarded[owners[remote]], "the record went to its owner")
	require.Len(t, got.replies, 1)
	require.NoError(t, got.replies[0].Err)
	placement := got.replies[0].Result.(msg.ProduceResult).Records[0]
	require.Equal(t, remote, placement.Partition)
	replayed := c.do(owners[remote], msg.Replay{Topic: "dead", Partition: remote, Offset: placement.Offset})
	require.Equal(t, "poison", string(replayed.Result.(msg.ReplayResult).Message.Payload), "durable at the owner")
	for id := range c.replies {
		require.LessOrEqual(t, id, RequestIDDriverMax, "no reply of a relay reaches a driver")
	}

	c.cut[owners[remote]] = true
	var cut relayRecorder
	require.NoError(t, c.nodes[at].relay("dead", 0, relayRecord(remote, "again"), cut.done))
	for range 30 {
		if len(cut.replies) > 0 {
			break
		}
		c.tick(100)
	}
	require.Len(t, cut.replies, 1, "the relay towards a silent owner fails")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(cut.replies[0].Err))
	require.Zero(t, c.nodes[at].RelaysInFlight())
}

// Property: the relays in flight hold at most RelayBytesInFlightMax of
// keys and payloads: one that would pass it is refused at once (its
// continuation never runs) while another is in flight, one alone always
// goes, and the bytes come back when a relay completes.
func TestRelaysInFlightAreBoundedInBytes(t *testing.T) {
	h := newHarness(t)
	h.cfg.RelayBytesInFlightMax = msg.ProduceBatchBytesMax
	h.restart()
	h.createTopic("dead")
	records := func(partition int) []msg.ProduceRecord { // 5 MiB: two of them pass the bound of 8
		var batch []msg.ProduceRecord
		for range 5 {
			batch = append(batch, msg.ProduceRecord{Partition: partition, Payload: make([]byte, msg.MessageBytesMax-64)})
		}
		return batch
	}
	var first, second, third relayRecorder
	require.NoError(t, h.node.relay("dead", 0, records(0), first.done), "one alone always goes")
	require.Equal(t, int64(5*(msg.MessageBytesMax-64)), h.node.Stats().RelayBytesInFlight)
	err := h.node.relay("dead", 0, records(1), second.done)
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(err), "past the bytes in flight")
	h.flush()
	require.Len(t, first.replies, 1)
	require.NoError(t, first.replies[0].Err)
	require.Empty(t, second.replies, "a refused relay's continuation never runs")
	require.Zero(t, h.node.Stats().RelayBytesInFlight)
	require.NoError(t, h.node.relay("dead", 0, records(1), third.done), "the bytes came back")
	h.flush()
	require.Len(t, third.replies, 1)
	require.NoError(t, third.replies[0].Err)
}
