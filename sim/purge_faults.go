package sim

import (
	"net/http"

	"narad/storage"
)

// The purge fault's bounds, in simulated milliseconds and operations.
const (
	// purgeFaultPercent is the share of the operator's deletes, in worlds
	// with crashes, that meet a failing removal.
	purgeFaultPercent = 50
	// purgeFailuresMax bounds the failures armed: a node retries a failed
	// removal at every tick (10 ms here), so this outlasts the create that
	// follows and the wait for the node to apply it.
	purgeFailuresMax = 400
	// purgeCrashDelayMsMin and purgeCrashDelayMsMax bound the wait, after
	// the create's 201, before the node crashes: time to apply it.
	purgeCrashDelayMsMin = 100
	purgeCrashDelayMsMax = 800
)

// purgeFault builds, on purpose, the situation partition stamps exist for
// (node: stampPartition): the operator deletes one of its topics while a
// node that holds records of it cannot remove its directory (the rename
// that begins the removal fails with an I/O error at every try), creates
// the name again at once, and once the node has had time to apply the new
// creation (the old files still there, withheld from every open) the
// node crashes. Its restart forgets which directory it was still to
// remove; only the old files' stamp then keeps the new topic from
// serving the deleted one's records, which the operator's reads check
// (control-resurrection). The situation is too narrow to arise from
// independent faults: a failed removal is retried ten milliseconds later.
type purgeFault struct {
	cp *controlPlane
	// node is the node whose removal fails, nil when no purge fault is
	// under way; topic the topic deleted.
	node  *simNode
	topic string
	// createNext is set from the delete's send until the create that
	// follows it is sent; created201 once that create was answered 201.
	createNext, created201 bool
	// readsLeft are the reads of the topic the operator makes next, once
	// the node went down after the create: they judge what it serves
	// after its restart.
	readsLeft int
}

// purgeReads is how many reads of the topic follow the node's crash: the
// first may find it still down.
const purgeReads = 3

// arm aims failing removals at the topic's directory on a node that holds
// it, ahead of the delete the operator is about to send, and reports
// whether it did.
func (f *purgeFault) arm(topic string) bool {
	w := f.cp.w
	if f.node != nil || w.opts.Faults.Crash == 0 || !w.drawsFaults() || f.cp.rng.IntN(100) >= purgeFaultPercent {
		return false
	}
	dir := "topics/" + topic
	for _, n := range w.activeNodes() {
		if _, err := n.fs.Stat(dir); err != nil || !n.up() || !w.mayTakeDown(n) {
			continue
		}
		n.fs.FailNextMatching(storage.FaultRename, storage.ErrIO, purgeFailuresMax, func(path string) bool { return path == dir })
		f.node, f.topic, f.createNext = n, topic, true
		w.countFault("purge-failure-armed")
		w.tracef("%s: the removal of %s will fail", n.id, dir)
		return true
	}
	return false
}

// forcedRead reports the topic the operator must read next, if any.
func (f *purgeFault) forcedRead() (string, bool) {
	if f.readsLeft == 0 {
		return "", false
	}
	f.readsLeft--
	return f.topic, true
}

// forcedCreate reports the topic the operator must create next, if any.
func (f *purgeFault) forcedCreate() (string, bool) {
	if !f.createNext {
		return "", false
	}
	f.createNext = false
	return f.topic, true
}

// created ends the create that follows the delete: with a 201, the node
// crashes a little later, else the fault is disarmed.
func (f *purgeFault) created(topic string, status int) {
	if f.node == nil || topic != f.topic || f.createNext {
		return
	}
	if status != http.StatusCreated {
		f.disarm()
		return
	}
	w := f.cp.w
	f.created201 = true
	delay := int64(purgeCrashDelayMsMin + f.cp.rng.IntN(purgeCrashDelayMsMax-purgeCrashDelayMsMin+1))
	w.at(delay, func() {
		n := f.node
		if n == nil || !n.up() {
			return // another fault took the node down first: its start goes on (starting)
		}
		if w.phase != phaseSafety || !w.mayTakeDown(n) {
			f.disarm()
			return
		}
		f.crashed()
		w.countFault("purge-crash")
		n.crashNow("purge-crash", f.cp.rng.IntN(2) == 0, int64(100+f.cp.rng.IntN(1_500)))
	})
}

// crashed ends the fault once its node went down after the create: the
// operator reads the topic next.
func (f *purgeFault) crashed() {
	f.disarm()
	f.readsLeft = purgeReads
}

// starting disarms the fault when its node starts again before the
// scenario crashed it (another fault took it down); after the create's
// 201, the restart is the situation the fault builds.
func (f *purgeFault) starting(n *simNode) {
	switch {
	case f.node != n:
	case f.created201:
		f.crashed() // the situation stands: another fault crashed it
	default:
		f.disarm()
	}
}

// disarm cancels the failing removals (a node restarted with them armed
// could not remove the directory of a topic it no longer knows, and its
// starts would fail) and ends the purge fault. It cancels whatever rename
// fault the node has armed: a namespace fault armed meanwhile on the node
// goes with it (MemFS keeps one rule per operation).
func (f *purgeFault) disarm() {
	if f.node != nil {
		f.node.fs.FailNext(storage.FaultRename, nil, 0)
	}
	f.node, f.createNext, f.created201 = nil, false, false
}
