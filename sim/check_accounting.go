package sim

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
)

// accounting is the Jepsen-style total-queue accounting of a run.
type accounting struct {
	Attempts, Acked, Delivered, Lost, Unexpected, Duplicated, Recovered int
	// Excused counts the acknowledged records never consumed that a media
	// fault destroyed at every placement they were acknowledged at
	// (history.excused): not lost by the broker.
	Excused int
	// LostIDs lists up to lostIDsShown lost ids, sorted.
	LostIDs []string
}

const lostIDsShown = 10

func (h *history) account() accounting {
	a := accounting{Attempts: len(h.firstCallMs), Acked: len(h.acked), Delivered: len(h.deliveries)}
	for id := range h.acked { //determinism:ok counted, and the ids listed are sorted
		if h.deliveries[id] == 0 && h.excused(id) {
			a.Excused++
		} else if h.deliveries[id] == 0 {
			a.Lost++
			a.LostIDs = append(a.LostIDs, id)
		}
	}
	sort.Strings(a.LostIDs)
	a.LostIDs = a.LostIDs[:min(len(a.LostIDs), lostIDsShown)]
	for id, count := range h.deliveries { //determinism:ok only counted
		if _, attempted := h.firstCallMs[id]; !attempted {
			a.Unexpected++
		}
		a.Duplicated += count - 1
		if !h.acked[id] {
			a.Recovered++
		}
	}
	for _, seen := range h.observations { //determinism:ok only counted
		for _, id := range seen { //determinism:ok only counted
			if _, attempted := h.firstCallMs[id]; !attempted {
				a.Unexpected++
			}
		}
	}
	return a
}

// checkAccounting fails the run when an acknowledged record was never
// consumed or a record nobody produced was read.
func (w *World) checkAccounting() {
	a := w.history.account()
	switch {
	case a.Lost > 0:
		w.fail("no-loss", "%d records answered 202 were never consumed (first: %v)", a.Lost, w.history.placed(a.LostIDs))
	case a.Unexpected > 0:
		w.fail("nothing-invented", "%d records were read that nobody produced", a.Unexpected)
	}
}

// placed describes ids with where their acknowledged appends put them.
func (h *history) placed(ids []string) []string {
	where := map[string]string{}
	for _, partition := range slices.Sorted(maps.Keys(h.appends)) {
		for _, a := range h.appends[partition] {
			where[a.id] = fmt.Sprintf("%s@p%d/%d", a.id, partition, a.offset)
		}
	}
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = cmp.Or(where[id], id)
	}
	return out
}
