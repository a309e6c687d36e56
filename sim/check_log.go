package sim

import (
	"fmt"
	"maps"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// logCheckTimeout bounds porcupine per run. Past it porcupine answers
// Unknown and the offset-order check's verdict stands (checkLogs); a
// legal history porcupine could not finish in a minute cost the run that
// minute, and its outcome depended on the machine's speed.
const logCheckTimeout = 10 * time.Second

// logInput is one operation on a partition's log: an append of an id, or
// a read of an offset.
type logInput struct {
	partition int
	append    bool
	id        string
	offset    uint64
}

// logOutput is what the operation saw: the offset an append got, or the id
// a read returned ("" for nothing at that offset yet).
type logOutput struct {
	offset uint64
	id     string
}

// logModel is a partition's log reduced to its visible length: an append
// must land exactly at the end, a read of an offset below the end must
// find a record and a read at or past it must find none. Which record sits
// at an offset is checked apart (checkLogContents): one append claims each
// offset, so the pair is the full log model with a constant-size state.
var logModel = porcupine.Model{
	Partition: partitionOperations,
	Init:      func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		length, in, out := state.(uint64), input.(logInput), output.(logOutput)
		if in.append {
			return out.offset == length, length + 1
		}
		if out.id == "" {
			return in.offset >= length, length
		}
		return in.offset < length, length
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(logInput), output.(logOutput)
		if in.append {
			return fmt.Sprintf("p%d append %s -> @%d", in.partition, in.id, out.offset)
		}
		return fmt.Sprintf("p%d read @%d -> %q", in.partition, in.offset, out.id)
	},
}

func partitionOperations(history []porcupine.Operation) [][]porcupine.Operation {
	byPartition := map[int][]porcupine.Operation{}
	var keys []int
	for _, op := range history {
		p := op.Input.(logInput).partition
		if _, ok := byPartition[p]; !ok {
			keys = append(keys, p)
		}
		byPartition[p] = append(byPartition[p], op)
	}
	sort.Ints(keys)
	out := make([][]porcupine.Operation, 0, len(keys))
	for _, p := range keys {
		out = append(out, byPartition[p])
	}
	return out
}

// logOperations builds the porcupine history: every acknowledged append,
// every read, and, for records observed in a log whose produce never got
// an answer, an append patched from the observation with an open end
// (return = +infinity), as etcd's robustness tests patch theirs.
func (h *history) logOperations() []porcupine.Operation {
	var ops []porcupine.Operation
	for partition := range h.partitionsSeen() {
		known := map[uint64]bool{}
		for _, a := range h.appends[partition] {
			known[a.offset] = true
			ops = append(ops, porcupine.Operation{
				Input: logInput{partition: partition, append: true, id: a.id}, Call: a.callMs,
				Output: logOutput{offset: a.offset}, Return: a.retMs,
			})
		}
		ops = append(ops, h.patchedAppends(partition, known)...)
		for _, r := range h.reads[partition] {
			ops = append(ops, porcupine.Operation{
				Input: logInput{partition: partition, offset: r.offset}, Call: r.callMs,
				Output: logOutput{id: r.id}, Return: r.retMs,
			})
		}
	}
	for i := range ops {
		ops[i].ClientId = i
	}
	return ops
}

func (h *history) patchedAppends(partition int, known map[uint64]bool) []porcupine.Operation {
	seen := h.observationsWithCorrupt(partition)
	offsets := make([]uint64, 0, len(seen))
	for offset := range seen { //determinism:ok sorted below
		if !known[offset] {
			offsets = append(offsets, offset)
		}
	}
	sort.Slice(offsets, func(i, j int) bool { return offsets[i] < offsets[j] })
	var ops []porcupine.Operation
	for _, offset := range offsets {
		id := seen[offset]
		callMs, attempted := h.firstCallMs[id]
		if !attempted {
			continue // the accounting checker reports it as unexpected
		}
		ops = append(ops, porcupine.Operation{
			Input: logInput{partition: partition, append: true, id: id}, Call: callMs,
			Output: logOutput{offset: offset}, Return: math.MaxInt64,
		})
	}
	return ops
}

// observationsWithCorrupt returns the records observed in a partition,
// with those a media fault destroyed: such a frame can no longer be read,
// yet its append happened, so a record whose produce was never answered
// and never read before the fault still holds its offset in the model.
func (h *history) observationsWithCorrupt(partition int) map[uint64]string {
	seen := h.observations[partition]
	var merged map[uint64]string
	for at, id := range h.corrupt { //determinism:ok a map is built, read in sorted order by the caller
		if at.Partition != partition {
			continue
		}
		if _, observed := seen[at.Offset]; observed {
			continue
		}
		if merged == nil {
			merged = maps.Clone(seen)
			if merged == nil {
				merged = map[uint64]string{}
			}
		}
		merged[at.Offset] = id
	}
	if merged == nil {
		return seen
	}
	return merged
}

// partitionsSeen returns a count: partitions are numbered 0..n-1.
func (h *history) partitionsSeen() int {
	n := 0
	for p := range h.appends { //determinism:ok max only
		n = max(n, p+1)
	}
	for p := range h.reads { //determinism:ok max only
		n = max(n, p+1)
	}
	return n
}

// checkLogContents checks that an offset always holds one record: every
// read of it returns the same id, the id its acknowledged append placed
// there, if any.
func (w *World) checkLogContents() {
	for partition := range w.history.partitionsSeen() {
		placed := map[uint64]string{}
		for _, a := range w.history.appends[partition] {
			if other, ok := placed[a.offset]; ok && other != a.id {
				w.fail("log-consistency", "p%d@%d was acknowledged for both %s and %s", partition, a.offset, other, a.id)
				return
			}
			placed[a.offset] = a.id
		}
		for _, r := range w.history.reads[partition] {
			if r.id == "" {
				continue
			}
			want, ok := placed[r.offset]
			if !ok {
				want = w.history.observations[partition][r.offset]
			}
			if r.id != want {
				w.fail("log-consistency", "p%d@%d read as %s at %d ms, but it holds %s", partition, r.offset, r.id, r.callMs, want)
				return
			}
		}
	}
}

// checkLogs decides every partition's log history with the one-pass
// offset-order check (check_log_order.go), then has porcupine check the
// whole history too: a verdict of porcupine's that contradicts the order
// check fails the run (one of the two checkers is wrong), and porcupine
// running out of its budget (Unknown) leaves the order check's verdict
// (Report.PorcupineUnknown says so, outside the summary line). The run's
// outcome and its summary never depend on the machine's speed.
func (w *World) checkLogs() {
	w.checkLogContents()
	if w.failure != nil {
		return
	}
	ops := w.history.logOperations()
	w.logOperations = len(ops)
	for _, partition := range partitionOperations(ops) {
		if why := offsetOrderViolation(partition); why != "" {
			w.logResult = string(porcupine.Illegal) // decided without porcupine
			w.fail("log-consistency", "p%d: %s: an offset changed its record or a visible prefix shrank",
				partition[0].Input.(logInput).partition, why)
			return
		}
	}
	result := porcupine.CheckOperationsTimeout(logModel, ops, logCheckTimeout)
	w.logResult, w.porcupineUnknown = string(porcupine.Ok), result == porcupine.Unknown
	if result == porcupine.Illegal {
		w.logResult = string(result)
		w.fail("log-checkers", "porcupine says %s over %d operations (%s), but the offset-order check linearizes every partition",
			result, len(ops), illegalPartitions(ops))
	}
}

// illegalPartitions names the partitions whose own history porcupine
// rejects, each with its longest legal prefix's last operation, to point
// at where a failed check went wrong.
func illegalPartitions(ops []porcupine.Operation) string {
	var parts []string
	for _, partition := range partitionOperations(ops) {
		result, info := porcupine.CheckOperationsVerbose(logModel, partition, logCheckTimeout)
		if result == porcupine.Ok {
			continue
		}
		name := fmt.Sprintf("p%d: %s", partition[0].Input.(logInput).partition, result)
		var best []porcupine.Operation
		for _, linearizations := range info.PartialLinearizationsOperations() {
			for _, candidate := range linearizations {
				if len(candidate) > len(best) {
					best = candidate
				}
			}
		}
		if len(best) > 0 {
			last := best[len(best)-1]
			name += fmt.Sprintf(", legal up to %s at %d ms", logModel.DescribeOperation(last.Input, last.Output), last.Call)
		}
		parts = append(parts, name)
	}
	return strings.Join(parts, "; ")
}
