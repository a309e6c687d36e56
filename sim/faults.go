package sim

import (
	"fmt"
	"sort"
	"strings"

	"narad/storage"
)

// Profile weighs the faults of a run. A zero weight never happens.
type Profile struct {
	Name string
	// Weights of each fault kind when one is drawn.
	Crash, GracefulRestart, SyncFailure, WriteFailure, NetworkLoss, SlowNetwork int
	// CrashMidSyncPercent is the chance that a sync round's fsync fails
	// after its writes (power lost mid-fsync: the node crashes and its last
	// unsynced write may tear).
	CrashMidSyncPercent int
	// MeanIntervalMs is the mean time between drawn faults.
	MeanIntervalMs int
}

// The fault profiles, by name.
var (
	ProfileNone    = Profile{Name: "none", MeanIntervalMs: 1}
	ProfileCrash   = Profile{Name: "crash", Crash: 3, GracefulRestart: 1, CrashMidSyncPercent: 1, MeanIntervalMs: 3_000}
	ProfileDisk    = Profile{Name: "disk", SyncFailure: 2, WriteFailure: 2, CrashMidSyncPercent: 2, MeanIntervalMs: 2_000}
	ProfileNetwork = Profile{Name: "network", NetworkLoss: 2, SlowNetwork: 1, MeanIntervalMs: 2_000}
	ProfileAll     = Profile{Name: "all", Crash: 3, GracefulRestart: 1, SyncFailure: 1, WriteFailure: 1,
		NetworkLoss: 2, SlowNetwork: 1, CrashMidSyncPercent: 1, MeanIntervalMs: 2_000}
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

func (p Profile) totalWeight() int {
	return p.Crash + p.GracefulRestart + p.SyncFailure + p.WriteFailure + p.NetworkLoss + p.SlowNetwork
}

// scheduleFault draws the next fault of the safety phase.
func (w *World) scheduleFault() {
	profile := w.opts.Faults
	if profile.totalWeight() == 0 {
		return
	}
	delay := int64(1 + w.faultRng.IntN(2*profile.MeanIntervalMs))
	w.at(delay, func() {
		if w.phase != phaseSafety {
			return
		}
		w.injectFault(w.drawFault())
		w.scheduleFault()
	})
}

func (w *World) drawFault() string {
	p := w.opts.Faults
	roll := w.faultRng.IntN(p.totalWeight())
	for _, kind := range []struct {
		name   string
		weight int
	}{
		{"crash", p.Crash}, {"graceful-restart", p.GracefulRestart}, {"sync-failure", p.SyncFailure},
		{"write-failure", p.WriteFailure}, {"network-loss", p.NetworkLoss}, {"slow-network", p.SlowNetwork},
	} {
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
	case "crash":
		n.crash("crash")
	case "graceful-restart":
		n.stop()
	case "sync-failure":
		n.fs.FailNext(storage.FaultSync, storage.ErrIO, 1)
		w.countFault("sync-failure-armed")
	case "write-failure":
		n.fs.FailNext(storage.FaultWrite, storage.ErrNoSpace, 1+w.faultRng.IntN(3))
		w.countFault("write-failure-armed")
	case "network-loss":
		w.network.lossProbability = 0.05 + 0.25*w.faultRng.Float64()
		w.countFault("network-loss")
		w.at(int64(200+w.faultRng.IntN(2_000)), func() { w.network.lossProbability = 0 })
	case "slow-network":
		w.network.delayMsMax = slowLinkDelayMsMax
		w.countFault("slow-network")
		w.at(int64(200+w.faultRng.IntN(2_000)), func() { w.network.delayMsMax = linkDelayMsMax })
	}
}

// maybeFailSync arms an fsync failure for the sync round about to run,
// while the safety phase lasts: its writes reach the disk's cache, the
// fsync fails, the node crashes and the unsynced tail may tear.
func (w *World) maybeFailSync(n *simNode) {
	if w.phase != phaseSafety || w.opts.Faults.CrashMidSyncPercent == 0 {
		return
	}
	if w.faultRng.IntN(100) < w.opts.Faults.CrashMidSyncPercent {
		n.fs.FailNext(storage.FaultSync, storage.ErrIO, 1)
		w.countFault("crash-mid-sync")
	}
}
