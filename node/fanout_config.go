package node

import (
	"fmt"

	"narad/msg"
)

// FanoutConfig bounds the copy of parent partitions into their children
// (docs/operations.md#settings). A batch is one relay of one cursor.
type FanoutConfig struct {
	// BatchRecordsMax bounds the records of one batch; within [1,
	// msg.ProduceBatchRecordsMax], since a batch travels to the child's
	// owners as a produce.
	BatchRecordsMax int
	// BatchBytesMax bounds the payload and key bytes of one batch (a
	// batch always takes at least one record); within [1,
	// msg.ProduceBatchBytesMax].
	BatchBytesMax int64
	// LingerMs is how long a cursor waits for a batch to fill before it
	// sends a partial one; >= 0.
	LingerMs int64
	// RetryMs is how long a cursor waits after a failed batch; > 0.
	RetryMs int64
	// StallLogIntervalMs spaces the log lines of one stalled cursor; > 0.
	StallLogIntervalMs int64
	// CursorPersistIntervalMs is how often, at most, the cursors of a
	// partition that advanced are written to their files, by the
	// partition's sync round (a crash copies the batches since again);
	// > 0.
	CursorPersistIntervalMs int64
	// AttachClockSkewMs is how far the nodes' clocks may disagree: an
	// attach's epoch starts at the records committed this long before
	// the attach's time, since that time is the proposer's clock and a
	// record's is its owner's (a record committed after the attach on a
	// clock behind would look older). >= 0; the child may get a few
	// records committed just before the attach, never miss one after.
	AttachClockSkewMs int64
}

// DefaultFanoutConfig returns the defaults.
func DefaultFanoutConfig() FanoutConfig {
	return FanoutConfig{BatchRecordsMax: msg.ProduceBatchRecordsMax, BatchBytesMax: 4 << 20, LingerMs: 25,
		RetryMs: 1_000, StallLogIntervalMs: 60_000, CursorPersistIntervalMs: 100, AttachClockSkewMs: 1_000}
}

// problems lists what is wrong with the bounds.
func (c FanoutConfig) problems() []error {
	var found []error
	if c.BatchRecordsMax < 1 || c.BatchRecordsMax > msg.ProduceBatchRecordsMax {
		found = append(found, fmt.Errorf("fan-out batch records max %d not in [1, %d]", c.BatchRecordsMax, msg.ProduceBatchRecordsMax))
	}
	if c.BatchBytesMax < 1 || c.BatchBytesMax > msg.ProduceBatchBytesMax {
		found = append(found, fmt.Errorf("fan-out batch bytes max %d not in [1, %d]", c.BatchBytesMax, msg.ProduceBatchBytesMax))
	}
	if c.LingerMs < 0 || c.RetryMs <= 0 || c.StallLogIntervalMs <= 0 || c.CursorPersistIntervalMs <= 0 {
		found = append(found, fmt.Errorf("fan-out linger %d ms must be >= 0, retry %d ms, stall log interval %d ms and cursor persist interval %d ms > 0",
			c.LingerMs, c.RetryMs, c.StallLogIntervalMs, c.CursorPersistIntervalMs))
	}
	if c.AttachClockSkewMs < 0 {
		found = append(found, fmt.Errorf("fan-out attach clock skew %d ms must be >= 0", c.AttachClockSkewMs))
	}
	return found
}
