package sim

import (
	"narad/chaos"
	"narad/node"
)

// A crash between the two renames of a move's install: storage's install
// renames the partition directory a destination already has (a copy of
// an earlier ownership the sweep has not deleted yet) aside, then the
// staged copy into its place. A process killed between the two leaves
// the aside copy and no partition directory; the node must put that
// right when it starts again (node-install-repaired). A destination has
// its partition directory already when a crash landed after its install
// and before its flip (installedKillPercent): its next session installs
// over it.
const (
	// installedKillPercent is the chance that a destination is killed
	// as its finalize job ends, before the node hears of it: the copy is
	// installed, the flip not proposed.
	installedKillPercent = 50
	// installCrashPercent is the chance that a finalize job whose
	// partition directory exists already is cut short this way, in the
	// safety phase of a moves world.
	installCrashPercent = 100
	// installCrashDownMsMin and installCrashDownMsSpread: how long the
	// killed destination stays down.
	installCrashDownMsMin    = 100
	installCrashDownMsSpread = 400
	// installAsideSuffix is the name storage's install gives the
	// directory it sets aside (storage.InstallStaged).
	installAsideSuffix = ".aside"
)

// killedAfterInstall may kill n as its finalize job ended, before the
// node takes its outcome: the copy is installed (if the job succeeded)
// and the flip never proposed. It reports whether n was killed.
func (n *simNode) killedAfterInstall() bool {
	w := n.w
	if w.moves == nil || !w.drawsFaults() || w.moves.installCrashRng.IntN(100) >= installedKillPercent || !w.mayTakeDown(n) {
		return false
	}
	w.countFault("move-kill-after-install")
	w.tracef("move fault: kill %s as its finalize job ends", n.id)
	n.crashNow("move-kill-after-install", false, int64(installCrashDownMsMin+w.moves.installCrashRng.IntN(installCrashDownMsSpread)))
	return true
}

// crashesMidInstall may kill n as its finalize job has made the first
// rename of the install and not the second: it renames the job's
// partition directory aside, as the install would, and kills the process
// (the page cache keeps the rename). It reports whether n was killed, and
// the job is then dropped.
func (n *simNode) crashesMidInstall(job node.Job) bool {
	w := n.w
	if w.moves == nil || !w.drawsFaults() {
		return false
	}
	final := job.Dir()
	if _, err := n.fs.Stat(final); err != nil {
		return false // nothing to set aside: the install is one rename
	}
	if w.moves.installCrashRng.IntN(100) >= installCrashPercent || !w.mayTakeDown(n) {
		return false
	}
	if err := n.fs.Rename(final, final+installAsideSuffix); err != nil {
		return false // a disk fault: the install would have failed here too
	}
	chaos.Reached(markInstallCrashed)
	w.countFault("move-kill-mid-install")
	w.tracef("move fault: kill %s between the renames of its install of %s", n.id, final)
	n.crashNow("move-kill-mid-install", false, int64(installCrashDownMsMin+w.moves.installCrashRng.IntN(installCrashDownMsSpread)))
	return true
}
