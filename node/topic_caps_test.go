package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/node/lease"
)

// TestACapPastItsBoundIsNamedWithItsValue: a create or an alter whose
// max_in_flight_per_partition or max_acked_ahead_per_partition is past
// lease.CapMax is refused naming that field alone, its bound and the value
// sent (the message named both fields and no value, so a client could not
// tell which it had got wrong), and changes nothing.
func TestACapPastItsBoundIsNamedWithItsValue(t *testing.T) {
	h := newHarness(t)
	tooMany := lease.CapMax + 1
	e := h.fail(msg.CreateTopic{Name: "orders", InFlightMax: tooMany}, msg.CodeInvalid)
	require.Equal(t, "max_in_flight_per_partition must be at most 1048576, got 1048577", e.Message)
	e = h.fail(msg.CreateTopic{Name: "orders", AckedAheadMax: tooMany}, msg.CodeInvalid)
	require.Equal(t, "max_acked_ahead_per_partition must be at most 1048576, got 1048577", e.Message)
	before := h.createTopic("orders")
	e = h.fail(msg.AlterTopic{Name: "orders", AckedAheadMax: &tooMany}, msg.CodeInvalid)
	require.Equal(t, "max_acked_ahead_per_partition must be at most 1048576, got 1048577", e.Message)
	after := h.ok(msg.GetTopic{Name: "orders", Partition: msg.PartitionNone}).(msg.TopicDetail)
	require.Equal(t, before.AckedAheadMax, after.AckedAheadMax)
}
