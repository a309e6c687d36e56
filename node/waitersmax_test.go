package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// newCappedCluster starts three nodes whose cap of parked long polls is
// one, with a topic of three partitions (one per node); it returns the
// cluster and a node to poll through.
func newCappedCluster(t *testing.T) (*clusterHarness, string) {
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.WaitersMax = 1 })
	leader := c.electWithTopic("t", 3)
	return c, c.owners(leader, "t")[0]
}

// TestAZeroWaitConsumeDoesNotTakeALongPollsPlace: a consume that
// does not wait is held only while its probes of the other owners are in
// flight; it is no long poll. With the cap at one and no long poll parked,
// a long poll that arrives meanwhile must park, not be answered empty at
// once as if the cap were reached.
func TestAZeroWaitConsumeDoesNotTakeALongPollsPlace(t *testing.T) {
	c, poller := newCappedCluster(t)
	c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone}) // no wait: probes the others
	poll := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.settle()
	_, answered := c.replies[poll]
	require.False(t, answered, "no long poll is parked: the cap of one leaves room for this one, which must wait")
}

// TestParkedPollsNeverExceedTheCap: with the cap at one and one long
// poll parked, another long poll answers without waiting; the node must
// never count more parked polls than the cap (narad_consume_parked_polls
// reads Stats().ParkedPolls).
func TestParkedPollsNeverExceedTheCap(t *testing.T) {
	c, poller := newCappedCluster(t)
	c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.settle()
	require.Equal(t, 1, c.nodes[poller].Stats().ParkedPolls)
	for range 3 {
		c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	}
	require.LessOrEqual(t, c.nodes[poller].Stats().ParkedPolls, 1,
		"long polls parked at once are capped at WaitersMax (1)")
	c.settle()
}

// pollOutcomes records the outcomes ConsumeWait reports.
type pollOutcomes struct {
	NopObserver
	outcomes []string
}

func (o *pollOutcomes) ConsumeWait(_, outcome string, _ int64) {
	o.outcomes = append(o.outcomes, outcome)
}

// Property: a long poll that finds nothing while WaitersMax polls are
// parked is refused with a 503 (its client backs off), counted as
// waiters_full; a consume that does not wait is still answered empty,
// and once a parked poll leaves, a long poll parks again.
func TestALongPollPastTheCapIsRefused(t *testing.T) {
	outcomes := &pollOutcomes{}
	h := newHarness(t)
	h.cfg.WaitersMax = 1
	h.observer = outcomes
	h.restart()
	h.createTopic("t")
	parked := h.send(msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	require.NotContains(t, h.replies, parked, "the first long poll parks")
	refused := h.fail(msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000}, msg.CodeUnavailable)
	require.Contains(t, refused.Message, "at most 1")
	require.Equal(t, []string{"waiters_full"}, outcomes.outcomes)
	empty := h.ok(msg.Consume{Topic: "t", Partition: msg.PartitionNone}).(msg.ConsumeResult)
	require.Empty(t, empty.Messages, "a consume that does not wait is not refused")
	h.node.Cancel(parked)
	again := h.send(msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	require.NotContains(t, h.replies, again, "the place the cancelled poll held is free")
	require.Equal(t, 1, h.node.Stats().ParkedPolls)
}

// Property: in a cluster, a long poll past the cap still asks the other
// owners (it is held while its probes are out, as one that does not wait
// is), and when they have nothing it is refused with a 503, not answered
// empty.
func TestALongPollPastTheCapAsksTheOtherOwnersThenIsRefused(t *testing.T) {
	c, poller := newCappedCluster(t)
	c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.settle()
	require.Equal(t, 1, c.nodes[poller].Stats().ParkedPolls)
	refused := c.send(poller, msg.Consume{Topic: "t", Partition: msg.PartitionNone, WaitMs: 8_000})
	c.settle()
	reply, answered := c.replies[refused]
	require.True(t, answered, "a poll past the cap is answered once its probes come back")
	require.Equal(t, msg.CodeUnavailable, msg.CodeOf(reply.Err), "%+v", reply)
}

// Property: a consume that does not wait and delivers records is a hit,
// not no_wait: no_wait is a consume answered at once with nothing, which
// the host counts in narad_consume_empty_total (metrics audit finding 1).
func TestANoWaitConsumeThatDeliversIsAHit(t *testing.T) {
	outcomes := &pollOutcomes{}
	h := newHarness(t)
	h.observer = outcomes
	h.restart()
	h.createTopic("t")
	h.produce("t", 0, "a")
	got := h.ok(msg.Consume{Topic: "t", Partition: msg.PartitionNone}).(msg.ConsumeResult)
	require.Len(t, got.Messages, 1)
	empty := h.ok(msg.Consume{Topic: "t", Partition: msg.PartitionNone}).(msg.ConsumeResult)
	require.Empty(t, empty.Messages)
	require.Equal(t, []string{"hit", "no_wait"}, outcomes.outcomes)
}
