package sim

import "maps"

// The oracles are checkers that share no code with what they check: a
// naive model of the metastore beside every replica (check_meta_model.go),
// a client-side model of consumer leases (check_leases.go) and a
// linearizability check of the topics the clients create, alter, read
// and delete (check_control.go).

// afterStepOracles runs the oracles that look at the nodes after a step.
func (w *World) afterStepOracles(touched []*simNode) {
	if w.metaModel != nil {
		w.metaModel.afterStep(touched)
	}
}

// finishOracles runs the oracles' end-of-run checks; a run that already
// failed is not checked further.
func (w *World) finishOracles() {
	if w.failure == nil && w.metaModel != nil {
		w.metaModel.finish()
	}
	if w.failure == nil {
		w.control.check()
	}
}

// oracleCounts says how much each oracle checked.
func (w *World) oracleCounts() map[string]int {
	counts := map[string]int{"lease-successes": w.leases.checked, "lease-stale-excused": w.leases.stale,
		"lease-successes-after-flip": w.leases.afterFlip, "lease-stale-flip-excused": w.leases.flipExcused,
		"control-ops": len(w.control.operations), "control-records-judged": w.control.records.judged,
		"owner-deleted-creation-excused": w.owners.deletedCreationAppends}
	if w.metaModel != nil {
		counts["meta-model-comparisons"] = w.metaModel.comparisons
		counts["meta-model-touched-comparisons"] = w.metaModel.touchedComparisons
		counts["meta-model-entries"] = len(w.metaModel.log)
		maps.Copy(counts, w.metaModel.refusals)
	}
	return counts
}
