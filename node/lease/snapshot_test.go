package lease_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

// snapshotFixture builds committed 5 with: 5 in flight (count 1), 6
// released (count 2), 7 in flight (count 1), 8 acked ahead, 9 in flight
// (count 1); cursor 10.
func snapshotFixture(t *testing.T) *lease.Table {
	t.Helper()
	table := newTable(t, 5, roomyConfig)
	var reservations []lease.Reservation
	for range 5 {
		reservations = append(reservations, mustReserve(t, table, 0, 10))
	}
	require.NoError(t, table.Nack(6, reservations[1].Nonce, 0))
	again := mustReserve(t, table, 0, 10)
	require.Equal(t, uint64(6), again.Offset)
	require.NoError(t, table.Nack(6, again.Nonce, 0))
	require.NoError(t, table.Ack(8, reservations[3].Nonce, 0))
	return table
}

func TestSnapshot(t *testing.T) {
	table := snapshotFixture(t)
	want := lease.Snapshot{Committed: 5, NextUndelivered: 10, Entries: []lease.SnapshotEntry{
		{Offset: 5, State: lease.EntryInFlight, DeliveryCount: 1},
		{Offset: 6, State: lease.EntryReleased, DeliveryCount: 2},
		{Offset: 7, State: lease.EntryInFlight, DeliveryCount: 1},
		{Offset: 8, State: lease.EntryAcked},
		{Offset: 9, State: lease.EntryInFlight, DeliveryCount: 1},
	}}
	snapshot := table.Snapshot()
	assert.Equal(t, want, snapshot)
	assert.NoError(t, snapshot.Validate())
}

func TestRestoreRedeliversInFlightAndKeepsCounts(t *testing.T) {
	original := snapshotFixture(t)
	restored := lease.RestoreTable(original.Snapshot(), 5000, roomyConfig)
	require.NoError(t, restored.CheckInvariants())
	assert.Equal(t, uint64(5), restored.Committed())
	assert.Equal(t, 0, restored.InFlight())
	assert.Equal(t, 1, restored.AckedAhead())
	assert.ErrorIs(t, restored.Ack(5, nonceBase+1, 1), lease.ErrStale, "handles of the old owner are stale")
	assert.Equal(t, 3, restored.Expire(1), "the offsets in flight at the source are reported available")
	want := []lease.Reservation{
		{Offset: 5, Nonce: 5001, DeliveryCount: 2, DeadlineMs: 1 + visibilityMs},
		{Offset: 6, Nonce: 5002, DeliveryCount: 3, DeadlineMs: 1 + visibilityMs},
		{Offset: 7, Nonce: 5003, DeliveryCount: 2, DeadlineMs: 1 + visibilityMs},
		{Offset: 9, Nonce: 5004, DeliveryCount: 2, DeadlineMs: 1 + visibilityMs},
		{Offset: 10, Nonce: 5005, DeliveryCount: 1, DeadlineMs: 1 + visibilityMs},
	}
	for _, reservation := range want {
		assert.Equal(t, reservation, mustReserve(t, restored, 1, 11))
	}
	mustNotReserve(t, restored, 1, 11)
	require.NoError(t, restored.Ack(5, 5001, 2))
	require.NoError(t, restored.Ack(6, 5002, 2))
	require.NoError(t, restored.Ack(7, 5003, 2))
	assert.Equal(t, uint64(9), restored.Committed(), "the carried ack of 8 collapses")
}

func TestRestoreOfAnEmptyTable(t *testing.T) {
	restored := lease.RestoreTable(lease.New(42, 0, roomyConfig).Snapshot(), 7, roomyConfig)
	require.NoError(t, restored.CheckInvariants())
	assert.Equal(t, uint64(42), restored.Committed())
	assert.Equal(t, 0, restored.Expire(0))
	assert.Equal(t, lease.Reservation{Offset: 42, Nonce: 8, DeliveryCount: 1, DeadlineMs: visibilityMs}, mustReserve(t, restored, 0, 43))
}

func TestSnapshotValidateRejects(t *testing.T) {
	type entries = []lease.SnapshotEntry
	inFlight := func(offset uint64) lease.SnapshotEntry {
		return lease.SnapshotEntry{Offset: offset, State: lease.EntryInFlight, DeliveryCount: 1}
	}
	acked := func(offset uint64) lease.SnapshotEntry {
		return lease.SnapshotEntry{Offset: offset, State: lease.EntryAcked}
	}
	tests := []struct {
		name     string
		snapshot lease.Snapshot
	}{
		{"committed above the cursor", lease.Snapshot{Committed: 3, NextUndelivered: 2}},
		{"offsets out of order", lease.Snapshot{Committed: 0, NextUndelivered: 2, Entries: entries{inFlight(1), inFlight(0)}}},
		{"duplicate offset", lease.Snapshot{Committed: 0, NextUndelivered: 2, Entries: entries{inFlight(0), inFlight(0)}}},
		{"gap below the cursor", lease.Snapshot{Committed: 0, NextUndelivered: 3, Entries: entries{inFlight(0), inFlight(2)}}},
		{"delivered at the cursor", lease.Snapshot{Committed: 0, NextUndelivered: 1, Entries: entries{inFlight(0), inFlight(1)}}},
		{"delivered below the frontier", lease.Snapshot{Committed: 1, NextUndelivered: 2, Entries: entries{inFlight(0), inFlight(1)}}},
		{"delivered never counted", lease.Snapshot{Committed: 0, NextUndelivered: 1, Entries: entries{{Offset: 0, State: lease.EntryReleased}}}},
		{"acked at the frontier", lease.Snapshot{Committed: 1, NextUndelivered: 2, Entries: entries{acked(1)}}},
		{"acked with a count", lease.Snapshot{Committed: 0, NextUndelivered: 0, Entries: entries{{Offset: 4, State: lease.EntryAcked, DeliveryCount: 1}}}},
		{"acked at the largest offset", lease.Snapshot{Committed: 0, NextUndelivered: 0, Entries: entries{acked(math.MaxUint64)}}},
		{"unknown state", lease.Snapshot{Committed: 0, NextUndelivered: 1, Entries: entries{{Offset: 0, State: 9, DeliveryCount: 1}}}},
		{"returned unseen in flight", lease.Snapshot{Committed: 0, NextUndelivered: 1,
			Entries: entries{{Offset: 0, State: lease.EntryInFlight, DeliveryCount: 1, ReturnedUnseen: true}}}},
		{"returned unseen at count 2", lease.Snapshot{Committed: 0, NextUndelivered: 1,
			Entries: entries{{Offset: 0, State: lease.EntryReleased, DeliveryCount: 2, ReturnedUnseen: true}}}},
		{"returned unseen but acked", lease.Snapshot{Committed: 0, NextUndelivered: 0,
			Entries: entries{{Offset: 4, State: lease.EntryAcked, ReturnedUnseen: true}}}},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			assert.ErrorIs(t, test.snapshot.Validate(), lease.ErrBadSnapshot)
			assert.Panics(t, func() { lease.RestoreTable(test.snapshot, 0, roomyConfig) })
		})
	}
	valid := lease.Snapshot{Committed: 0, NextUndelivered: 2, Entries: entries{inFlight(0), acked(1), acked(7)}}
	assert.NoError(t, valid.Validate())
}

func TestEntryStateString(t *testing.T) {
	assert.Equal(t, "in-flight", lease.EntryInFlight.String())
	assert.Equal(t, "released", lease.EntryReleased.String())
	assert.Equal(t, "acked", lease.EntryAcked.String())
	assert.Equal(t, "EntryState(9)", lease.EntryState(9).String())
}

func TestRestoreSettlesTheCursorPastAckedOffsets(t *testing.T) {
	snapshot := lease.Snapshot{Committed: 0, NextUndelivered: 1, Entries: []lease.SnapshotEntry{
		{Offset: 0, State: lease.EntryInFlight, DeliveryCount: 1},
		{Offset: 1, State: lease.EntryAcked},
		{Offset: 2, State: lease.EntryAcked},
	}}
	require.NoError(t, snapshot.Validate())
	restored := lease.RestoreTable(snapshot, 0, roomyConfig)
	require.NoError(t, restored.CheckInvariants())
	assert.Equal(t, uint64(0), mustReserve(t, restored, 0, 10).Offset)
	assert.Equal(t, uint64(3), mustReserve(t, restored, 0, 10).Offset, "offsets acked at the source are not delivered again")
}

// Property: a record handed back unseen (Return at its first delivery)
// travels as such, so that with max_deliveries 1 the new owner delivers
// it instead of dead-lettering a record no consumer saw; one a consumer
// saw and nacked exhausts there as it would have at the source.
func TestAReturnedUnseenRecordTravelsUnseen(t *testing.T) {
	oneDelivery := lease.Config{InFlightMax: 64, AckedAheadMax: 64, MaxDeliveries: 1}
	table := newTable(t, 0, oneDelivery)
	returned := mustReserve(t, table, 0, 2)
	seen := mustReserve(t, table, 0, 2)
	require.Equal(t, []uint64{0, 1}, []uint64{returned.Offset, seen.Offset})
	require.NoError(t, table.Return(returned.Offset, returned.Nonce, 0))
	require.NoError(t, table.Nack(seen.Offset, seen.Nonce, 0))
	require.Equal(t, 1, table.ExhaustedPending(), "the record a consumer saw ran out")

	snapshot := table.Snapshot()
	require.NoError(t, snapshot.Validate())
	assert.Equal(t, []lease.SnapshotEntry{
		{Offset: 0, State: lease.EntryReleased, DeliveryCount: 1, ReturnedUnseen: true},
		{Offset: 1, State: lease.EntryReleased, DeliveryCount: 1},
	}, snapshot.Entries)

	restored := lease.RestoreTable(snapshot, 5000, oneDelivery)
	require.NoError(t, restored.CheckInvariants())
	assert.Equal(t, 1, restored.ExhaustedPending(), "only the record a consumer saw is for the dead letters")
	again := mustReserve(t, restored, 1, 2)
	assert.Equal(t, uint64(0), again.Offset)
	assert.Equal(t, uint32(1), again.DeliveryCount, "its first delivery a consumer sees")
	require.NoError(t, restored.Nack(again.Offset, again.Nonce, 1))
	assert.Equal(t, 2, restored.ExhaustedPending(), "seen once and nacked: now it ran out")
	require.NoError(t, restored.CheckInvariants())
}
