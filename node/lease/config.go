package lease

import (
	"errors"
	"fmt"
)

// CapMax is the largest value a table accepts for either cap. It bounds the
// memory of one table (delivered entries at most CapMax); topic validation
// should reject larger caps before they reach a table.
const CapMax = 1 << 20

// Config holds the flow-control caps of one partition. Both come from the
// topic (max_in_flight_per_partition, max_acked_ahead_per_partition) and may
// change through a topic alter (Table.SetConfig).
type Config struct {
	// InFlightMax is the most reserved-and-unexpired offsets the table
	// holds; at the cap Reserve yields nothing. In (0, CapMax].
	InFlightMax int
	// AckedAheadMax is the most acked offsets above the frontier the table
	// holds; when full, Reserve serves only the frontier offset and an
	// out-of-order Ack fails with ErrAckedAheadFull. In (0, CapMax].
	AckedAheadMax int
	// MaxDeliveries, when > 0, is the delivery count at which a
	// reservation that ends without an ack (expiry or nack) exhausts its
	// record: the record waits for TakeExhausted instead of redelivery
	// (dead letters). 0: never. At least 0.
	MaxDeliveries int
}

// ErrBadConfig is wrapped by every problem Config.Validate reports.
var ErrBadConfig = errors.New("lease: bad config")

// Validate reports every problem of the configuration.
func (c Config) Validate() error {
	var problems []error
	if c.InFlightMax <= 0 || c.InFlightMax > CapMax {
		problems = append(problems, fmt.Errorf("%w: in-flight max %d outside [1, %d]", ErrBadConfig, c.InFlightMax, CapMax))
	}
	if c.AckedAheadMax <= 0 || c.AckedAheadMax > CapMax {
		problems = append(problems, fmt.Errorf("%w: acked-ahead max %d outside [1, %d]", ErrBadConfig, c.AckedAheadMax, CapMax))
	}
	if c.MaxDeliveries < 0 {
		problems = append(problems, fmt.Errorf("%w: max deliveries %d below 0", ErrBadConfig, c.MaxDeliveries))
	}
	return errors.Join(problems...)
}

// MayReserveMoreThan reports whether a table whose configuration changed
// from before to c may reserve a record it could not reserve under
// before: a cap raised, or exhausted records put back in the queue (dead
// letters turned off, or a higher MaxDeliveries: Table.SetConfig). A
// change that only lowers a cap, or turns dead letters on, makes nothing
// reservable, and needs to wake no poll.
func (c Config) MayReserveMoreThan(before Config) bool {
	putsBack := before.MaxDeliveries > 0 && (c.MaxDeliveries == 0 || c.MaxDeliveries > before.MaxDeliveries)
	return c.InFlightMax > before.InFlightMax || c.AckedAheadMax > before.AckedAheadMax || putsBack
}
