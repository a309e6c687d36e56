package sim

import "math/rand/v2"

// Disk pressure: in a seeded share of the cluster worlds whose fault
// profile has disk faults (disk, all), nodes run short
// of disk for a few seconds at a time during the safety phase. The world
// tells each node its free space as the host does (node.SetDiskFree, about
// once a second): none for a node under pressure, far more than its
// reserve for the others. A node short of room refuses writes into its
// partitions, and its next heartbeat says so in the metastore
// (meta.Member.DiskLow): the others then send it no keyless records and
// the planner moves nothing to it. Several nodes may be short at once,
// never all of them. The simulated disks themselves never fill; this
// drives the node's reserve and the cluster's view of it, whose records
// the usual checkers then account for.
const (
	// diskPressurePercent of the cluster worlds have disk pressure.
	diskPressurePercent = 30
	// diskReportMs is how often the world tells every node its free space
	// (the host reads statfs once a second).
	diskReportMs = 1_000
	// A pressure starts diskPressureGapMsMin plus up to
	// diskPressureGapMsSpread after the last one started, and lasts
	// diskPressureMsMin plus up to diskPressureMsSpread: a few heartbeat
	// intervals, so the others learn of it and of its end.
	diskPressureGapMsMin    = 1_000
	diskPressureGapMsSpread = 5_000
	diskPressureMsMin       = 1_500
	diskPressureMsSpread    = 4_500
	// diskRoomyBytes is the free space a node not under pressure is told:
	// far above any reserve, and more than a run appends.
	diskRoomyBytes = 1 << 40
)

// diskPressure is the state of a world's disk pressure; nil in a world
// without it. Only its own methods change it.
type diskPressure struct {
	w   *World
	rng *rand.Rand
	// untilMs holds the nodes under pressure now, with when it ends.
	untilMs map[*simNode]int64
}

// newDiskPressure draws whether the world has disk pressure; the draw is
// made in every world, so that the stream stays aligned.
func newDiskPressure(w *World) *diskPressure {
	rng := newRand(w.opts.Seed, diskPressureStream)
	diskFaults := w.opts.Faults.SyncFailure+w.opts.Faults.WriteFailure > 0
	if rng.IntN(100) >= diskPressurePercent || !w.opts.DiskPressure || !w.clustered() || !diskFaults {
		return nil
	}
	return &diskPressure{w: w, rng: rng, untilMs: map[*simNode]int64{}}
}

// start begins the reports and the first pressure; called as the safety
// phase starts.
func (d *diskPressure) start() {
	if d == nil {
		return
	}
	d.w.at(0, d.report)
	d.w.at(d.gapMs(), d.press)
}

func (d *diskPressure) gapMs() int64 {
	return int64(diskPressureGapMsMin + d.rng.IntN(diskPressureGapMsSpread))
}

// press puts one more node under pressure, when faults may be drawn and
// at least one other node would still have room, then draws the next.
func (d *diskPressure) press() {
	w := d.w
	if w.phase != phaseSafety {
		return
	}
	defer w.at(d.gapMs(), d.press)
	var candidates []*simNode
	for _, n := range w.activeNodes() {
		if _, pressed := d.untilMs[n]; n.up() && !pressed {
			candidates = append(candidates, n)
		}
	}
	if !w.drawsFaults() || len(candidates) < 2 {
		return
	}
	n := candidates[d.rng.IntN(len(candidates))]
	d.untilMs[n] = w.nowMs + int64(diskPressureMsMin+d.rng.IntN(diskPressureMsSpread))
	w.countFault("disk-pressure")
	w.tracef("%s: its disk is short of room until %d ms", n.id, d.untilMs[n])
	d.tell(n)
}

// report tells every node its free space, ending the pressures that are
// over (all of them once the world healed), and comes again in
// diskReportMs while the run lasts.
func (d *diskPressure) report() {
	w := d.w
	for _, n := range w.activeNodes() {
		if until, pressed := d.untilMs[n]; pressed && (w.nowMs >= until || w.phase != phaseSafety) {
			delete(d.untilMs, n)
			w.tracef("%s: its disk has room again", n.id)
		}
		d.tell(n)
	}
	w.at(diskReportMs, d.report)
}

// tell gives node n its free space now, if it is up.
func (d *diskPressure) tell(n *simNode) {
	if !n.up() {
		return
	}
	free := int64(diskRoomyBytes)
	if _, pressed := d.untilMs[n]; pressed {
		free = 0
	}
	n.input(func() { n.node.SetDiskFree(free) })
}
