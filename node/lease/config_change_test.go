package lease_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/node/lease"
)

// configsSmall are the configurations the change test moves between:
// caps of 1 to 3 and dead letters off or after 1 or 2 deliveries.
func configsSmall() []lease.Config {
	var configs []lease.Config
	for inFlight := 1; inFlight <= 3; inFlight++ {
		for ackedAhead := 1; ackedAhead <= 3; ackedAhead++ {
			for deliveries := 0; deliveries <= 2; deliveries++ {
				configs = append(configs, lease.Config{InFlightMax: inFlight, AckedAheadMax: ackedAhead, MaxDeliveries: deliveries})
			}
		}
	}
	return configs
}

// tableAfter plays a script on a new table under cfg: each step reserves
// (0), acks the newest reservation (1, ahead of the frontier when an
// older one is out) or nacks the oldest (2, which exhausts its record at
// MaxDeliveries). Steps a cap refuses do nothing.
func tableAfter(cfg lease.Config, script []int, hwm uint64) *lease.Table {
	table := lease.New(0, nonceBase, cfg)
	var out []lease.Reservation
	for _, step := range script {
		switch step {
		case 0:
			if r, ok := table.Reserve(0, hwm, visibilityMs); ok {
				out = append(out, r)
			}
		case 1:
			if len(out) > 0 && table.Ack(out[len(out)-1].Offset, out[len(out)-1].Nonce, 0) == nil {
				out = out[:len(out)-1]
			}
		case 2:
			if len(out) > 0 && table.Nack(out[0].Offset, out[0].Nonce, 0) == nil {
				out = out[1:]
			}
		}
	}
	return table
}

// scripts lists every script of up to length steps.
func scripts(length int) [][]int {
	all := [][]int{{}}
	for i := 0; i < len(all); i++ { // all grows as it is walked
		if shorter := all[i]; len(shorter) < length {
			for step := range 3 {
				all = append(all, append(append([]int{}, shorter...), step))
			}
		}
	}
	return all
}

// A change of configuration that MayReserveMoreThan calls idle never
// makes a record reservable that was not: the node wakes no poll for it
// (metaready.go), and a poll it stranded would wait out its wait with a
// record deliverable. Every table state the scripts reach is tried under
// every change between the small configurations.
func TestAChangeThatMayReserveNothingMoreMakesNothingDeliverable(t *testing.T) {
	const hwm = 4
	configs := configsSmall()
	madeDeliverable := 0
	for _, script := range scripts(5) {
		for _, before := range configs {
			for _, after := range configs {
				table := tableAfter(before, script, hwm)
				if table.Deliverable(hwm) {
					continue
				}
				table.SetConfig(after)
				require.NoError(t, table.CheckInvariants())
				if table.Deliverable(hwm) {
					madeDeliverable++
					require.True(t, after.MayReserveMoreThan(before), "script %v: %+v -> %+v made a record deliverable", script, before, after)
				}
			}
		}
	}
	require.Positive(t, madeDeliverable, "some change made a record deliverable (the test is not blind)")
}
