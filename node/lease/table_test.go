package lease_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

const (
	visibilityMs = 100
	nonceBase    = 1000
)

var roomyConfig = lease.Config{InFlightMax: 64, AckedAheadMax: 64}

// newTable starts a table whose invariants are checked when the test ends.
func newTable(t *testing.T, committed uint64, cfg lease.Config) *lease.Table {
	t.Helper()
	table := lease.New(committed, nonceBase, cfg)
	t.Cleanup(func() { require.NoError(t, table.CheckInvariants()) })
	return table
}

// mustReserve reserves and checks the invariants afterwards.
func mustReserve(t *testing.T, table *lease.Table, nowMs int64, hwm uint64) lease.Reservation {
	t.Helper()
	reservation, ok := table.Reserve(nowMs, hwm, visibilityMs)
	require.True(t, ok, "reserve at %d with hwm %d", nowMs, hwm)
	require.NoError(t, table.CheckInvariants())
	return reservation
}

func mustNotReserve(t *testing.T, table *lease.Table, nowMs int64, hwm uint64) {
	t.Helper()
	reservation, ok := table.Reserve(nowMs, hwm, visibilityMs)
	require.False(t, ok, "unexpected reservation %+v", reservation)
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name  string
		cfg   lease.Config
		valid bool
	}{
		{"smallest", lease.Config{InFlightMax: 1, AckedAheadMax: 1}, true},
		{"largest", lease.Config{InFlightMax: lease.CapMax, AckedAheadMax: lease.CapMax}, true},
		{"zero in flight", lease.Config{InFlightMax: 0, AckedAheadMax: 1}, false},
		{"negative acked ahead", lease.Config{InFlightMax: 1, AckedAheadMax: -1}, false},
		{"in flight above cap max", lease.Config{InFlightMax: lease.CapMax + 1, AckedAheadMax: 1}, false},
		{"zero value", lease.Config{}, false},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			err := test.cfg.Validate()
			if test.valid {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, lease.ErrBadConfig)
			}
		})
	}
	assert.Panics(t, func() { lease.New(0, 0, lease.Config{}) }, "New refuses an invalid config")
}

func TestReserveFirstDelivery(t *testing.T) {
	table := newTable(t, 10, roomyConfig)
	first := mustReserve(t, table, 5, 12)
	second := mustReserve(t, table, 6, 12)
	assert.Equal(t, lease.Reservation{Offset: 10, Nonce: nonceBase + 1, DeliveryCount: 1, DeadlineMs: 5 + visibilityMs}, first)
	assert.Equal(t, lease.Reservation{Offset: 11, Nonce: nonceBase + 2, DeliveryCount: 1, DeadlineMs: 6 + visibilityMs}, second)
	mustNotReserve(t, table, 7, 12) // nothing below the HWM is left
	assert.Equal(t, 2, table.InFlight())
	third := mustReserve(t, table, 8, 13) // the HWM grew
	assert.Equal(t, uint64(12), third.Offset)
}

func TestRedeliveryIncrementsCount(t *testing.T) {
	tests := []struct {
		name    string
		release func(table *lease.Table, r lease.Reservation) int64 // returns the time to reserve again
	}{
		{"nack", func(table *lease.Table, r lease.Reservation) int64 {
			require.NoError(t, table.Nack(r.Offset, r.Nonce, 1))
			return 1
		}},
		{"expire", func(table *lease.Table, r lease.Reservation) int64 {
			require.Equal(t, 1, table.Expire(r.DeadlineMs))
			return r.DeadlineMs
		}},
		{"lazy expiry", func(table *lease.Table, r lease.Reservation) int64 { return r.DeadlineMs }},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			table := newTable(t, 0, roomyConfig)
			first := mustReserve(t, table, 0, 5)
			now := test.release(table, first)
			second := mustReserve(t, table, now, 5)
			assert.Equal(t, first.Offset, second.Offset, "the released offset is the lowest available")
			assert.Equal(t, uint32(2), second.DeliveryCount)
			assert.Greater(t, second.Nonce, first.Nonce)
			now = test.release(table, second)
			third := mustReserve(t, table, now, 5)
			assert.Equal(t, uint32(3), third.DeliveryCount)
		})
	}
}

func TestExpiryIsLazyAtTheDeadline(t *testing.T) {
	tests := []struct {
		name      string
		nowMs     int64
		wantAgain bool
	}{
		{"one before the deadline", visibilityMs - 1, false},
		{"at the deadline", visibilityMs, true},
		{"after the deadline", visibilityMs + 50, true},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			table := newTable(t, 0, roomyConfig)
			first := mustReserve(t, table, 0, 1)
			again, ok := table.Reserve(test.nowMs, 1, visibilityMs)
			require.Equal(t, test.wantAgain, ok)
			if ok {
				assert.Equal(t, first.Offset, again.Offset)
				assert.Equal(t, uint32(2), again.DeliveryCount)
			}
			assert.Equal(t, 1, table.InFlight())
		})
	}
}

func TestStaleHandles(t *testing.T) {
	type step func(table *lease.Table, r lease.Reservation)
	nothing := func(*lease.Table, lease.Reservation) {}
	tests := []struct {
		name   string
		before step
		nonce  func(r lease.Reservation) uint64
		nowMs  int64
	}{
		{"expired at the deadline", nothing, sameNonce, visibilityMs},
		{"wrong nonce", nothing, func(r lease.Reservation) uint64 { return r.Nonce + 1 }, 1},
		{"zero nonce", nothing, func(lease.Reservation) uint64 { return 0 }, 1},
		{"nacked", func(table *lease.Table, r lease.Reservation) {
			require.NoError(t, table.Nack(r.Offset, r.Nonce, 1))
		}, sameNonce, 1},
		{"re-reserved under a new nonce", func(table *lease.Table, r lease.Reservation) {
			again := mustReserve(t, table, visibilityMs, 1)
			require.NotEqual(t, r.Nonce, again.Nonce)
		}, sameNonce, visibilityMs + 1},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			for _, operation := range []string{"ack", "extend", "nack"} {
				table := newTable(t, 0, roomyConfig)
				reservation := mustReserve(t, table, 0, 1)
				test.before(table, reservation)
				err := applyHandle(table, operation, reservation.Offset, test.nonce(reservation), test.nowMs)
				assert.ErrorIs(t, err, lease.ErrStale, operation)
			}
		})
	}
	table := newTable(t, 0, roomyConfig)
	assert.ErrorIs(t, table.Ack(7, 1, 0), lease.ErrStale, "an offset never delivered")
}

// An offset already resolved answers Ack with ErrAcked whatever the nonce
// (a retried ack learns that its first attempt landed), and Extend and
// Nack with ErrStale: there is no lease left to renew or release.
func TestResolvedOffsets(t *testing.T) {
	type step func(table *lease.Table, r lease.Reservation)
	tests := []struct {
		name    string
		resolve step
	}{
		{"acked at the frontier", func(table *lease.Table, r lease.Reservation) {
			require.NoError(t, table.Ack(r.Offset, r.Nonce, 1))
		}},
		{"skipped", func(table *lease.Table, r lease.Reservation) { table.Skip(r.Offset) }},
		{"passed by retention", func(table *lease.Table, r lease.Reservation) { table.AdvanceTo(r.Offset + 1) }},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			table := newTable(t, 0, roomyConfig)
			r := mustReserve(t, table, 0, 1)
			test.resolve(table, r)
			assert.True(t, table.Acknowledged(r.Offset))
			assert.ErrorIs(t, table.Ack(r.Offset, r.Nonce, 2), lease.ErrAcked, "the same handle again")
			assert.ErrorIs(t, table.Ack(r.Offset, r.Nonce+7, 2), lease.ErrAcked, "a nonce never issued")
			_, err := table.Extend(r.Offset, r.Nonce, 2, visibilityMs)
			assert.ErrorIs(t, err, lease.ErrStale, "extend")
			assert.ErrorIs(t, table.Nack(r.Offset, r.Nonce, 2), lease.ErrStale, "nack")
			assert.Equal(t, uint64(1), table.Committed(), "nothing changed")
		})
	}
	t.Run("acked ahead", func(t *testing.T) {
		table := newTable(t, 0, roomyConfig)
		first := mustReserve(t, table, 0, 2)
		second := mustReserve(t, table, 0, 2)
		require.NoError(t, table.Ack(second.Offset, second.Nonce, 1))
		assert.True(t, table.Acknowledged(second.Offset))
		assert.False(t, table.Acknowledged(first.Offset))
		assert.ErrorIs(t, table.Ack(second.Offset, second.Nonce, 2), lease.ErrAcked)
		assert.Equal(t, 1, table.AckedAhead(), "a repeated ack adds nothing")
		assert.ErrorIs(t, table.Nack(second.Offset, second.Nonce, 2), lease.ErrStale)
		require.NoError(t, table.Ack(first.Offset, first.Nonce, 2))
		assert.Equal(t, uint64(2), table.Committed())
	})
}

func sameNonce(r lease.Reservation) uint64 { return r.Nonce }

func applyHandle(table *lease.Table, operation string, offset, nonce uint64, nowMs int64) error {
	switch operation {
	case "ack":
		return table.Ack(offset, nonce, nowMs)
	case "extend":
		_, err := table.Extend(offset, nonce, nowMs, visibilityMs)
		return err
	}
	return table.Nack(offset, nonce, nowMs)
}

func TestOutOfOrderAcksHeldThenCollapsed(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	var reservations []lease.Reservation
	for range 5 {
		reservations = append(reservations, mustReserve(t, table, 0, 5))
	}
	steps := []struct {
		ack            int
		wantCommitted  uint64
		wantAckedAhead int
	}{
		{3, 0, 1},
		{1, 0, 2},
		{2, 0, 3},
		{0, 4, 0}, // the frontier collapses the run 1..3
		{4, 5, 0},
	}
	for _, step := range steps {
		r := reservations[step.ack]
		require.NoError(t, table.Ack(r.Offset, r.Nonce, 1))
		require.NoError(t, table.CheckInvariants())
		assert.Equal(t, step.wantCommitted, table.Committed(), "after acking %d", step.ack)
		assert.Equal(t, step.wantAckedAhead, table.AckedAhead(), "after acking %d", step.ack)
	}
	assert.Equal(t, 0, table.InFlight())
}

func TestInFlightCapYieldsNothing(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 2, AckedAheadMax: 8})
	first := mustReserve(t, table, 0, 10)
	mustReserve(t, table, 0, 10)
	mustNotReserve(t, table, 1, 10)
	require.NoError(t, table.Ack(first.Offset, first.Nonce, 1))
	third := mustReserve(t, table, 2, 10)
	assert.Equal(t, uint64(2), third.Offset)
	mustNotReserve(t, table, 3, 10)
	// The second reservation (deadline 100) lapses: its slot frees lazily.
	again := mustReserve(t, table, visibilityMs, 10)
	assert.Equal(t, uint64(1), again.Offset)
	assert.Equal(t, uint32(2), again.DeliveryCount)
}

func TestAckedAheadFullServesOnlyTheFrontier(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 8, AckedAheadMax: 2})
	var reservations []lease.Reservation
	for range 4 {
		reservations = append(reservations, mustReserve(t, table, 0, 10))
	}
	require.NoError(t, table.Ack(1, reservations[1].Nonce, 1))
	require.NoError(t, table.Ack(2, reservations[2].Nonce, 1))
	assert.ErrorIs(t, table.Ack(3, reservations[3].Nonce, 1), lease.ErrAckedAheadFull)
	assert.Equal(t, 2, table.AckedAhead(), "a refused ack changes nothing")
	assert.Equal(t, 2, table.InFlight(), "offsets 0 and 3 stay in flight")
	mustNotReserve(t, table, 2, 10) // offset 4 is above the frontier 0
	require.NoError(t, table.Nack(0, reservations[0].Nonce, 3))
	frontier := mustReserve(t, table, 4, 10)
	assert.Equal(t, uint64(0), frontier.Offset, "the frontier is still served")
	require.NoError(t, table.Ack(0, frontier.Nonce, 5))
	assert.Equal(t, uint64(3), table.Committed())
	require.NoError(t, table.Ack(3, reservations[3].Nonce, 6), "the held-back reservation is now the frontier")
	assert.Equal(t, uint64(4), table.Committed())
	assert.Equal(t, uint64(4), mustReserve(t, table, 7, 10).Offset)
}

func TestExtend(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	r := mustReserve(t, table, 0, 1)
	deadline, err := table.Extend(r.Offset, r.Nonce, 60, visibilityMs)
	require.NoError(t, err)
	assert.Equal(t, int64(60+visibilityMs), deadline)
	next, ok := table.NextDeadline()
	assert.True(t, ok)
	assert.Equal(t, deadline, next)
	mustNotReserve(t, table, r.DeadlineMs, 1) // the old deadline passed, the lease holds
	assert.Equal(t, 0, table.Expire(deadline-1))
	require.NoError(t, table.Ack(r.Offset, r.Nonce, deadline-1), "the same handle still acks")
	_, ok = table.NextDeadline()
	assert.False(t, ok)
}

func TestExpireReportsLapses(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	_, ok := table.NextDeadline()
	assert.False(t, ok)
	mustReserve(t, table, 0, 10)  // deadline 100
	mustReserve(t, table, 10, 10) // deadline 110
	mustReserve(t, table, 20, 10) // deadline 120
	next, _ := table.NextDeadline()
	assert.Equal(t, int64(100), next)
	assert.Equal(t, 0, table.Expire(99))
	assert.Equal(t, 2, table.Expire(110))
	assert.Equal(t, 1, table.InFlight())
	next, _ = table.NextDeadline()
	assert.Equal(t, int64(120), next)
	// A lapse found lazily by Ack is still reported by the next Expire.
	assert.ErrorIs(t, table.Ack(9, 1, 120), lease.ErrStale)
	assert.Equal(t, 0, table.InFlight())
	assert.Equal(t, 1, table.Expire(120))
	assert.Equal(t, 0, table.Expire(500))
}

func TestTimeNeverGoesBack(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	r := mustReserve(t, table, 0, 1)
	assert.Equal(t, 1, table.Expire(visibilityMs))
	again := mustReserve(t, table, 10, 1) // an earlier time counts as the latest seen
	assert.Equal(t, int64(visibilityMs+visibilityMs), again.DeadlineMs)
	assert.ErrorIs(t, table.Ack(r.Offset, r.Nonce, 10), lease.ErrStale)
}

func TestNoncesSkipZero(t *testing.T) {
	table := lease.New(0, math.MaxUint64-1, roomyConfig)
	nonces := []uint64{
		mustReserve(t, table, 0, 3).Nonce,
		mustReserve(t, table, 0, 3).Nonce,
		mustReserve(t, table, 0, 3).Nonce,
	}
	assert.Equal(t, []uint64{math.MaxUint64, 1, 2}, nonces)
}

func TestSkip(t *testing.T) {
	const nothing = -1
	tests := []struct {
		name           string
		setup          func(table *lease.Table)
		skip           uint64
		wantCommitted  uint64
		wantAckedAhead int
		wantInFlight   int
		wantNext       int64 // offset the next reservation takes, or nothing
	}{
		{"in-flight frontier", nil, 0, 1, 0, 3, 4},
		{"in-flight above the frontier", nil, 2, 0, 1, 3, 4},
		{"released offset", func(table *lease.Table) { require.NoError(t, table.Nack(1, nonceBase+2, 0)) }, 1, 0, 1, 3, 4},
		{"never delivered, at the cursor", nil, 4, 0, 1, 4, 5},
		{"never delivered, past the HWM", nil, 20, 0, 1, 4, 4},
		{"below the frontier", func(table *lease.Table) { require.NoError(t, table.Ack(0, nonceBase+1, 0)) }, 0, 1, 0, 3, 4},
		{"already acked ahead", func(table *lease.Table) { require.NoError(t, table.Ack(3, nonceBase+4, 0)) }, 3, 0, 1, 3, 4},
		{"ignores the acked-ahead cap", func(table *lease.Table) {
			require.NoError(t, table.Ack(1, nonceBase+2, 0))
			require.NoError(t, table.Ack(2, nonceBase+3, 0))
		}, 3, 0, 3, 1, nothing},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			// Offsets 0..3 reserved at time 0; offset o holds nonce nonceBase+o+1.
			table := newTable(t, 0, lease.Config{InFlightMax: 8, AckedAheadMax: 2})
			for range 4 {
				mustReserve(t, table, 0, 4)
			}
			if test.setup != nil {
				test.setup(table)
			}
			table.Skip(test.skip)
			require.NoError(t, table.CheckInvariants())
			assert.Equal(t, test.wantCommitted, table.Committed())
			assert.Equal(t, test.wantAckedAhead, table.AckedAhead())
			assert.Equal(t, test.wantInFlight, table.InFlight())
			next, ok := table.Reserve(1, 10, visibilityMs)
			require.Equal(t, test.wantNext != nothing, ok)
			if ok {
				assert.Equal(t, uint64(test.wantNext), next.Offset)
			}
		})
	}
}

func TestSkipLetsTheFrontierPass(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	table.Skip(1)
	table.Skip(2)
	r := mustReserve(t, table, 0, 5)
	assert.Equal(t, uint64(0), r.Offset)
	assert.Equal(t, uint64(3), mustReserve(t, table, 0, 5).Offset, "the cursor passes skipped offsets")
	require.NoError(t, table.Ack(0, r.Nonce, 1))
	assert.Equal(t, uint64(3), table.Committed())
	assert.Equal(t, 0, table.AckedAhead())
}

func TestAdvanceTo(t *testing.T) {
	tests := []struct {
		name          string
		oldest        uint64
		wantDropped   uint64
		wantCommitted uint64
		wantInFlight  int
		wantNext      uint64
	}{
		{"at the frontier", 2, 0, 2, 3, 3},
		{"below the frontier", 1, 0, 2, 3, 3},
		{"past the in-flight frontier", 3, 1, 3, 2, 3},
		{"past the released offset, then collapse", 4, 2, 6, 2, 8},
		{"into the acked run", 5, 2, 6, 2, 8},
		{"past the cursor and the HWM seen", 9, 5, 9, 0, 9},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			// Committed 2; 2 in flight, 3 released, 4 and 5 acked ahead,
			// 6 and 7 in flight; cursor 8.
			table := newTable(t, 2, roomyConfig)
			var reservations []lease.Reservation
			for range 6 {
				reservations = append(reservations, mustReserve(t, table, 0, 8))
			}
			require.NoError(t, table.Nack(3, reservations[1].Nonce, 0))
			require.NoError(t, table.Ack(4, reservations[2].Nonce, 0))
			require.NoError(t, table.Ack(5, reservations[3].Nonce, 0))
			dropped := table.AdvanceTo(test.oldest)
			require.NoError(t, table.CheckInvariants())
			assert.Equal(t, test.wantDropped, dropped)
			assert.Equal(t, test.wantCommitted, table.Committed())
			assert.Equal(t, test.wantInFlight, table.InFlight())
			next := mustReserve(t, table, 1, 12)
			assert.Equal(t, test.wantNext, next.Offset)
		})
	}
}

func TestSetConfig(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 4, AckedAheadMax: 4})
	var reservations []lease.Reservation
	for range 4 {
		reservations = append(reservations, mustReserve(t, table, 0, 20))
	}
	require.NoError(t, table.Ack(2, reservations[2].Nonce, 0))
	require.NoError(t, table.Ack(3, reservations[3].Nonce, 0))
	table.SetConfig(lease.Config{InFlightMax: 1, AckedAheadMax: 1}) // both below the current counts
	require.NoError(t, table.CheckInvariants())
	assert.Equal(t, 2, table.InFlight(), "lowering the cap drops nothing")
	mustNotReserve(t, table, 1, 20)
	assert.ErrorIs(t, table.Ack(1, reservations[1].Nonce, 1), lease.ErrAckedAheadFull)
	require.NoError(t, table.Ack(0, reservations[0].Nonce, 1))
	assert.Equal(t, uint64(1), table.Committed())
	require.NoError(t, table.Ack(1, reservations[1].Nonce, 1))
	assert.Equal(t, uint64(4), table.Committed())
	mustReserve(t, table, 2, 20)
	mustNotReserve(t, table, 2, 20)
	table.SetConfig(lease.Config{InFlightMax: 3, AckedAheadMax: 3})
	mustReserve(t, table, 3, 20)
	mustReserve(t, table, 3, 20)
	mustNotReserve(t, table, 3, 20)
	assert.Panics(t, func() { table.SetConfig(lease.Config{InFlightMax: 0, AckedAheadMax: 1}) })
}

func TestReserveRefusesNonPositiveVisibility(t *testing.T) {
	table := newTable(t, 0, roomyConfig)
	assert.Panics(t, func() { table.Reserve(0, 1, 0) })
}

// Deliverable says whether Reserve would deliver a record now: none when
// every record below the high watermark is out, none while the in-flight
// cap holds the next one back, one again once an ack frees a slot; and
// asking changes nothing.
func TestDeliverableFollowsTheCaps(t *testing.T) {
	table := newTable(t, 0, lease.Config{InFlightMax: 1, AckedAheadMax: 4})
	require.False(t, table.Deliverable(0), "nothing below the high watermark")
	require.True(t, table.Deliverable(2))
	require.True(t, table.Deliverable(2), "asking reserves nothing")
	first := mustReserve(t, table, 0, 2)
	require.False(t, table.Deliverable(2), "the in-flight cap holds record 1 back")
	require.NoError(t, table.Ack(first.Offset, first.Nonce, 1))
	require.True(t, table.Deliverable(2), "the ack freed the slot")
	mustReserve(t, table, 1, 2)
	require.False(t, table.Deliverable(2), "both records are out")
}

// ReserveReleased takes only offsets delivered before and released since
// (a lapse applied lazily included), never a new one, so Held does not
// grow.
func TestReserveReleasedTakesNoNewOffset(t *testing.T) {
	table := newTable(t, 10, roomyConfig)
	_, ok := table.ReserveReleased(1, 12, visibilityMs)
	assert.False(t, ok, "nothing was delivered yet")
	first := mustReserve(t, table, 1, 12)
	assert.Equal(t, 1, table.Held())
	_, ok = table.ReserveReleased(2, 12, visibilityMs)
	assert.False(t, ok, "offset 11 was never delivered")
	again, ok := table.ReserveReleased(first.DeadlineMs, 12, visibilityMs)
	require.True(t, ok, "the lapsed lease is taken again")
	assert.Equal(t, first.Offset, again.Offset)
	assert.Equal(t, uint32(2), again.DeliveryCount)
	assert.Equal(t, 1, table.Held())
}
