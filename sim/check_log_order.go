package sim

import (
	"fmt"
	"math"

	"github.com/anishathalye/porcupine"
)

// The log model (logModel) has a structure porcupine does not know: its
// appends take the offsets one by one, so in any linearization the append
// of offset k comes after that of k-1, and a read relates to one append
// only (a read that found offset k comes after k's append, a read that
// found nothing at k before it). That decides linearizability exactly in
// one pass over the offsets, where porcupine's search may not end: a hot
// partition's history of hundreds of appends, long polls that overlap
// many of them and appends observed but never answered (open-ended) ran
// porcupine past its budget on a legal history (three-node moves seed
// 6314050, disk faults: 627 appends and 2,186 reads on one partition).
// checkLogs runs both: this check decides, porcupine checks it.

// offsetOrder is what the one-pass check needs of one offset.
type offsetOrder struct {
	// appends are the appends that claim the offset (more than one is
	// illegal: each append must land at the end).
	appends []porcupine.Operation
	// emptyCallMs is the latest call of a read that found nothing at the
	// offset (the append must take effect after it); foundReturnMs the
	// earliest return of a read that found a record there (the append must
	// take effect before it). Absent bounds are ±infinity.
	emptyCallMs, foundReturnMs int64
	// emptyRead and foundRead are those reads, for the explanation.
	emptyRead, foundRead porcupine.Operation
}

// offsetOrderViolation decides logModel over one partition's operations:
// "" when a linearization exists, else why none does. Each append k is
// given the earliest point it may take effect at: no earlier than its
// call, the previous append's point and the call of every read that found
// nothing at k; the history is linearizable exactly when that point is
// no later than the append's return and every return of a read that found
// k. Points at one instant may be ordered freely: porcupine orders calls
// before returns at equal times, so operations that meet at an instant
// overlap.
func offsetOrderViolation(ops []porcupine.Operation) string {
	offsets, last, bounded := offsetOrders(ops)
	if !bounded {
		return "" // reads that found nothing, and nothing else
	}
	point := int64(math.MinInt64)
	for k := uint64(0); k <= last; k++ {
		o, ok := offsets[k]
		if !ok || len(o.appends) == 0 {
			return fmt.Sprintf("nothing was appended at offset %d, yet offset %d was appended or read", k, last)
		}
		if len(o.appends) > 1 {
			return fmt.Sprintf("%s and %s both claim offset %d", describeLogOp(o.appends[0]), describeLogOp(o.appends[1]), k)
		}
		a := o.appends[0]
		point = max(point, a.Call, o.emptyCallMs)
		switch {
		case point > a.Return && point == o.emptyCallMs:
			return fmt.Sprintf("%s returned at %d ms, but %s was called at %d ms and found nothing there",
				describeLogOp(a), a.Return, describeLogOp(o.emptyRead), point)
		case point > a.Return:
			return fmt.Sprintf("%s returned at %d ms, before the appends of the offsets below it could all take effect (%d ms at the earliest)",
				describeLogOp(a), a.Return, point)
		case point > o.foundReturnMs:
			return fmt.Sprintf("%s returned at %d ms, before %s could take effect (%d ms at the earliest)",
				describeLogOp(o.foundRead), o.foundReturnMs, describeLogOp(a), point)
		}
	}
	return ""
}

// offsetOrders gathers, by offset, the appends and the read bounds of
// one partition's operations, and the highest offset appended or found
// (bounded is false when there is none: reads that found nothing bound
// nothing then).
func offsetOrders(ops []porcupine.Operation) (offsets map[uint64]*offsetOrder, last uint64, bounded bool) {
	offsets = map[uint64]*offsetOrder{}
	at := func(offset uint64) *offsetOrder {
		o := offsets[offset]
		if o == nil {
			o = &offsetOrder{emptyCallMs: math.MinInt64, foundReturnMs: math.MaxInt64}
			offsets[offset] = o
		}
		return o
	}
	for _, op := range ops {
		in, out := op.Input.(logInput), op.Output.(logOutput)
		switch {
		case in.append:
			at(out.offset).appends = append(at(out.offset).appends, op)
			last, bounded = max(last, out.offset), true
		case out.id == "":
			if o := at(in.offset); op.Call > o.emptyCallMs {
				o.emptyCallMs, o.emptyRead = op.Call, op
			}
		default:
			if o := at(in.offset); op.Return < o.foundReturnMs {
				o.foundReturnMs, o.foundRead = op.Return, op
			}
			last, bounded = max(last, in.offset), true
		}
	}
	return offsets, last, bounded
}

func describeLogOp(op porcupine.Operation) string {
	return logModel.DescribeOperation(op.Input, op.Output)
}
