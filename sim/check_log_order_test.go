package sim

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"narad/msg"
)

func appendOf(id string, offset uint64, callMs, returnMs int64) porcupine.Operation {
	return porcupine.Operation{Input: logInput{append: true, id: id}, Output: logOutput{offset: offset}, Call: callMs, Return: returnMs}
}

func readOf(offset uint64, id string, callMs, returnMs int64) porcupine.Operation {
	return porcupine.Operation{Input: logInput{offset: offset}, Output: logOutput{id: id}, Call: callMs, Return: returnMs}
}

func TestTheOffsetOrderCheckDecidesSmallHistories(t *testing.T) {
	cases := []struct {
		name  string
		ops   []porcupine.Operation
		legal bool
	}{
		{"nothing", nil, true},
		{"reads of an empty log", []porcupine.Operation{readOf(0, "", 1, 2), readOf(5, "", 3, 4)}, true},
		{"appends in order, reads after", []porcupine.Operation{appendOf("a", 0, 1, 2), appendOf("b", 1, 3, 4), readOf(1, "b", 5, 6), readOf(2, "", 5, 6)}, true},
		{"overlapping appends land in either order", []porcupine.Operation{appendOf("b", 1, 1, 10), appendOf("a", 0, 2, 3)}, true},
		{"an append meeting the next one at an instant", []porcupine.Operation{appendOf("a", 0, 5, 5), appendOf("b", 1, 1, 5)}, true},
		{"an open-ended append seen by a read", []porcupine.Operation{appendOf("a", 0, 1, math.MaxInt64), readOf(0, "a", 5, 6)}, true},
		{"a read finding nothing while the append runs", []porcupine.Operation{appendOf("a", 0, 1, 10), readOf(0, "", 2, 3), readOf(0, "a", 4, 5)}, true},
		{"two appends at one offset", []porcupine.Operation{appendOf("a", 0, 1, 2), appendOf("b", 0, 3, 4)}, false},
		{"a gap below an append", []porcupine.Operation{appendOf("b", 1, 1, 2)}, false},
		{"a gap below a read that found a record", []porcupine.Operation{appendOf("a", 0, 1, 2), readOf(2, "c", 3, 4)}, false},
		{"the prefix shrank", []porcupine.Operation{appendOf("a", 0, 1, 2), readOf(0, "", 3, 4)}, false},
		{"a read found a record before its append began", []porcupine.Operation{readOf(0, "a", 1, 2), appendOf("a", 0, 3, 4)}, false},
		{"offset order against real time", []porcupine.Operation{appendOf("b", 1, 1, 2), appendOf("a", 0, 3, 4)}, false},
		{"the later called of two reads that found nothing bounds the append", []porcupine.Operation{appendOf("a", 0, 1, 20),
			readOf(0, "", 2, 15), readOf(0, "", 10, 11), readOf(0, "a", 3, 9)}, false},
		{"a later offset found before an earlier one could land", []porcupine.Operation{appendOf("a", 0, 5, 6), appendOf("b", 1, 1, 9), readOf(1, "b", 2, 3)}, false},
	}
	for _, c := range cases {
		why := offsetOrderViolation(c.ops)
		require.Equal(t, c.legal, why == "", "%s: %s", c.name, why)
		require.Equal(t, c.legal, porcupine.CheckOperations(logModel, c.ops), "%s: porcupine agrees", c.name)
	}
}

// The offset-order check and porcupine agree on every history: random
// small ones, with overlapping, meeting and open-ended operations.
func TestTheOffsetOrderCheckAgreesWithPorcupine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		count := rapid.IntRange(1, 9).Draw(t, "operations")
		ops := make([]porcupine.Operation, 0, count)
		for i := range count {
			callMs := int64(rapid.IntRange(0, 12).Draw(t, "call"))
			returnMs := callMs + int64(rapid.IntRange(0, 6).Draw(t, "length"))
			if rapid.IntRange(0, 9).Draw(t, "open") == 0 {
				returnMs = math.MaxInt64
			}
			offset := uint64(rapid.IntRange(0, 4).Draw(t, "offset"))
			var op porcupine.Operation
			switch rapid.IntRange(0, 2).Draw(t, "kind") {
			case 0:
				op = appendOf("x", offset, callMs, returnMs)
			case 1:
				op = readOf(offset, "x", callMs, returnMs)
			default:
				op = readOf(offset, "", callMs, returnMs)
			}
			op.ClientId = i
			ops = append(ops, op)
		}
		why := offsetOrderViolation(ops)
		if legal := porcupine.CheckOperations(logModel, ops); legal != (why == "") {
			t.Fatalf("porcupine says legal=%v, the offset-order check says %q, for %+v", legal, why, ops)
		}
	})
}

// checkLogs fails a run whose history shrank a visible prefix, with the
// one-pass check's reason, and passes the same history without the read.
func TestCheckLogsFailsAShrunkPrefix(t *testing.T) {
	for _, shrunk := range []bool{false, true} {
		w := NewWorld(DefaultOptions(1))
		w.history.produceAcked([]string{"m0000001", "m0000002"}, []msg.Placement{{Partition: 0, Offset: 0}, {Partition: 0, Offset: 1}}, 10, 20)
		w.history.read("m0000002", 0, 1, 30, 31)
		if shrunk {
			w.history.readEmpty(0, 1, 40, 41)
		}
		w.checkLogs()
		if !shrunk {
			require.Nil(t, w.failure)
			require.Equal(t, string(porcupine.Ok), w.logResult)
			continue
		}
		require.NotNil(t, w.failure, "a read found nothing at offset 1 after a read found its record")
		require.Equal(t, "log-consistency", w.failure.Checker)
		require.Contains(t, w.failure.Detail, "p0 read @1 -> \"\" was called at 40 ms and found nothing there")
	}
}
