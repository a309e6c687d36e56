package sim

import (
	cryptorand "crypto/rand" //determinism:ok only to pin its Reader to the seed (pinCryptoRand)
	"fmt"
	"io"
	"math/rand/v2"
	"os" //determinism:ok only for the temporary directory of the metastores' bbolt files
	"runtime/debug"
	"strings"
	"time"

	"narad/chaos"
	"narad/httpapi"
	"narad/msg"
)

// Bounds and cadences of a world, in simulated milliseconds.
const (
	tickIntervalMs = 10
	// livenessGraceMs is how long after healing requests may still fail
	// (a node finishing its restart) before a failure counts against
	// liveness.
	livenessGraceMs = 5_000
	// drainQuietMs ends the drain once every acknowledged record was
	// consumed and this long passed without a new delivery.
	drainQuietMs = 3_000
	// drainMsPerRecord extends the liveness phase's bound by this much for
	// every acknowledged record not yet delivered when the faults stop: a
	// backlog drains at the pace of the consumers the workload drew, and
	// a lone consumer that takes a record at a time, abandoning some to
	// their redelivery, settles one every 10 to 15 ms (nightly seed
	// 4832331: five producers, a storm on one partition and one consumer
	// left 14,473 records, drained steadily past the fixed bound).
	drainMsPerRecord = 20
	// setupMsMax bounds the setup: electing a leader, the members
	// heartbeating, the topic created.
	setupMsMax = 30_000
)

// Options configure one run. Start from DefaultOptions.
type Options struct {
	Seed uint64
	// Nodes in the world: 1 is a single node; 3 or 5 form a cluster
	// whose metastore is one Raft group of every node.
	Nodes int
	// SafetyMs is the simulated time with faults and load.
	SafetyMs int64
	// DrainMsMax bounds the liveness phase, plus drainMsPerRecord for
	// each acknowledged record not yet delivered when it starts; not
	// drained by then fails.
	DrainMsMax int64
	// Faults is the fault profile.
	Faults Profile
	// Verbose, when set, receives every trace line.
	Verbose io.Writer
	// BlackBox turns the omniscient state checker off, leaving only the
	// checkers that look at what clients saw (to measure them alone).
	BlackBox bool
	// Moves, in a cluster, adds the moves scenario: a scale-up and/or a
	// decommission that make the planner move partitions, faults aimed at
	// the phases of those moves, and write storms on moving partitions.
	Moves bool
	// Users, in a cluster, adds the users scenario: every node carries a
	// root seed, and user changes go to random nodes (usersScenario).
	Users bool
	// DeadLetters gives the simulated topic a dead-letter topic and a
	// small max_deliveries, with a consumer of the dead letters
	// (deadletters.go).
	DeadLetters bool
	// DeadLettersAimed, with DeadLetters in a cluster, adds topics that
	// are deleted while their dead letters are being written, whose
	// forwarded writes the peer network loses (deadletters_doomed.go).
	// Off unless a run asks for it (kept seeds ran without it).
	DeadLettersAimed bool
	// Sites says whether the core's fault sites are on during the safety
	// phase (sites.go).
	Sites SitesMode
	// Fanout adds the fan-out scenario: the topic gets a fan-out child
	// and a delay child before the workload starts, and the run ends by
	// checking that every acknowledged record reached both, the delayed
	// one no earlier than due (check_fanout.go).
	Fanout bool
	// MediaInClusters lets three-node moves worlds draw the media fault
	// (media_faults.go). On by default: a move carries the owner's
	// corrupt records over (the destination accepts exactly the source's
	// corruption). A regression seed turns it off unless its line says
	// media-clusters, as it failed before it was on.
	MediaInClusters bool
	// DiskPressure runs nodes short of disk in a seeded share of the
	// cluster worlds with disk faults (disk_pressure.go). On by default; a
	// regression seed turns it off unless its line says disk-pressure, as
	// it failed before it was on.
	DiskPressure bool
	// LateSyncs runs, in a seeded half of the runs, the partition rounds
	// of each Ready some time into the round rather than as the node
	// takes it (World.lateSyncs, simNode.runSyncsLate). On by default; a
	// regression seed turns it off unless its line says late-syncs, as it
	// failed before it was on.
	LateSyncs bool
	// Weather, in a moves world, splits the safety phase into storms and
	// lulls in which no fault is drawn (weather.go). Off unless asked for:
	// TestSim's -weather is auto.
	Weather WeatherMode
	// FanoutAgedOut, with Fanout in a single-node world, gives the topic
	// an hour's retention and fails the copy child's disk for longer
	// (fanout_agedout.go). Off unless a run asks for it.
	FanoutAgedOut bool
}

// DefaultOptions returns a run of 30 simulated seconds with every fault.
func DefaultOptions(seed uint64) Options {
	return Options{Seed: seed, Nodes: 1, SafetyMs: 30_000, DrainMsMax: 120_000, Faults: ProfileAll, MediaInClusters: true, DiskPressure: true,
		LateSyncs: true}
}

// World is one simulated run. Everything in it happens on the caller's
// goroutine, in the order of the event queue.
type World struct {
	opts  Options
	nowMs int64
	queue eventQueue
	// Random streams, each derived from the seed, so a new draw in one
	// (say the workload) does not reshuffle another (the faults).
	workloadRng, networkRng, faultRng, peerRng *rand.Rand
	// moveRng draws the moves scenario, its faults and its storms.
	moveRng *rand.Rand
	// readFaultRng draws the open, read and remove failures armed beside a
	// write failure (armReadSideFault).
	readFaultRng *rand.Rand
	// namespaceFaultRng draws the create, rename and directory-sync
	// failures armed beside a write failure (armNamespaceFault).
	namespaceFaultRng *rand.Rand
	// diskPressure runs nodes short of disk (disk_pressure.go); nil in a
	// world without it.
	diskPressure *diskPressure
	// clockSkew draws the nodes' clock offsets (clock_skew.go).
	clockSkew clockSkew

	codec   *httpapi.Codec
	network *network
	// peers carries messages between nodes; raft follows the metastore's
	// leadership from them and metaLog its committed log and placement;
	// owners checks single ownership.
	peers   *peerNetwork
	raft    *raftView
	metaLog *metaLog
	owners  *ownerChecker
	// metaModel runs a naive model of the metastore beside every replica
	// (check_meta_model.go); nil in a single-node world.
	metaModel *metaModelChecker
	// weather holds the safety phase's lulls; nil without weather. Set at
	// the start of the safety phase.
	weather *weather
	// nodes grows by a scale-up (never shrinks: a retired node stays,
	// down for good); retiredCount counts the retired ones.
	nodes        []*simNode
	retiredCount int
	// joiningCount counts the nodes a scale-up added that are not members
	// yet: clients do not know them.
	joiningCount int
	clients      []*client
	topic        string
	// partitions of the simulated topic; fixed after setup.
	partitions int

	history *history
	checker *stateChecker
	// deadLetters is the dead-letters scenario; nil without it.
	deadLetters *deadLetters
	// agedOut is the aged-out fan-out world; nil without it.
	agedOut *fanoutAgedOut
	// topicCommitMs is the earliest commit time of each record the final
	// replay read in the topic: the fan-out checker judges the delay
	// child against it (checkDelay). Set only by the final replay.
	topicCommitMs map[string]int64
	// groupSync: the nodes run a Ready's partition rounds together when
	// two or more carry records (simNode.runSyncs), as the host does with
	// storage.group_sync; drawn for groupSyncPercent of the runs. Fixed
	// at NewWorld.
	groupSync bool
	// hwmEager: the nodes write their logs' hwm files with every round
	// while they evict logs (node.Config.HWMEagerAfterEvictionMs, on in
	// production); drawn for hwmEagerPercent of the runs, since the
	// simulator's nodes evict all the time and the lazy hwm file (and
	// recovery past it) must stay under test. Fixed at NewWorld.
	hwmEager bool
	// lateSyncs draws when, within each round, the nodes run the rounds
	// of a Ready without the metastore's persist (simNode.runSyncsLate);
	// nil when they run them as they take the Ready. Drawn for
	// lateSyncPercent of the runs with Options.LateSyncs. Fixed at
	// NewWorld.
	lateSyncs *rand.Rand
	// warmReopen: the nodes keep the logs they close for room or
	// idleness and reopen them warm, without recovery
	// (node.Config.ClosedLogsKeptBytesMax, on in production); drawn for
	// warmReopenPercent of the runs, since recovery of an evicted log
	// must stay under test too. Fixed at NewWorld.
	warmReopen bool
	// segmentIndexes: the nodes' logs keep index files of their sealed
	// segments and recover from them (storage.LogConfig.SegmentIndexFiles,
	// on in production); drawn for segmentIndexPercent of the runs, since
	// scans of sealed segments must stay under test too. Fixed at
	// NewWorld.
	segmentIndexes bool
	// residentPositionsBytes is the nodes' storage.LogConfig.ResidentPositionsBytesMax:
	// drawn small (a few of the simulator's small segments, or none past
	// the minimum), so that their logs page segments out and in. Fixed at
	// NewWorld.
	residentPositionsBytes int
	// media is the media corruption of the disks (media_faults.go); nil
	// until the first start of a node.
	media *mediaFaults
	// writers checks that at most one node accepts writes to a partition
	// after every step, and that no frozen partition takes an append.
	writers *writerChecker
	// removals checks that no node deletes a partition directory the
	// committed placement relies on it for.
	removals *removalChecker
	// acks checks that an ack that landed is answered 204 when sent again
	// and its record is not delivered again (check_acks.go).
	acks *ackChecker
	// leases checks that every ack success is for the current
	// reservation of its record (check_leases.go).
	leases *leaseModel
	// lateProposals sends some move proposals again, late; nil unless
	// the moves scenario runs.
	lateProposals *lateProposals
	// control is the operator whose topic changes porcupine checks
	// (check_control.go).
	control *controlPlane
	// moves is the moves scenario; nil unless Options.Moves in a cluster.
	moves *movesScenario
	// users is the users scenario; nil unless Options.Users in a cluster.
	users *usersScenario
	// moveStats gathers what the nodes report of moves.
	moveStats moveStats
	// touchedNodes is the reused list of nodes the current step touched.
	touchedNodes []*simNode
	trace        *trace
	faults       map[string]int
	phase        phase
	healedMs     int64
	// drainDeadlineMs ends the liveness phase (set by heal): DrainMsMax
	// plus drainMsPerRecord for each record left to drain.
	drainDeadlineMs int64
	// failure is the first checker failure; the run stops at it.
	failure *Failure
	// metaDir holds the nodes' metastore files for this run.
	metaDir string
	// logOperations and logResult are the log check's input size and
	// verdict; porcupineUnknown is set when porcupine ran out of its
	// budget on it (checkLogs).
	logOperations    int
	logResult        string
	porcupineUnknown bool
	// stepErrors counts peer messages a node refused, by message kind.
	stepErrors map[string]int
	// lastEvents holds each node's latest traced event detail, by node and
	// kind (nodeObserver.Event).
	lastEvents map[string]string
	// staleCreationsRemoved counts the nodes' stale-partition-removed
	// events (Report.StaleCreationsRemoved).
	staleCreationsRemoved int
	// emptying is set while checkQueueEmptied waits for the queue to
	// empty: consumers then settle every delivery (settle), so that a
	// record left in flight is acked within the check's bound.
	emptying bool
}

type phase int

const (
	phaseSetup phase = iota
	phaseSafety
	phaseLiveness
	phaseDone
)

// Failure says which checker failed and why.
type Failure struct {
	Checker string
	Detail  string
}

func (f *Failure) Error() string { return f.Checker + ": " + f.Detail }

func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// NewWorld builds the world of a seed.
func NewWorld(opts Options) *World {
	assert(opts.Nodes >= 1, "a world needs at least one node, got %d", opts.Nodes)
	opts.Fanout = opts.Fanout || movesWorldFanout(opts)
	w := &World{
		opts:        opts,
		workloadRng: newRand(opts.Seed, workloadStream), networkRng: newRand(opts.Seed, networkStream), faultRng: newRand(opts.Seed, faultStream),
		peerRng: newRand(opts.Seed, peerStream), moveRng: newRand(opts.Seed, moveStream), readFaultRng: newRand(opts.Seed, readFaultStream),
		namespaceFaultRng: newRand(opts.Seed, namespaceFaultStream),
		clockSkew:         newClockSkew(opts),
		codec:             httpapi.NewCodec(httpapi.DefaultCodecConfig()),
		history:           newHistory(), checker: newStateChecker(), trace: newTrace(opts.Verbose),
		faults: map[string]int{}, topic: "sim", stepErrors: map[string]int{}, lastEvents: map[string]string{},
	}
	w.network = newNetwork(w)
	for i := range opts.Nodes {
		w.nodes = append(w.nodes, newSimNode(w, i))
	}
	w.peers = newPeerNetwork(w, w.peerRng)
	w.raft = newRaftView(w)
	w.metaLog = newMetaLog(w)
	if opts.Nodes > 1 {
		w.metaModel = newMetaModelChecker(w, w.metaLog.applied.index)
	}
	w.owners = newOwnerChecker(w)
	w.writers = newWriterChecker(w)
	w.removals = newRemovalChecker(w)
	w.acks = newAckChecker(w)
	w.leases = newLeaseModel(w)
	w.control = newControlPlane(w)
	if opts.Moves && opts.Nodes > 1 {
		w.moves = newMovesScenario(w)
		w.metaLog.listener = w.moves
		w.lateProposals = newLateProposals(w)
	}
	if opts.Users && opts.Nodes > 1 {
		w.users = newUsersScenario(w)
	}
	if opts.DeadLetters {
		w.deadLetters = newDeadLetters(w)
	}
	w.agedOut = newFanoutAgedOut(w)
	w.diskPressure = newDiskPressure(w)
	w.groupSync = newRand(opts.Seed, groupSyncStream).IntN(100) < groupSyncPercent
	w.hwmEager = newRand(opts.Seed, hwmEagerStream).IntN(100) < hwmEagerPercent
	if late := newRand(opts.Seed, lateSyncStream); opts.LateSyncs && late.IntN(100) < lateSyncPercent {
		w.lateSyncs = late
	}
	w.warmReopen = newRand(opts.Seed, warmReopenStream).IntN(100) < warmReopenPercent
	w.segmentIndexes = newRand(opts.Seed, segmentIndexStream).IntN(100) < segmentIndexPercent
	w.residentPositionsBytes = newRand(opts.Seed, residentPositionsStream).IntN(residentPositionsBytesSimMax + 1)
	return w
}

// Run runs the world to the end and checks it. Runs share package state
// (crypto/rand.Reader, chaos), so they must not overlap in one process.
func Run(opts Options) Report {
	start := time.Now() //determinism:ok wall time only reported, never used in the run
	sites := switchSitesOn(opts.Seed, opts.Sites)
	defer chaos.Reset()
	defer debug.SetGCPercent(debug.SetGCPercent(simGCPercent))
	restore := pinCryptoRand(opts.Seed)
	defer restore()
	w := NewWorld(opts)
	metaDir, err := metastoreTempDir()
	assert(err == nil, "temp dir for the metastores: %v", err)
	defer os.RemoveAll(metaDir)
	w.metaDir = metaDir
	w.recoverPanic(w.run)
	w.recoverPanic(w.closeNodes)
	report := w.report()
	report.SitesOn, report.SitesFirePercent = sites.on, sites.firePercent
	report.WallSeconds = time.Since(start).Seconds() //determinism:ok wall time only reported, never used in the run
	return report
}

// memoryTempRoot is where a run keeps its metastore files when the
// machine has it: a file system in memory. Every metastore transaction of
// a run writes its pages with a few pwrite calls (the stores run without
// fsync), and on a disk's file system those cost 2-4 % of a five-node
// run; the files are a few tens of KiB each and die with the run.
const memoryTempRoot = "/dev/shm"

// metastoreTempDir makes the run's directory for the metastore files: in
// memoryTempRoot if it can, else in the usual temporary directory.
func metastoreTempDir() (string, error) {
	if dir, err := os.MkdirTemp(memoryTempRoot, "narad-sim-meta"); err == nil {
		return dir, nil
	}
	return os.MkdirTemp("", "narad-sim-meta")
}

// groupSyncPercent is the share of runs whose nodes run the partition
// rounds of a Ready together (World.groupSync).
const groupSyncPercent = 50

// lateSyncPercent is the share of runs whose nodes run the partition
// rounds of a Ready late (World.lateSyncs).
const lateSyncPercent = 50

// hwmEagerPercent is the share of runs whose nodes write the hwm files
// with every round while they evict logs (World.hwmEager).
const hwmEagerPercent = 50

// warmReopenPercent is the share of runs whose nodes reopen closed logs
// warm (World.warmReopen).
const warmReopenPercent = 50

// residentPositionsBytesSimMax bounds the draw of
// World.residentPositionsBytes: a few of the simulator's segments' worth.
const residentPositionsBytesSimMax = 2048

// segmentIndexPercent is the share of runs whose logs keep segment index
// files (World.segmentIndexes).
const segmentIndexPercent = 50

// simGCPercent is the garbage collector's target during a run. A run
// keeps a few MB live and allocates hundreds of MB, so the default (100)
// collects every few MB: about 130 collections in two five-node seeds,
// 8% of the CPU by gctrace. Collecting at nine times the live heap keeps
// the heap within tens of MB. It changes no event of the run.
const simGCPercent = 800

// panicStackFramesMax bounds the stack a panic's failure report carries.
const panicStackFramesMax = 24

// recoverPanic runs step and turns a panic inside it (an assert of the
// core, say) into the run's failure, checker "panic", with the panic's
// value and the top of its stack. A sweep then reports the seed with its
// reproduce command and goes on with the next one, instead of losing the
// test binary and every seed after it.
func (w *World) recoverPanic(step func()) {
	defer func() {
		if r := recover(); r != nil {
			w.fail("panic", "%v\n%s", r, panicStack())
		}
	}()
	step()
}

// panicStack is the stack of the panicking goroutine, cut to
// panicStackFramesMax frames below the recovery.
func panicStack() string {
	lines := strings.Split(string(debug.Stack()), "\n")
	// Skip the header, then runtime/debug.Stack, panicStack, the deferred
	// recovery and runtime.gopanic: two lines a frame.
	const skipLines = 1 + 2*4
	lines = lines[min(skipLines, len(lines)):]
	return strings.Join(lines[:min(len(lines), 2*panicStackFramesMax)], "\n")
}

// closeNodes releases the nodes' metastore files at the end of a run.
func (w *World) closeNodes() {
	for _, n := range w.nodes {
		if n.up() {
			_ = n.node.Abandon()
			n.node = nil
		}
	}
}

// pinCryptoRand replaces crypto/rand.Reader, from which etcd raft draws
// its election jitter, with a stream of the seed for the run
// (docs/architecture.md#the-simulator), and returns what restores it.
func pinCryptoRand(seed uint64) func() {
	previous := cryptorand.Reader
	cryptorand.Reader = rand.NewChaCha8(seedBytes(seed))
	return func() { cryptorand.Reader = previous }
}

func seedBytes(seed uint64) [32]byte {
	var b [32]byte
	for i := range 4 {
		for j := range 8 {
			b[i*8+j] = byte((seed + uint64(i)) >> (8 * j))
		}
	}
	return b
}

func (w *World) run() {
	for _, n := range w.nodes {
		n.start()
		if w.clustered() {
			n.scheduleTick() // a cluster elects its leader with ticks
		}
	}
	w.setup()
	w.loop(func() bool { return w.phase == phaseSetup && w.nowMs < setupMsMax })
	if w.phase == phaseSetup {
		w.fail("liveness", "setup: the topic was not created within %d ms", setupMsMax)
	}
	w.startSafety()
	w.loop(func() bool { return w.nowMs < w.opts.SafetyMs })
	w.heal()
	w.loop(func() bool { return !w.drained() && w.nowMs < w.drainDeadlineMs })
	w.finish()
}

// loop runs events while more() holds and nothing failed.
func (w *World) loop(more func() bool) {
	for w.failure == nil && more() && w.queue.len() > 0 {
		e := w.queue.pop()
		if e.atMs < w.nowMs { // guarded: the arguments would allocate on every call
			assert(false, "event at %d before now %d", e.atMs, w.nowMs)
		}
		w.nowMs = e.atMs
		e.run()
		w.afterStep()
	}
}

// afterStep runs the omniscient checkers over the nodes the step touched,
// then lets the moves scenario aim its faults at the phases it sees.
func (w *World) afterStep() {
	touched := w.touchedNodes[:0]
	for _, n := range w.nodes {
		if n.touched {
			n.touched = false
			touched = append(touched, n)
		}
	}
	w.touchedNodes = touched
	if w.failure == nil && !w.opts.BlackBox {
		w.writers.afterStep(touched)
		w.checker.afterStep(w, touched)
		w.afterStepOracles(touched)
	}
	if w.failure == nil && w.moves != nil {
		w.moves.watch(touched)
	}
}

// at schedules run after delayMs.
func (w *World) at(delayMs int64, run func()) {
	assert(delayMs >= 0, "negative delay %d", delayMs)
	w.queue.push(w.nowMs+delayMs, run)
}

func (w *World) tracef(format string, args ...any) { w.trace.add(w.nowMs, format, args...) }

// fail records the first checker failure.
func (w *World) fail(checker, format string, args ...any) {
	if checker == "client" && payloadChanged(args) {
		checker = "payload" // not an answer no server gives: a record's bytes changed on their way
	}
	if w.failure == nil {
		w.failure = &Failure{Checker: checker, Detail: fmt.Sprintf(format, args...)}
		w.tracef("FAIL %s: %s", checker, w.failure.Detail)
	}
}

func (w *World) countFault(kind string) {
	w.faults[kind]++
	w.tracef("fault %s", kind)
}

// stepRefused counts a peer message the node refused.
func (w *World) stepRefused(n *simNode, env msg.Envelope, err error) {
	kind := messageKind(env.Message)
	w.stepErrors[kind]++
	w.tracef("%s refused %s from %s: %v", n.id, describeMessage(env.Message), env.From, err)
}

// setup creates the topic through the API, like an operator would. A
// cluster's topic has more partitions than nodes, created once every node
// is an alive member (or membersWaitMsMax passed), so that partitions land
// on different owners.
func (w *World) setup() {
	if w.clustered() {
		w.partitions = len(w.nodes) + 1 + w.workloadRng.IntN(len(w.nodes)+2)
	} else {
		w.partitions = 3 + w.workloadRng.IntN(4)
	}
	visibilityMs := visibilityMsMin + w.workloadRng.IntN(visibilityMsSpread)
	admin := newClient(w, "admin", roleAdmin)
	w.clients = append(w.clients, admin)
	create := func() { admin.createTopic(w.partitions, visibilityMs) }
	if d := w.deadLetters; d != nil {
		createTopic := create
		create = func() { admin.createDeadLetterTopic(d, createTopic) }
	}
	if !w.clustered() {
		create()
		return
	}
	admin.awaitMembers(membersWaitMsMax, create)
}

func (w *World) startSafety() {
	w.phase = phaseSafety
	w.weather = drawWeather(w.opts, w.nowMs)
	w.weather.schedule(w)
	w.tracef("safety phase: %d partitions, profile %s", w.partitions, w.opts.Faults.Name)
	w.spawnWorkload()
	for _, n := range w.nodes {
		n.scheduleTick()
	}
	w.scheduleFault()
	w.diskPressure.start()
	if w.moves != nil {
		w.moves.start()
	}
	if w.users != nil {
		w.users.start()
	}
	w.control.start()
}

// heal ends the safety phase: every node up, faults off, producers
// stopped; consumers drain.
func (w *World) heal() {
	if w.failure != nil {
		return
	}
	w.phase = phaseLiveness
	w.healedMs = w.nowMs
	backlog := int64(w.history.ackedUndelivered)
	w.drainDeadlineMs = w.nowMs + w.opts.DrainMsMax + drainMsPerRecord*backlog
	// A lost snapshot is sent again: the late joiner, which starts from a
	// snapshot in this phase, must get there all the same.
	chaos.StopFaults(chaos.SiteMetaSnapshotLost)
	w.network.heal()
	w.peers.heal()
	for _, n := range w.nodes {
		n.heal()
	}
	w.tracef("healed: liveness phase, %d acknowledged records to drain by %d ms", backlog, w.drainDeadlineMs)
	if w.moves != nil {
		w.moves.scheduleLateJoin()
	}
}

func (w *World) drained() bool {
	if w.nowMs < w.healedMs+livenessGraceMs {
		return false
	}
	return w.history.allAckedDelivered() && w.nowMs-w.history.lastDeliveryMs >= drainQuietMs && w.clientsIdle()
}

func (w *World) clientsIdle() bool {
	for _, c := range w.clients {
		if c.role == roleProducer && c.busy {
			return false
		}
	}
	return true
}

// finish stops the world and runs the end-of-run checkers.
func (w *World) finish() {
	if w.failure == nil {
		w.finalReplay()
	}
	if w.failure == nil && w.opts.Fanout {
		w.checkFanout()
	}
	if w.failure == nil && w.clustered() {
		w.checkClusterLiveness()
	}
	if w.failure == nil {
		w.checkQueueEmptied()
	}
	if w.failure == nil {
		w.checkUsers()
	}
	w.finishOracles()
	w.phase = phaseDone
	if w.failure != nil {
		return
	}
	w.checkAccounting()
	w.checkLogs()
}

func (w *World) node(i int) *simNode { return w.nodes[i] }

// randomNode draws a node that is not retired.
func (w *World) randomNode(rng *rand.Rand) *simNode {
	active := w.activeNodes()
	return active[rng.IntN(len(active))]
}

// clientNode draws the node a client request goes to: one that is not
// retired and not still joining (clients learn of a new node once it is a
// member, as a load balancer adds it once it reports ready).
func (w *World) clientNode(rng *rand.Rand) *simNode {
	if w.retiredCount == 0 && w.joiningCount == 0 {
		return w.nodes[rng.IntN(len(w.nodes))]
	}
	var serving []*simNode
	for _, n := range w.nodes {
		if !n.retired && !n.joining {
			serving = append(serving, n)
		}
	}
	return serving[rng.IntN(len(serving))]
}

// codecRequest is shared by clients; requests are decoded on the client's
// side of the simulated wire (decoding is deterministic and stateless).
func (w *World) decode(call *call) (msg.Request, *httpapi.ErrorResponse) {
	decoded, failure := w.codec.Decode(call.httpRequest)
	if failure != nil {
		return nil, failure
	}
	return decoded.Request, nil
}

func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("sim: invariant broken: "+format, args...))
	}
}
