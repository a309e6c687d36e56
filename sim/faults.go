package sim

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"narad/node"
	"narad/storage"
)

// Profile weighs the faults of a run. A zero weight never happens.
type Profile struct {
	Name string
	// Weights of each fault kind when one is drawn.
	Crash, GracefulRestart, SyncFailure, WriteFailure, NetworkLoss, SlowNetwork int
	// Weights of the faults of a multi-node world (a single node ignores
	// them): kill the metastore leader or a follower; cut one node off
	// (often the leader), split a minority from the majority, or drop one
	// direction between two nodes; reset one connection.
	KillLeader, KillFollower, Isolate, Split, OneWay, ConnectionReset int
	// CrashMidSyncPercent is the chance that a sync round's fsync fails
	// after its writes (power lost mid-fsync: the node crashes and its last
	// unsynced write may tear).
	CrashMidSyncPercent int
	// MeanIntervalMs is the mean time between drawn faults.
	MeanIntervalMs int
}

// The fault profiles, by name.
var (
	ProfileNone  = Profile{Name: "none", MeanIntervalMs: 1}
	ProfileCrash = Profile{Name: "crash", Crash: 3, GracefulRestart: 1, KillLeader: 2, KillFollower: 2,
		CrashMidSyncPercent: 1, MeanIntervalMs: 3_000}
	ProfileDisk    = Profile{Name: "disk", SyncFailure: 2, WriteFailure: 2, CrashMidSyncPercent: 2, MeanIntervalMs: 2_000}
	ProfileNetwork = Profile{Name: "network", NetworkLoss: 2, SlowNetwork: 1, Isolate: 2, Split: 1, OneWay: 2,
		ConnectionReset: 2, MeanIntervalMs: 2_000}
	ProfileAll = Profile{Name: "all", Crash: 3, GracefulRestart: 1, SyncFailure: 1, WriteFailure: 1,
		NetworkLoss: 2, SlowNetwork: 1, KillLeader: 2, KillFollower: 1, Isolate: 1, Split: 1, OneWay: 1,
		ConnectionReset: 1, CrashMidSyncPercent: 1, MeanIntervalMs: 2_000}
	profiles = []Profile{ProfileNone, ProfileCrash, ProfileDisk, ProfileNetwork, ProfileAll}
)

// ProfileByName finds a profile.
func ProfileByName(name string) (Profile, error) {
	var names []string
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	return Profile{}, fmt.Errorf("unknown fault profile %q (have %s)", name, strings.Join(names, ", "))
}

// faultWeight is one kind of fault with its weight in a draw.
type faultWeight struct {
	name   string
	weight int
}

// weights lists the fault kinds a world of clustered-or-not nodes draws
// from. The faults of a cluster come last and weigh nothing for a single
// node, so a single node's draws are the same as before they existed.
func (p Profile) weights(clustered bool) []faultWeight {
	kinds := []faultWeight{
		{"crash", p.Crash}, {"graceful-restart", p.GracefulRestart}, {"sync-failure", p.SyncFailure},
		{"write-failure", p.WriteFailure}, {"network-loss", p.NetworkLoss}, {"slow-network", p.SlowNetwork},
	}
	cluster := []faultWeight{
		{"kill-leader", p.KillLeader}, {"kill-follower", p.KillFollower}, {"isolate", p.Isolate},
		{"split", p.Split}, {"one-way", p.OneWay}, {"connection-reset", p.ConnectionReset},
	}
	for _, kind := range cluster {
		if !clustered {
			kind.weight = 0
		}
		kinds = append(kinds, kind)
	}
	return kinds
}

func totalWeight(kinds []faultWeight) int {
	total := 0
	for _, kind := range kinds {
		total += kind.weight
	}
	return total
}

// scheduleFault draws the next fault of the safety phase.
func (w *World) scheduleFault() {
	profile := w.opts.Faults
	if totalWeight(profile.weights(w.clustered())) == 0 {
		return
	}
	delay := int64(1 + w.faultRng.IntN(2*profile.MeanIntervalMs))
	w.at(delay, func() {
		if w.phase != phaseSafety {
			return
		}
		if w.drawsFaults() {
			w.injectFault(w.drawFault())
		}
		w.scheduleFault()
	})
}

func (w *World) drawFault() string {
	kinds := w.opts.Faults.weights(w.clustered())
	roll := w.faultRng.IntN(totalWeight(kinds))
	for _, kind := range kinds {
		if roll < kind.weight {
			return kind.name
		}
		roll -= kind.weight
	}
	panic("sim: fault draw out of range")
}

func (w *World) injectFault(kind string) {
	n := w.randomNode(w.faultRng)
	switch kind {
	case "crash", "graceful-restart", "sync-failure":
		if !w.mayTakeDown(n) {
			w.tracef("fault %s of %s skipped: a minority is down or at risk already", kind, n.id)
			return
		}
	}
	switch kind {
	case "crash":
		n.crash("crash")
	case "graceful-restart":
		n.stop()
	case "sync-failure":
		w.armSyncFailure(n)
	case "write-failure":
		n.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1+w.faultRng.IntN(3))
		w.countFault("write-failure-armed")
		w.fanoutFaultLanded("disk", n)
		w.armReadSideFault(n)
		w.armNamespaceFault(n)
	case "network-loss":
		w.network.lossProbability = 0.05 + 0.25*w.faultRng.Float64()
		w.countFault("network-loss")
		w.at(int64(200+w.faultRng.IntN(2_000)), func() { w.network.lossProbability = 0 })
	case "slow-network":
		w.network.delayMsMax = slowLinkDelayMsMax
		w.peers.slow = true
		w.countFault("slow-network")
		w.at(int64(200+w.faultRng.IntN(2_000)), func() { w.network.delayMsMax, w.peers.slow = linkDelayMsMax, false })
	default:
		w.injectClusterFault(kind)
	}
}

// readSideFaults are the disk operations a read-side fault fails: opening
// a file (a sealed segment reopened for a read, recovery), reading one,
// and removing one (retention, a topic's delete).
var readSideFaults = []storage.FaultOp{storage.FaultOpen, storage.FaultRead, storage.FaultRemove}

// armReadSideFault arms, in half of the write failures, the next one to
// three operations of one read-side kind to fail with an I/O error, from
// a stream of its own (the other draws of a run stay as they were).
func (w *World) armReadSideFault(n *simNode) {
	if w.readFaultRng.IntN(2) == 0 {
		return
	}
	op := readSideFaults[w.readFaultRng.IntN(len(readSideFaults))]
	n.fs.FailNext(op, storage.ErrIO, 1+w.readFaultRng.IntN(3))
	w.countFault(op.String() + "-failure-armed")
}

// namespaceFault is one kind of failure of an operation on names: the
// operation, and the paths it is aimed at (nil: whichever comes next).
type namespaceFault struct {
	op    storage.FaultOp
	name  string
	match func(path string) bool
	// jobOnly: the operations aimed at run in a move's job, whose failure
	// restarts the move and never takes the node down, so the fault needs
	// no room in the down budget and waits for its operation however long.
	jobOnly bool
}

// namespaceFaults are the failures a namespace fault draws from. Unaimed,
// they mostly hit what a node does most: starts (its incarnation file,
// recovery's files) and the cursor and committed-offset replaces. Aimed,
// they reach the paths that rarely come next: a segment's create (a
// roll, a staged copy's segment, recovery's first segment), a move
// install's rename out of moves/, and a partition directory's sync (a
// sync round's, after a roll).
var namespaceFaults = []namespaceFault{
	{op: storage.FaultCreate, name: "create"},
	{op: storage.FaultRename, name: "rename"},
	{op: storage.FaultSyncDir, name: "syncdir"},
	{op: storage.FaultCreate, name: "create-segment", match: func(path string) bool { return strings.HasSuffix(path, ".log") }},
	{op: storage.FaultRename, name: "rename-install", match: partitionLevelUnder("moves"), jobOnly: true}, // a staged copy's directory
	{op: storage.FaultSyncDir, name: "syncdir-partition", match: partitionLevelUnder("topics")},
}

// partitionLevelUnder matches the paths root/T/P: a partition's directory
// (root "topics") or a staged copy's (root "moves").
func partitionLevelUnder(root string) func(path string) bool {
	return func(path string) bool { return strings.HasPrefix(path, root+"/") && strings.Count(path, "/") == 2 }
}

// armNamespaceFault arms, in half of the write failures, the next one to
// three operations of one namespace kind to fail, from a stream of its
// own: a create with the error of a process out of descriptors, a rename
// or directory sync with an I/O error. Any of them failing inside a sync
// round (a cursor file's replace, the directory's sync) crashes the node
// as a failed fsync does, so they are armed only on a node the run may
// take down, and in a cluster the node counts as at risk while the fault
// is armed, at most syncFaultArmedMsMax (as an armed fsync failure does);
// but for a fault aimed at a move's job (jobOnly).
func (w *World) armNamespaceFault(n *simNode) {
	if w.namespaceFaultRng.IntN(2) == 0 {
		return
	}
	fault := namespaceFaults[w.namespaceFaultRng.IntN(len(namespaceFaults))]
	count := 1 + w.namespaceFaultRng.IntN(3)
	if !fault.jobOnly && !w.mayTakeDown(n) {
		return
	}
	err := storage.ErrIO
	if fault.op == storage.FaultCreate {
		err = errTooManyOpenFiles
	}
	n.fs.FailNextMatching(fault.op, err, count, fault.match)
	w.countFault(fault.name + "-failure-armed")
	switch {
	case fault.jobOnly:
		n.forgetRisk(fault.op)
	case w.clustered():
		w.markAtRisk(n, fault.op)
	}
}

// errTooManyOpenFiles is the error of a create that found the process
// out of descriptors (as EMFILE reads).
var errTooManyOpenFiles = errors.New("too many open files")

// maybeFailSync arms an fsync failure for the sync round about to run,
// while the safety phase lasts: its writes reach the disk's cache, the
// fsync fails, the node crashes and the unsynced tail may tear.
func (w *World) maybeFailSync(n *simNode, rd node.Ready) {
	if !w.drawsFaults() || w.opts.Faults.CrashMidSyncPercent == 0 || !touchesDisk(rd) {
		return
	}
	if w.faultRng.IntN(100) < w.opts.Faults.CrashMidSyncPercent && w.mayTakeDown(n) {
		n.fs.FailNext(storage.FaultSync, storage.ErrIO, 1)
		w.countFault("crash-mid-sync")
	}
}

// touchesDisk reports whether a Ready's sync round fsyncs a partition's
// files (the metastore's round writes bbolt, not the simulated disk).
func touchesDisk(rd node.Ready) bool {
	for _, sync := range rd.Syncs {
		if sync.Data() || sync.CommittedSync() || sync.CursorWrites() > 0 {
			return true
		}
	}
	return false
}
