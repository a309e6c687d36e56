package sim

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"narad/chaos"
	"narad/httpapi"
	"narad/meta"
	"narad/msg"
	"narad/node"
	"narad/storage"
)

// Disk timing, in simulated milliseconds.
const (
	syncLatencyMsMin = 1
	syncLatencyMsMax = 4
)

// simNode drives one node: the simulator's side of the node contract.
type simNode struct {
	w     *World
	index int
	id    string
	fs    *storage.MemFS
	// disk is fs as this incarnation's node sees it (the removal checker's
	// watch around it); set at each start.
	disk watchedFS
	// node is nil while the node is down.
	node *node.Node
	// store is the metastore file node opened at its start, which node
	// owns and closes when it goes down; the metastore oracle reads it
	// while node is up. Nil before the first start.
	store *meta.Store
	// incarnation counts starts; events of an earlier incarnation (a sync
	// completion, a reply) are ignored after a crash. startedMs is when
	// the latest one started.
	incarnation int
	startedMs   int64
	// clockOffsetMs is what this start's clock reads ahead of the world's
	// (behind when negative): the node's time is clockMs().
	clockOffsetMs int64
	// persisting is true between a Ready with syncs and its completion.
	// The node keeps taking inputs meanwhile, except while holding (the
	// Ready carries the metastore's persist): inputs then wait in inbox,
	// as they wait in the host's channel. Invariant: holding implies
	// persisting.
	persisting, holding bool
	inbox               []func()
	// inputsTaken counts the inputs fed to the node (takesInputNow), so
	// that a late round knows whether any came between its Ready and its
	// run (markSyncsRanAfterInput).
	inputsTaken int
	// calls are the client requests this incarnation holds, by id;
	// userChanges the users scenario's changes, described for the trace.
	calls       map[msg.RequestID]*call
	userChanges map[msg.RequestID]string
	nextID      msg.RequestID
	// restartPending is true while a restart is scheduled.
	restartPending bool
	// riskArmed holds, by operation, the disk faults armed on this node in
	// a multi-node world that may crash it (an fsync failure, a namespace
	// fault), each with the generation it was armed at: while one is, the
	// node counts as at risk of going down (minorityMax). A fault is
	// cancelled at its deadline, or when the node goes down, so a fault
	// left over never crashes it uncounted. armGeneration numbers arms.
	riskArmed     map[storage.FaultOp]int
	armGeneration int
	// ticking is set once the node's tick event is scheduled. tickEvent
	// and tickInput are the tick's event and input, made once (by
	// scheduleTick) rather than two closures every tickIntervalMs.
	ticking              bool
	tickEvent, tickInput func()
	// killPending, when not empty, is the kind of a process-only crash
	// that waits for the node's next sync round with data, so that it lands
	// between that round's writes and its fsyncs; killDownMs is how long
	// the node then stays down. Set by crashFor, cleared when it fires.
	killPending string
	killDownMs  int64
	// touched is set whenever the simulator calls into the node or takes
	// it down, and cleared after the step's checkers looked at the node: a
	// node not touched since has not changed.
	touched bool
	// joining is set on a node a scale-up added until its first heartbeat
	// committed (it is a member): it starts with Meta.Join and waits for
	// the leader to add it, and clients do not know it yet.
	joining bool
	// joined is set on a node a scale-up added, for good: its restarts
	// keep Meta.Join (meta ignores it once the store holds state).
	joined bool
	// retired is set once a decommissioned node left the voters and was
	// shut down for good: it never restarts, takes no client and no fault.
	// Set only by retire.
	retired bool
	// stateRecords is the state checker's record of each partition
	// directory of this node (record), asked after every step; it holds
	// at most one entry per directory the node ever opened. Only the
	// state checker changes it.
	stateRecords map[string]*partitionRecord
	// openRecords is the state checker's list of the records of the
	// partitions open at its last look at this node, in OpenPartitions
	// order (openRecords): each is stateRecords' record of its directory.
	openRecords []*partitionRecord
	// logConfig is config().Log, made once: the world's constants alone
	// make it, and the state checker recovers a partition with it at
	// every reopen. Nil until first asked (logConfigOf).
	logConfig *storage.LogConfig
	// appliedKnown is the node's applied metastore index after its last
	// Advance (or its start): what it had learned before the input it is
	// handling. The removal checker reads it.
	appliedKnown uint64
}

func newSimNode(w *World, index int) *simNode {
	return &simNode{
		w: w, index: index, id: fmt.Sprintf("n%d", index+1), stateRecords: map[string]*partitionRecord{},
		fs: storage.NewMemFS(newRand(w.opts.Seed, uint64(memFSStream+index))),
	}
}

func (n *simNode) up() bool { return n.node != nil }

// metaPath is the node's metastore file: bbolt needs a real file (it
// cannot run on the simulated disk); a simulated crash closes it between
// steps, and bbolt keeps every committed transaction, as on a real crash.
func (n *simNode) metaPath() string {
	return filepath.Join(n.w.metaDir, n.id+".db")
}

// simMetaMmapBytes is the least map of a metastore file (a file grows a
// few tens of KiB in a run): a map outgrown is unmapped and mapped again,
// which cost about 2 % of a five-node run's CPU.
const simMetaMmapBytes = 4 << 20

// simOpenLogsMax caps each node's open logs, below the partitions the
// workload spreads over a node, so that evictions and reopens run in
// every seed; simClusterOpenLogsMax is the cap in a cluster, where the
// same topics are spread over several nodes (with 4, a hundred seeds of
// three nodes with moves could pass without one eviction).
const (
	simOpenLogsMax        = 4
	simClusterOpenLogsMax = 2
)

// config is the node's configuration.
func (n *simNode) config() node.Config {
	cfg := node.DefaultConfig()
	cfg.NodeID = n.id
	cfg.Log.SegmentBytes = 16 << 10  // small segments: rolls run often
	cfg.Log.WriteBufferBytesMax = 1  // every append reaches the disk before its sync: write faults and kills hit them
	cfg.Log.HWMLagBytesMax = 2 << 10 // the hwm file lags the log by a few rounds: recovery scans past it
	cfg.ConsumeWaitMaxMs = 10_000
	cfg.HandleKey = n.handleKey()
	cfg.OpenLogsMax = simOpenLogsMax // below the partitions a node owns: logs close and reopen
	if !n.w.hwmEager {
		cfg.HWMEagerAfterEvictionMs = 0
	}
	if !n.w.warmReopen {
		cfg.ClosedLogsKeptBytesMax = 0
	}
	cfg.Log.SegmentIndexFiles = n.w.segmentIndexes
	cfg.Log.ResidentPositionsBytesMax = n.w.residentPositionsBytes
	if n.w.clustered() {
		cfg.OpenLogsMax = simClusterOpenLogsMax
		cfg = n.w.clusterConfig(cfg, n)
	}
	if n.w.users != nil {
		cfg.RootSeedHash = rootSeedOf(n.id)
		cfg.EnforceGrants = true // as a secured node's driver sets it
	}
	if n.w.deadLetters != nil {
		cfg.RelaysInFlightMax = deadLetterRelaysInFlightMax
	}
	if n.w.opts.Fanout {
		cfg.Fanout.CursorPersistIntervalMs = fanoutCursorPersistIntervalMs
		cfg.RelaysInFlightMax = min(cfg.RelaysInFlightMax, fanoutRelaysInFlightMax)
	}
	if n.w.agedOut != nil {
		cfg.RetentionCheckIntervalMs = agedOutRetentionCheckMs
	}
	return cfg
}

// logConfigOf is the node's log configuration, config().Log.
func (n *simNode) logConfigOf() storage.LogConfig {
	if n.logConfig == nil {
		cfg := n.config().Log
		n.logConfig = &cfg
	}
	return *n.logConfig
}

// handleKey is the node's receipt handle key for this start, drawn from
// the seed as a real driver draws one at every start.
func (n *simNode) handleKey() []byte {
	rng := newRand(n.w.opts.Seed^uint64(n.incarnation)<<32, uint64(handleKeyStream+n.index))
	key := make([]byte, 0, node.HandleKeyBytes)
	for len(key) < node.HandleKeyBytes {
		key = binary.BigEndian.AppendUint64(key, rng.Uint64())
	}
	return key
}

// start recovers the node from its disk.
func (n *simNode) start() {
	n.w.leases.nodeStarted()
	if n.w.media == nil {
		n.w.media = newMediaFaults(n.w)
	}
	n.w.media.beforeStart(n)
	n.w.control.purge.starting(n)
	cfg := n.config()
	store, err := meta.OpenStore(n.metaPath(), meta.StoreOptions{NoSync: true, InitialMmapBytes: simMetaMmapBytes, NoFreelistSync: true})
	if err != nil {
		n.w.fail("restart", "%s cannot open its metastore: %v", n.id, err)
		return
	}
	var removedAtStart []string
	n.w.removals.restarted(n)
	n.disk = watchedFS{MemFS: n.fs, n: n, starting: &removedAtStart}
	n.clockOffsetMs = n.w.clockSkew.draw(n)
	created, err := node.New(cfg, n.disk, store, n.clockMs(), nodeObserver{n: n})
	if err != nil && n.w.phase == phaseSafety {
		// An injected disk fault can fail a start, as it would a real
		// process: its supervisor starts it again.
		n.w.countFault("start-failed")
		n.disarmRisks() // the armed fault most likely failed the start
		n.fs.Crash()
		n.scheduleRestart(int64(100 + n.w.faultRng.IntN(1_000)))
		return
	}
	if err != nil {
		n.w.fail("restart", "%s failed to recover with no fault injected: %v", n.id, err)
		return
	}
	n.node, n.store, n.incarnation, n.persisting, n.inbox, n.touched = created, store, n.incarnation+1, false, nil, true
	n.startedMs = n.w.nowMs
	n.appliedKnown = created.MetaAppliedIndex()
	n.w.removals.started(n, removedAtStart)
	n.calls, n.userChanges = map[msg.RequestID]*call{}, map[msg.RequestID]string{}
	n.w.checker.nodeStarted(n)
	n.w.tracef("%s start incarnation %d", n.id, n.incarnation)
}

func (n *simNode) scheduleTick() {
	if n.ticking {
		return
	}
	n.ticking = true
	n.tickEvent = n.tick
	n.tickInput = func() { n.node.Tick(n.clockMs()) }
	n.w.at(tickIntervalMs, n.tickEvent)
}

// tick is the tick event: it ticks the node and schedules the next one.
func (n *simNode) tick() {
	if n.w.phase == phaseDone {
		return
	}
	n.input(n.tickInput)
	n.w.at(tickIntervalMs, n.tickEvent)
}

// input feeds one input to the node now, or after the sync round in
// progress, then drives the node.
func (n *simNode) input(feed func()) {
	if !n.takesInputNow() {
		if n.up() {
			n.inbox = append(n.inbox, feed)
		}
		return
	}
	feed()
	n.drive()
}

// takesInputNow reports whether the node is up and not holding its inputs
// for a sync round; if so, the caller feeds it one input now and then
// drives it, and it is marked touched and ticked first.
func (n *simNode) takesInputNow() bool {
	if !n.up() || n.holding {
		return false
	}
	n.touched = true
	n.inputsTaken++
	n.node.Tick(n.clockMs())
	return true
}

// receive is a client request arriving at the node.
func (n *simNode) receive(c *call) {
	if !n.up() {
		n.w.tracef("%s down: drops %s", n.id, c.describe())
		return
	}
	n.input(func() {
		n.nextID++
		c.node, c.nodeIncarnation, c.requestID = n, n.incarnation, n.nextID
		n.calls[n.nextID] = c
		line := append(n.w.trace.begin(n.w.nowMs), n.id...) // "%s handle #%d %s"
		line = append(strconv.AppendUint(append(line, " handle #"...), uint64(n.nextID), 10), ' ')
		n.w.trace.end(append(line, c.describe()...))
		n.node.Handle(n.nextID, c.request)
	})
}

// step is a peer's message arriving at the node. A refused message is
// counted and traced, as the host counts and logs it: peers are outside
// the node, and a bad message must not stop it.
func (n *simNode) step(env msg.Envelope) {
	if n.takesInputNow() { // the common case, without a closure
		n.stepNow(env)
		n.drive()
		return
	}
	if n.up() {
		n.inbox = append(n.inbox, func() { n.stepNow(env) })
	}
}

func (n *simNode) stepNow(env msg.Envelope) {
	if err := n.node.Step(env); err != nil {
		n.w.stepRefused(n, env, err)
	}
}

// peerUnreachable tells the node its transport could not reach a peer.
func (n *simNode) peerUnreachable(peer string) {
	n.input(func() { n.node.PeerUnreachable(peer) })
}

// cancel is a client giving up on a request (its connection closed).
func (n *simNode) cancel(c *call) {
	if n.up() && c.node == n && c.nodeIncarnation == n.incarnation {
		n.input(func() {
			delete(n.calls, c.requestID)
			n.node.Cancel(c.requestID)
		})
	}
}

// drive handles Readys until the node has nothing to hand out or a sync
// round is in flight. A round's fsyncs run when it starts, so the disk
// makes durable exactly what was written before the round was taken; the
// round then takes simulated time, during which the node keeps taking
// inputs (pipelined group commit: their appends go to the next round),
// unless the round carries the metastore's persist (inputs then wait).
func (n *simNode) drive() {
	for n.up() && !n.persisting && n.node.HasReady() {
		rd := n.node.Ready()
		n.sendEarlyOutputs(rd)
		if len(rd.Syncs) == 0 {
			n.complete(rd)
			continue
		}
		n.persisting, n.holding = true, rd.Metastore()
		incarnation := n.incarnation
		latency := int64(syncLatencyMsMin + n.w.networkRng.IntN(syncLatencyMsMax-syncLatencyMsMin+1))
		if n.killPending != "" && node.DataRounds(rd.Syncs) > 0 && n.killBeforeSyncs(latency) {
			return
		}
		n.touched = true
		if n.w.lateSyncs != nil && !rd.Metastore() {
			n.runSyncsLate(rd, incarnation, latency)
			continue
		}
		err := n.startSyncs(rd)
		round := rd // only a round with syncs goes to the heap, in the closure
		n.w.at(latency, func() { n.persist(round, incarnation, err) })
	}
}

// startSyncs checks the partitions opened since the last round, arms
// this round's sync failure if the faults draw one, and runs its syncs.
func (n *simNode) startSyncs(rd node.Ready) error {
	if !n.w.opts.BlackBox {
		n.w.checker.beforeSyncs(n)
	}
	n.w.maybeFailSync(n, rd)
	return n.runSyncs(rd)
}

// runSyncsLate runs the partition rounds of a Ready some time into the
// round (before its end, when it completes), as a driver that uses the
// node contract's pipelined group commit may: the contract lets it feed
// inputs while a Ready's syncs run off the loop (the host persists each
// Ready itself today; the simulator drives the overlap). Whatever those
// inputs did to the node's disk meanwhile (a log failed and opened again,
// a retention, a cursor or stamp written) then comes before the round's
// fsyncs, not after. A crash before they ran loses what they would have
// made durable; nothing of the round was answered yet. A Ready with the
// metastore's persist is not overlapped (node doc), so its syncs run as
// it is taken.
func (n *simNode) runSyncsLate(rd node.Ready, incarnation int, latencyMs int64) {
	var err error
	inputsBefore := n.inputsTaken
	n.w.at(n.w.lateSyncs.Int64N(latencyMs), func() {
		if incarnation != n.incarnation || !n.up() {
			return
		}
		if n.inputsTaken > inputsBefore {
			chaos.Reached(markSyncsRanAfterInput)
		}
		n.touched = true
		err = n.startSyncs(rd)
	})
	n.w.at(latencyMs, func() { n.persist(rd, incarnation, err) })
}

// killBeforeSyncs lands the pending kill at a data round: before its
// fsyncs (it reports true), or while they are in flight and the node takes
// more inputs (some time before the round completes), so that a crash
// falls between two overlapping rounds.
func (n *simNode) killBeforeSyncs(latencyMs int64) bool {
	kind, downMs := n.killPending, n.killDownMs
	n.killPending = ""
	if n.w.faultRng.IntN(2) == 0 {
		n.crashNow(kind, false, downMs)
		return true
	}
	incarnation := n.incarnation
	n.w.tracef("%s kill (%s) lands while its sync round is in flight", n.id, kind)
	n.w.at(int64(n.w.faultRng.IntN(int(latencyMs))), func() {
		if incarnation == n.incarnation && n.up() {
			chaos.Reached(markKillDuringSyncRound)
			n.crashNow(kind, false, downMs)
		}
	})
	return false
}

// runSyncs runs a Ready's Syncs and returns the first failure: in order,
// each on its own, or, in a world with group sync (World.groupSync), two
// or more rounds with records and no move staging a copy on the node
// (node.StagingMoves), the metastore's persist and then the
// partitions' rounds together, as the host runs them with
// storage.group_sync on.
func (n *simNode) runSyncs(rd node.Ready) error {
	if !n.w.groupSync || node.DataRounds(rd.Syncs) < 2 || n.node.StagingMoves() {
		for _, s := range rd.Syncs {
			if err := s.Run(); err != nil {
				return fmt.Errorf("sync %s: %w", s.Dir, err)
			}
		}
		return nil
	}
	partitions := make([]node.Sync, 0, len(rd.Syncs))
	for _, s := range rd.Syncs {
		if !s.Metastore() {
			partitions = append(partitions, s)
		} else if err := s.Run(); err != nil {
			return fmt.Errorf("sync %s: %w", s.Dir, err)
		}
	}
	chaos.Reached(markGroupSyncRound)
	if err := node.RunTogether(n.disk, partitions); err != nil {
		return fmt.Errorf("sync of %d partitions together: %w", len(partitions), err)
	}
	return nil
}

// persist ends a sync round whose fsyncs ran when it started: a failure is
// fatal for the node (it crashes and recovers from what is durable);
// otherwise the round's replies and messages leave and the node advances.
func (n *simNode) persist(rd node.Ready, incarnation int, err error) {
	if incarnation != n.incarnation || !n.up() {
		return
	}
	n.touched = true
	if err != nil {
		n.w.tracef("%s %v", n.id, err)
		n.disarmRisks()
		n.crash("sync-failure")
		return
	}
	n.w.checker.synced(n, rd)
	n.complete(rd)
	n.persisting, n.holding = false, false
	inbox := n.inbox
	n.inbox = nil
	for _, feed := range inbox {
		if !n.up() {
			return
		}
		n.node.Tick(n.clockMs())
		feed()
	}
	n.drive()
}

// sendEarlyOutputs sends a Ready's produce forwards and delivers its
// early replies as soon as it is taken, before its syncs run, as the host
// does (node.Ready's ProduceForwards and EarlyReplies): a crash or a
// failed fsync of the round no longer holds them back.
func (n *simNode) sendEarlyOutputs(rd node.Ready) {
	for _, env := range rd.ProduceForwards {
		n.w.peers.send(n, env)
	}
	for _, reply := range rd.EarlyReplies {
		n.reply(reply)
	}
}

// complete sends a handled Ready's messages and replies, and advances the
// node.
func (n *simNode) complete(rd node.Ready) {
	for _, env := range rd.Messages {
		n.w.peers.send(n, env)
	}
	for _, reply := range rd.Replies {
		n.reply(reply)
	}
	n.node.Advance(rd)
	if n.up() {
		n.appliedKnown = n.node.MetaAppliedIndex()
	}
	for _, job := range rd.Jobs {
		n.runJob(job)
	}
}

func (n *simNode) reply(reply msg.Reply) {
	c, ok := n.calls[reply.ID]
	if !ok {
		n.replyUserChange(reply)
		return // cancelled, or a user change
	}
	delete(n.calls, reply.ID)
	response := httpapi.Encode(c.request, reply)
	if !n.w.opts.BlackBox {
		n.w.checker.replied(n, c, reply)
	}
	line := append(n.w.trace.begin(n.w.nowMs), n.id...) // "%s reply #%d %d"
	line = append(strconv.AppendUint(append(line, " reply #"...), uint64(reply.ID), 10), ' ')
	n.w.trace.end(strconv.AppendInt(line, int64(response.Status), 10))
	n.w.network.toClient(c, response)
}

// crash drops the node: requests in flight are never answered. Half of
// the crashes take the machine down (unsynced writes are lost, the last
// may tear); the others only the process (kill -9): the page cache keeps
// the unsynced writes, and the next start reads them, so recovery must
// make them durable before it serves them. A kill drawn as a "crash"
// fault waits for the node's next sync round with data (and lands before
// its fsyncs, or while they are in flight and the node takes more inputs);
// aimed kills (of a leader, of a move's side) land now. A
// failed fsync always ends as a machine crash: after it the page cache
// cannot be trusted.
func (n *simNode) crash(kind string) {
	n.crashFor(kind, int64(100+n.w.faultRng.IntN(3_000)))
}

// crashFor crashes the node (now, or as a kill at its next sync round)
// and restarts it after downMs.
func (n *simNode) crashFor(kind string, downMs int64) {
	if !n.up() {
		return
	}
	n.w.countFault(kind)
	machine := kind == "sync-failure" || n.w.faultRng.IntN(2) == 0
	if !machine && kind == "crash" && !n.persisting {
		n.killPending, n.killDownMs = kind, downMs
		n.w.tracef("%s kill (%s) waits for its next sync round", n.id, kind)
		return
	}
	n.crashNow(kind, machine, downMs)
}

// crashNow takes the node down, and the machine's unsynced writes with it
// when machine is set.
func (n *simNode) crashNow(kind string, machine bool, downMs int64) {
	n.w.fanoutFaultLanded(crashFaultKind(kind), n)
	if err := n.node.Abandon(); err != nil {
		n.w.fail("crash", "%s: closing its metastore: %v", n.id, err)
	}
	if machine {
		n.fs.Crash()
	}
	n.down()
	n.w.tracef("%s crashed (%s, machine down: %v)", n.id, kind, machine)
	n.scheduleRestart(downMs)
}

// stop shuts the node down gracefully: queued work finishes, committed
// offsets are persisted, logs closed.
func (n *simNode) stop() {
	if !n.up() || n.persisting {
		return // a stop waits for nothing in the simulator: try again later
	}
	n.w.countFault("graceful-restart")
	n.touched = true
	n.node.ReleaseWaiters()
	n.drive()
	if n.persisting {
		return // the released polls' replies need no sync; a produce might
	}
	states := partitionStates(n)
	err := n.node.Close()
	var unpersisted *node.UnpersistedOffsets
	switch {
	case errors.As(err, &unpersisted) && err == error(unpersisted):
		// An injected full disk refused only committed offsets' files:
		// those stay as they were, the rest of the stop is durable.
		n.w.countFault("stop-offsets-unpersisted")
		n.w.tracef("%s close left offsets unpersisted: %v", n.id, err)
		for _, dir := range unpersisted.Dirs {
			delete(states, dir)
		}
		n.w.checker.stopped(n, states)
	case err != nil:
		// An injected disk fault failed the final persist: what it was
		// writing may not be durable, so the stop ends as a crash does.
		n.w.countFault("stop-failed")
		n.w.tracef("%s close failed: %v", n.id, err)
		n.fs.Crash()
	default:
		n.w.checker.stopped(n, states)
	}
	n.down()
	n.scheduleRestart(int64(50 + n.w.faultRng.IntN(500)))
}

// down forgets the node instance: its requests go unanswered, its
// connections reset, and it leads nothing.
func (n *simNode) down() {
	n.node, n.calls, n.inbox, n.persisting, n.holding, n.touched = nil, nil, nil, false, false, true
	n.killPending = ""
	n.w.peers.resetNode(n)
	n.w.raft.nodeDown(n)
}

func (n *simNode) scheduleRestart(delayMs int64) {
	if n.restartPending {
		return
	}
	n.restartPending = true
	n.w.at(delayMs, func() {
		n.restartPending = false
		if !n.up() && !n.retired {
			n.start()
		}
	})
}

// heal brings the node up and its disk back to health.
func (n *simNode) heal() {
	n.fs.ClearFaults()
	n.riskArmed = nil
	if !n.up() && !n.restartPending && !n.retired {
		n.start()
	}
}

// runJob runs a node's off-loop job (a move's install and verification)
// at a later simulated time, then hands its end back to the node; a job
// of an incarnation that crashed meanwhile is dropped.
func (n *simNode) runJob(job node.Job) {
	incarnation := n.incarnation
	latency := int64(syncLatencyMsMin + n.w.networkRng.IntN(syncLatencyMsMax-syncLatencyMsMin+1))
	n.w.at(latency, func() {
		if incarnation != n.incarnation || !n.up() {
			return
		}
		if n.crashesMidInstall(job) {
			return
		}
		n.w.tracef("%s job %s", n.id, job.Dir())
		job.Run()
		if n.killedAfterInstall() {
			return
		}
		n.input(func() { n.node.JobDone(job) })
	})
}
