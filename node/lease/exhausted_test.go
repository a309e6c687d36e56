package lease_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

var deadLetterConfig = lease.Config{InFlightMax: 64, AckedAheadMax: 64, MaxDeliveries: 2}

// Property: a record whose reservation ends unacked (expiry or nack) at
// MaxDeliveries deliveries is exhausted: it is never reserved again, it
// is handed out once by TakeExhausted, and it resolves only by
// DeadLettered; below the maximum it is redelivered as before.
func TestExhaustedRecordsAreNotRedelivered(t *testing.T) {
	table := newTable(t, 0, deadLetterConfig)
	first := mustReserve(t, table, 0, 2)
	require.NoError(t, table.Nack(first.Offset, first.Nonce, 1))
	require.Zero(t, table.ExhaustedPending(), "one delivery of two: redelivered")
	second := mustReserve(t, table, 2, 2)
	require.Equal(t, first.Offset, second.Offset)
	require.Equal(t, uint32(2), second.DeliveryCount)
	require.Equal(t, 1, table.Expire(2+visibilityMs), "the second reservation lapses")
	require.Equal(t, 1, table.ExhaustedPending())
	other := mustReserve(t, table, 200, 2)
	require.Equal(t, uint64(1), other.Offset, "the exhausted offset 0 is not reserved again")
	mustNotReserve(t, table, 200, 2)

	taken := table.TakeExhausted(200, 10)
	require.Equal(t, []lease.Exhausted{{Offset: 0, DeliveryCount: 2}}, taken)
	require.Empty(t, table.TakeExhausted(200, 10), "handed out once")
	require.Zero(t, table.Committed(), "not acknowledged until its copy is durable")
	mustNotReserve(t, table, 200, 2)
	require.True(t, table.DeadLettered(0))
	require.Equal(t, uint64(1), table.Committed(), "dead-lettered: the frontier passes it")
	require.False(t, table.DeadLettered(0), "settled once")
}

// Property: a dead letter whose write failed is reservable again and
// exhausts again at its next unacked end; turning dead letters off puts
// exhausted records back in the queue; retention drops records being
// dead-lettered, whose settle then changes nothing.
func TestExhaustedRecordsComeBack(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 64, AckedAheadMax: 64, MaxDeliveries: 1})
	r := mustReserve(t, table, 0, 3)
	require.NoError(t, table.Nack(r.Offset, r.Nonce, 1))
	require.Len(t, table.TakeExhausted(1, 1), 1)
	require.True(t, table.DeadLetterFailed(0))
	again := mustReserve(t, table, 2, 3)
	require.Equal(t, uint64(0), again.Offset, "reservable again after a failed dead letter")
	require.Equal(t, uint32(2), again.DeliveryCount)
	require.NoError(t, table.Nack(again.Offset, again.Nonce, 3))
	require.Equal(t, 1, table.ExhaustedPending(), "exhausted again")

	table.SetConfig(lease.Config{InFlightMax: 64, AckedAheadMax: 64})
	require.Zero(t, table.ExhaustedPending(), "dead letters off: back in the queue")
	require.Equal(t, uint64(0), mustReserve(t, table, 4, 3).Offset)

	table.SetConfig(lease.Config{InFlightMax: 64, AckedAheadMax: 64, MaxDeliveries: 1})
	r1 := mustReserve(t, table, 5, 3)
	require.NoError(t, table.Nack(r1.Offset, r1.Nonce, 6))
	require.Equal(t, []lease.Exhausted{{Offset: 1, DeliveryCount: 1}}, table.TakeExhausted(6, 5))
	table.AdvanceTo(2)
	require.False(t, table.DeadLettered(1), "retention dropped it while it was being dead-lettered")
	require.Equal(t, uint64(2), table.Committed())
}

// Property: a snapshot carries exhausted records, and those being
// dead-lettered, with their delivery counts; the restored table exhausts
// them again.
func TestSnapshotCarriesExhaustedRecords(t *testing.T) {
	table := newTable(t, 0, deadLetterConfig)
	for range 2 {
		r := mustReserve(t, table, 0, 2)
		require.NoError(t, table.Nack(r.Offset, r.Nonce, 0))
	}
	require.Equal(t, 1, table.ExhaustedPending())
	r := mustReserve(t, table, 0, 2)
	require.Equal(t, uint64(1), r.Offset)
	snapshot := table.Snapshot()
	require.NoError(t, snapshot.Validate())
	require.Equal(t, []lease.SnapshotEntry{{Offset: 0, State: lease.EntryReleased, DeliveryCount: 2},
		{Offset: 1, State: lease.EntryInFlight, DeliveryCount: 1}}, snapshot.Entries)
	restored := lease.RestoreTable(snapshot, nonceBase, deadLetterConfig)
	require.NoError(t, restored.CheckInvariants())
	require.Equal(t, 1, restored.ExhaustedPending(), "the exhausted record stays exhausted at the new owner")
	moved, ok := restored.Reserve(1, 2, visibilityMs)
	require.True(t, ok)
	require.Equal(t, uint64(1), moved.Offset)
	require.Equal(t, uint32(2), moved.DeliveryCount, "the count carried on")
}

// Property: a reservation handed back unseen (Return) neither exhausts
// its record nor counts as a delivery: the next reservation has the
// count a consumer expects, at 1 as above it; a consumer's nack still
// counts.
func TestAReturnedReservationCountsNoDelivery(t *testing.T) {
	table := newTable(t, 0, deadLetterConfig)
	for now := range int64(3) {
		r := mustReserve(t, table, now, 1)
		require.Equal(t, uint32(1), r.DeliveryCount, "returned unseen each time: still the first delivery")
		require.NoError(t, table.Return(r.Offset, r.Nonce, now))
		require.Zero(t, table.ExhaustedPending(), "a return never exhausts")
	}
	seen := mustReserve(t, table, 10, 1)
	require.Equal(t, uint32(1), seen.DeliveryCount)
	require.NoError(t, table.Nack(seen.Offset, seen.Nonce, 11), "a consumer's nack counts")
	again := mustReserve(t, table, 12, 1)
	require.Equal(t, uint32(2), again.DeliveryCount)
	require.NoError(t, table.Return(again.Offset, again.Nonce, 13))
	last := mustReserve(t, table, 14, 1)
	require.Equal(t, uint32(2), last.DeliveryCount, "a return at count 2 takes its delivery back")
	require.ErrorIs(t, table.Return(last.Offset, last.Nonce+1, 15), lease.ErrStale)
	require.NoError(t, table.Nack(last.Offset, last.Nonce, 15))
	require.Equal(t, 1, table.ExhaustedPending(), "the second delivery a consumer saw ended unacked")
}

// Property: the exhausted hook is called once per record a reservation's
// end exhausts, found by Expire, by a nack, or lazily by another call;
// a record handed out and returned is exhausted again, untouched, and
// handed out again.
func TestExhaustedHookAndReturn(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 64, AckedAheadMax: 64, MaxDeliveries: 1})
	calls := 0
	table.OnExhausted(func() { calls++ })
	r0 := mustReserve(t, table, 0, 3)
	require.NoError(t, table.Nack(r0.Offset, r0.Nonce, 1))
	require.Equal(t, 1, calls, "a nack exhausts")
	mustReserve(t, table, 1, 3)
	require.Equal(t, uint64(2), mustReserve(t, table, 1+visibilityMs, 3).Offset, "a reserve found offset 1 lapsed")
	require.Equal(t, 2, calls, "found lazily, announced all the same")

	taken := table.TakeExhausted(2+visibilityMs, 10)
	require.Len(t, taken, 2)
	require.True(t, table.ReturnExhausted(1))
	require.False(t, table.ReturnExhausted(1), "returned once")
	require.Equal(t, 1, table.ExhaustedPending())
	require.Equal(t, []lease.Exhausted{{Offset: 1, DeliveryCount: 1}}, table.TakeExhausted(3+visibilityMs, 10))
	require.Equal(t, 2, calls, "a return is no new exhaustion")
}
