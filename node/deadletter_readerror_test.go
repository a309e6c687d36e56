package node

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestADeadLetterWhoseRecordCannotBeReadIsNotDeliveredAgain: a record
// that ran out of deliveries is not delivered again
// (docs/api.md#dead-letters), also when the disk fails to read it for its
// copy (an I/O error, not corruption). The failed read put it back in the
// queue, as if the dead-letter topic had refused it, so the next consume
// delivered it a second time past its max_deliveries of 1. It waits,
// exhausted, and its copy is written once a read succeeds.
func TestADeadLetterWhoseRecordCannotBeReadIsNotDeliveredAgain(t *testing.T) {
	h, failReads := readFailingHarness(t)
	h.createTopic("dead")
	one, dead := 1, "dead"
	h.ok(msg.AlterTopic{Name: "orders", MaxDeliveries: &one, DeadLetterTopic: &dead})
	message, ok := h.consume("orders")
	require.True(t, ok)

	*failReads = true
	require.NoError(t, h.ackHandle("orders", message.ReceiptHandle, msg.AckNack), "the nack exhausts the record; its copy's read fails")
	h.tick(1)
	*failReads = false
	again, delivered := h.consume("orders")
	require.False(t, delivered, "an exhausted record was delivered again: delivery %d (max_deliveries 1)", again.DeliveryCount)

	h.tick(1)
	require.Equal(t, uint64(1), h.stats("orders", 0).Committed, "its copy was written once the disk read again")
	copied, ok := h.consume("dead")
	require.True(t, ok, "the copy is in the dead-letter topic")
	require.Equal(t, uint32(1), copied.DeadLetter.DeliveryCount)
}
