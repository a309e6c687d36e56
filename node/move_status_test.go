package node

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestAFrozenStatusAnswerIsFinalOnlyOnceTheAcceptedRecordsAreDurable: a
// source frozen for a move (by a freeze that still waits for the sync
// round, as one from the destination's earlier incarnation may) answers a
// MoveStatus of that very move while a record it accepted before the
// freeze is not durable yet. That answer says Frozen, which the
// destination takes for the source's final state, but it lacks the record
// (here in a segment the answer does not list), which the source
// acknowledges when the round ends. The source then dies, and the
// destination force-promotes its copy of that "final" state: the
// acknowledged record is lost. A status answer may say Frozen only when
// every record accepted before the freeze is in it, as a freeze answer
// does (moveFreeze waits for the round).
func TestAFrozenStatusAnswerIsFinalOnlyOnceTheAcceptedRecordsAreDurable(t *testing.T) {
	c := newClusterHarness(t, 3)
	for _, id := range c.ids {
		cfg := c.configs[id]
		cfg.Log.SegmentBytes = 4096 // the record below starts a new segment
		c.configs[id] = cfg
		c.crash(id) // starts again with it, before anything happened
	}
	leader := c.electWithTopic("t", 3)
	partition, source, target := c.partitionAwayFromLeader(leader, strings.Repeat("a", 3000))
	c.nodes[target].cfg.Moves.ForcePromoteAfterMs = 5_000
	c.nodes[target].cfg.Moves.LagBytes = 0 // copy everything before asking for the freeze

	var held []msg.Envelope // the destination's first status request, held back
	holding := true
	c.drop = func(env msg.Envelope) bool {
		if forward, ok := env.Message.(msg.ForwardRequest); ok && holding && env.From == target && env.To == source {
			if _, status := forward.Request.(msg.MoveStatus); status {
				held = append(held, env)
				return true
			}
		}
		if reply, ok := env.Message.(msg.ForwardReply); ok && env.From == source && env.To == leader {
			_, state := reply.Reply.Result.(msg.MoveSourceState)
			return state // the answer to the stand-in freeze below
		}
		return false
	}
	c.startMove(leader, "t", partition, target)
	require.Len(t, held, 1, "the destination asked for the source's state")
	holding = false

	src := c.nodes[source]
	produced := c.send(source, producePinned("t", partition, strings.Repeat("b", 2000))) // accepted, not durable yet
	started, _ := src.meta.State().Assignment("t", partition)
	// A freeze of this move (from the destination's earlier incarnation,
	// say) arrives before the round: it waits for it.
	src.moveFreeze(asForwarded(src, leader), freezeOf(src, "t", partition, target, started.MoveStartedAtMs))
	require.NoError(t, src.Step(held[0])) // the destination's status request, in the same round

	// The driver persists the round, then sends the status answer and the
	// produce's 202, then advances: every step in the order the node's
	// contract asks for.
	c.handle(src)
	require.Contains(t, c.replies, produced)
	require.NoError(t, c.replies[produced].Err, "the record is acknowledged")
	ackedOffset := c.replies[produced].Result.(msg.ProduceResult).Records[0].Offset
	c.handle(c.nodes[target]) // the destination reads what the answer listed
	c.handle(src)             // and gets it; its next status request is not sent yet

	c.cut[source] = true // the source dies
	for range 30 {
		c.tick(1_000)
	}
	member, _ := c.nodes[leader].meta.State().Member(source)
	require.False(t, member.Alive)
	assignment, _ := c.nodes[leader].meta.State().Assignment("t", partition)
	if assignment.Owner != target {
		return // the destination waits for the source: nothing acknowledged is lost
	}
	replayed := c.do(target, msg.Replay{Topic: "t", Partition: partition, Offset: ackedOffset})
	require.NoError(t, replayed.Err)
	require.NotNil(t, replayed.Result.(msg.ReplayResult).Message,
		"the promoted copy lost acknowledged record %d (placement %+v)", ackedOffset, assignment)
}
