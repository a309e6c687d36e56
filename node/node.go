package node

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"go.etcd.io/raft/v3/raftpb"

	"narad/chaos"
	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// Node is one broker node. All methods must be called from one goroutine
// (the driver's loop); see the package doc for the contract.
type Node struct {
	cfg      Config
	fs       storage.FS
	store    *storage.Store
	observer Observer
	// handles formats and verifies receipt handles under cfg.HandleKey;
	// made once, in newNode.
	handles *lease.Handles

	// nowMs is the node's clock: the last Tick. Never decreases.
	nowMs int64
	// rootSeeded is set once this node's seed of the root user was
	// applied; rootSeedSettled once the node saw that it need not or
	// cannot seed (a root exists, or a user that is not root holds its
	// name). Neither ever clears.
	rootSeeded      bool
	rootSeedSettled bool
	// nonceFloor is the highest receipt nonce handed out by a lease table
	// this incarnation dropped (removePartition); before any, the
	// incarnation's base (New: the persisted start counter shifted, which
	// separates this start's nonces from earlier starts'). Every new or
	// restored table starts above it, so a handle of a dropped table never
	// names a reservation of a later table of the same partition (moved
	// away and back, or its topic deleted and created again). It only
	// grows.
	nonceFloor uint64
	// incarnation is this start's number (the persisted start counter,
	// set by New; 0 in a node built without one): heartbeats carry it, so
	// the metastore takes a restarted node's stamps, on a clock that may
	// be behind the earlier start's, as new.
	incarnation uint64

	// meta is this node's replica of the metastore: topics, placement,
	// members. Only the loop calls it; its Ready rides in the node's.
	meta *meta.Meta
	// metaReady is the metastore Ready handed out in the current node
	// Ready, until Advance; nil when none.
	metaReady *meta.Ready
	// metaReadyHeld holds the metastore Ready in flight while it needs no
	// Sync (metaReady points at it): most carry only Raft messages, and
	// cost no allocation of their own.
	metaReadyHeld meta.Ready
	// proposals wait for their outcome, by proposal id.
	proposals map[meta.ProposalID]*pendingProposal
	// proposalsDueFromMs is a time before which no proposal's deadline
	// falls: the earliest expireProposals saw, lowered by each proposal
	// since (one that got its outcome leaves it early: a look, no miss).
	proposalsDueFromMs int64
	// proposalsSettledTerm is the metastore applied term the last
	// settleStaleProposals saw: the proposals of earlier terms are gone
	// from proposals.
	proposalsSettledTerm uint64
	// reconciledIndex is the metastore applied index reconcileTopics last
	// saw.
	reconciledIndex uint64
	// reconciledTopics is the metastore's topics version whose records
	// reconcileTopics last compared with known, valid once
	// topicsReconciled: an entry that changed no topic (most are
	// heartbeats) needs no comparison.
	reconciledTopics uint64
	topicsReconciled bool
	// known maps each topic name of the applied state to its identity, to
	// notice deletes and re-creates (reconcileTopics), even a delete and
	// a re-create applied together within a millisecond.
	known map[string]meta.TopicIdentity
	// ownedAtReconcile holds the partitions this node owned at the last topics
	// reconcile (reconcileTopicRecords), to notice the ones it gains.
	ownedAtReconcile map[partitionKey]bool
	// cursors are the topics' produce and consume cursors on this node.
	cursors map[string]*topicCursors
	// topicCache holds the topics lookupTopic built from the metastore
	// at its topics version topicCacheVersion: a produce looks its topic
	// up once per record, and building one copies the topic's assignments.
	// Invariant: every entry agrees with the applied state's topics at
	// that version and shares cursors[name]; emptied when the version
	// moves (a heartbeat's entry does not move it) or a topic's cursors
	// are dropped.
	topicCache        map[string]*topic
	topicCacheVersion uint64

	// partitions are the partitions this node has state for; only
	// addPartition and removePartition change it.
	partitions map[partitionKey]*partition
	// partitionOrder is partitions' values sorted by key, shared by every
	// caller of sortedPartitions (who must not change it). Invariant: nil,
	// or exactly the values of partitions in key order; addPartition and
	// removePartition empty it.
	partitionOrder []*partition
	// backlogPeeks reads the persisted backlogs of the partitions whose
	// logs are closed at the start (backlog_peek.go).
	backlogPeeks backlogPeeks
	waiters      *waiterSet

	// routing tracks requests that cross nodes (forward.go).
	routing routing
	// relays counts this node's own writes into topics (relay.go).
	relays relays
	// deadLettersDue holds the partitions that may have exhausted records
	// waiting for their dead-letter topic: their lease tables add them
	// (watchExhausted), sendDeadLetters removes those with none left.
	deadLettersDue map[partitionKey]struct{}
	// deadLettersBlocked names the topics whose dead letters wait for
	// their owner's produce grant on the dead-letter topic; only
	// deadLettersAllowed and dropTopicState change it.
	deadLettersBlocked map[string]struct{}
	// fanout is the list of parents the cursors copy from and the next
	// time they wait for (fanout_copy.go).
	fanout fanoutView
	// fanoutObserver hears of copies and stalls (a no-op unless the
	// observer implements FanoutObserver).
	fanoutObserver FanoutObserver
	// cluster is the membership work: subscriptions, dead detection,
	// joining (membership.go).
	cluster clusterState
	// retirement is what this node knows of completed decommissions
	// (retirement.go).
	retirement retirement
	// otherDataDirTold is when this node last said it serves nothing
	// because it runs on another data directory than its member's
	// (datadir.go); only noteOtherDataDir changes it.
	otherDataDirTold onceEvery[string]
	// dataDirClear is whether otherDataDirError found this node on its
	// member's data directory, per applied index (it is asked several
	// times a tick).
	dataDirClear appliedMemo[bool]
	// disk is what the node knows of its disk's free space (disk.go).
	disk diskSpace
	// diskLowSaid is whether the last event about the reserve said the
	// node is under it (disk-low) rather than back above it; only
	// SetDiskFree changes it.
	diskLowSaid bool
	// purgesPending names the deleted topics whose directory removal
	// failed; retryPurges tries again at every tick, and meanwhile no
	// partition of the name opens (openLog) nor does a move into one
	// start (mayStartSession). A restart forgets it: the old creation's
	// stamp then has the first open remove its files (stamp.go).
	purgesPending map[string]bool
	// planned is the leader's last plan (move_leader.go).
	planned lastPlan
	// rest is the leader's memory of how the moves it saw ended, and of
	// the destinations it rests (move_rest.go).
	rest destinationRest
	// held are requests waiting for their topic, or the partition they
	// pin, to reach this replica (topicwait.go), in arrival order; at most
	// Config.HeldRequestsMax.
	// heldAsked names the topics whose GetTopic to the leader is in
	// flight for them: one per topic, whatever the requests held for it.
	held      []heldRequest
	heldAsked map[string]bool
	// heldSeq numbers the held requests (heldRequest.seq).
	heldSeq uint64
	// heldRefusedFull counts the requests answered 503 at once since the
	// start because HeldRequestsMax were held (Stats.HeldRefusedFull);
	// it only increases.
	heldRefusedFull uint64
	// leaderReads is the read barrier the leader's answers about topics
	// wait for (readbarrier.go).
	leaderReads readBarrier
	// sweeper deletes stale copies of partitions (move_sweep.go).
	sweeper sweeper
	// moves are the sessions of moves into this node, by partition;
	// moveJobs the finalize jobs for the next Ready (move_dest.go).
	moves    map[partitionKey]*moveSession
	moveJobs []movePending
	// moveKeys are the keys of moves, sorted, as sessionKeys listed them
	// last; nil once a session starts or ends, until it lists them again.
	// Nothing writes into it: a loop over it outlives the sessions it
	// ends.
	moveKeys []partitionKey
	// movesScratch is driveMoves' copy of the metastore's moves, reused
	// from tick to tick; it means nothing between calls.
	movesScratch []meta.Move
	// producing names the partitions of the produce whose logs
	// openProduceLogs is opening (they stay open for it and may go past
	// the cap of open logs); set and cleared by openProduceLogs only.
	producing producingPartitions
	// driving is the parent partition whose cursors driveParentPartition
	// is stepping (its log stays open meanwhile), nil otherwise; set and
	// cleared there only.
	driving *partition
	// jobsOrphaned holds the partitions whose session ended while its
	// finalize job was out (handed out, not yet JobDone): the job owns
	// their staged and partition directories until it returns, so no
	// session starts there and the sweep leaves them alone meanwhile.
	// Each holds the identity of the topic the move was of. Set by
	// endSession, cleared by jobDone (move_dest_actions.go), or, when the
	// job's return could not remove the old topic's directory, by
	// retryOrphanRemovals once it could.
	jobsOrphaned map[partitionKey]meta.TopicIdentity
	// orphansUnremoved are the partitions of jobsOrphaned whose job came
	// back after its topic was deleted (and perhaps created again) and
	// whose directory, holding that old topic's files, could not be
	// removed (an I/O error): retryOrphanRemovals tries again at every
	// tick, and the partition stays in jobsOrphaned meanwhile, so nothing
	// opens the old files as the new topic's. A restart forgets it: the
	// install carries the old creation's stamp (stampStaged), and the
	// first open removes it (stamp.go).
	orphansUnremoved map[partitionKey]bool
	// moveRestarts counts, per partition, the restarts of the move into
	// this node that last restarted there (move_dest.go), for
	// MoveConfig.RestartsMax. An entry goes once its move no longer
	// targets this node and no session of it runs here (driveMoves), or
	// is replaced when another move of the partition restarts; at most
	// one per partition.
	moveRestarts map[partitionKey]moveRestartCount
	// moveObserver receives the move metrics (a no-op unless the
	// observer implements MoveObserver).
	moveObserver MoveObserver
	// appendObserver hears of every append (a no-op unless the observer
	// implements AppendObserver).
	appendObserver AppendObserver
	// ackObserver hears of every ack applied (a no-op unless the
	// observer implements AckObserver).
	ackObserver AckObserver
	// deadLetterObserver hears of every dead letter settled here (a no-op
	// unless the observer implements DeadLetterObserver).
	deadLetterObserver DeadLetterObserver

	// The Ready being gathered. replies hold answers in arrival order;
	// dirty holds the partitions with unsynced records or offsets;
	// dependents maps a partition to the indexes in replies that must not
	// succeed unless that partition's sync round does.
	replies    []msg.Reply
	dirty      map[partitionKey]*partition
	dependents map[partitionKey][]int
	messages   []msg.Envelope
	// produceForwards are the produce parts forwarded to their owners in
	// the Ready being built (Ready.ProduceForwards), apart from messages:
	// they may leave before the Ready's Syncs run.
	produceForwards []msg.Envelope
	// earlyReplies are the client replies of the Ready being built that
	// depend on none of its Syncs (Ready.EarlyReplies).
	earlyReplies []msg.Reply

	// delayed is the work fault sites put off to a later Tick, and
	// forwardedTwice the indexes in produceForwards of the forwards a
	// fault site sends twice (faultsites.go); both empty outside the
	// simulator.
	delayed        []delayedWork
	forwardedTwice []int

	// round counts the Readys handed out: the boundary of a sync round.
	round uint64
	// advancePending is set from Ready to Advance: the Ready's sync rounds
	// may be in flight, and inputs handled meanwhile go to the next Ready.
	advancePending bool
	// draining is set when graceful shutdown starts: consumes no longer
	// wait.
	draining bool
	// retentionCursor rotates the closed logs a retention pass reopens.
	retentionCursor int
	// logEvictions counts the logs closed to stay under OpenLogsMax, the
	// latest at lastEvictionMs (math.MinInt64 before the first).
	logEvictions   uint64
	lastEvictionMs int64
	// openRefused holds the partitions whose log the open-log cap refused
	// to open (makeRoomForLog) since the last Advance that completed
	// partition rounds: the polls that may take their records, here and
	// on other nodes, are told at the next such Advance, whose rounds may
	// have freed the logs. Told at every Advance, a probe from another
	// node refused again, while a log stayed held with no round to free
	// it, was answered and notified again at once, without end (a planted
	// bug's sweep ran out of memory that way). Each partition at most
	// once; emptied by that Advance.
	openRefused partitionsToTell
	// skipsCapped holds the partitions a reserve of which stopped after
	// corruptSkipsPerReserveMax corrupt records, maybe holding good
	// records beyond them: the polls that may take those, here and on
	// other nodes, are told at the next Tick, whose look goes on skipping
	// (each look skips for good what it passed, so a damaged run ends).
	// Each partition at most once; emptied by that Tick.
	skipsCapped partitionsToTell
	// readFailed holds the partitions a reserve of which failed to read
	// a record or to open the log (a disk error, a copy being installed):
	// the polls that may take their records, here and on other nodes, are
	// told at the first Tick from readRetryAtMs on (retryFailedReads), as
	// nothing else would wake a poll that found a backlog it could not
	// read. Each partition at most once; emptied by that Tick. A disk that
	// keeps failing is read again once per readRetryIntervalMs.
	readFailed    partitionsToTell
	readRetryAtMs int64
	// reads is what the consumes of this round read (reads.go).
	reads roundReads

	// Deadlines of periodic work, in node time.
	nextCommitPersistMs int64
	// leaseBudget counts the lease tables against Config.LeasesMax
	// (leases.go).
	leaseBudget leaseBudget
	// frozenPartitions holds exactly the partitions whose freeze holds
	// (partition.freeze.Frozen), so that expireFreezes looks at those
	// only; changed by beginFreeze, endFreeze and removePartition.
	frozenPartitions map[partitionKey]*partition
	nextRetentionMs  int64
	nextMetaTickMs   int64
	nextHeartbeatMs  int64
	nextPlanMs       int64
}

// New recovers a node at time nowMs: partition logs from fs (lazily, on
// first use) and the metastore replica from metaStore, which the node owns
// from then on (Close and Abandon close it). A single node (cfg.Meta with
// itself as the only voter) elects itself at once.
func New(cfg Config, fs storage.FS, metaStore *meta.Store, nowMs int64, observer Observer) (*Node, error) {
	cfg = cfg.withMetaDefaults()
	if err := cfg.Validate(); err != nil {
		_ = metaStore.Close()
		return nil, fmt.Errorf("node config: %w", err)
	}
	if observer == nil {
		observer = NopObserver{}
	}
	// The replica opens with this start's incarnation: each start's
	// proposal sequence begins above every earlier start's, so a proposal
	// of an earlier start that commits late (a forwarded MsgProp held up
	// on its way) never matches one of this start's in the same term. The
	// incarnation is stored once the start is accepted and before the
	// replica can propose anything: a refused start changes nothing on
	// disk (it advanced the incarnation before refusing).
	incarnation, err := nextIncarnation(fs)
	if err != nil {
		_ = metaStore.Close()
		return nil, err
	}
	base := incarnation << incarnationNonceShift // this start's numbers: proposals, receipt nonces, forwards
	cfg.Meta.ProposalSequenceBase = base
	cfg.Meta.DataID = cfg.DataID
	replica, err := meta.New(cfg.Meta, metaStore)
	if err != nil {
		_ = metaStore.Close()
		return nil, err
	}
	if err := acceptStart(fs, replica.State(), incarnation); err != nil {
		_ = replica.Close()
		return nil, err
	}
	n := newNode(cfg, fs, replica, nowMs, observer)
	n.incarnation = incarnation
	n.nonceFloor = base
	n.routing.forwards.Renumber(base)
	if err := n.recover(); err != nil {
		_ = replica.Close()
		return nil, err
	}
	return n, nil
}

func newNode(cfg Config, fs storage.FS, replica *meta.Meta, nowMs int64, observer Observer) *Node {
	return &Node{
		cfg: cfg, fs: fs, store: storage.NewStore(fs, cfg.Log, cfg.OpenLogsMax, cfg.ClosedLogsKeptBytesMax), observer: observer, nowMs: nowMs,
		handles: lease.NewHandles(cfg.HandleKey), meta: replica, proposals: map[meta.ProposalID]*pendingProposal{}, known: map[string]meta.TopicIdentity{},
		cursors: map[string]*topicCursors{}, partitions: map[partitionKey]*partition{}, waiters: newWaiterSet(),
		dirty: map[partitionKey]*partition{}, dependents: map[partitionKey][]int{},
		routing: newRouting(), cluster: newClusterState(), retirement: retirement{told: onceEvery[string]{}}, otherDataDirTold: onceEvery[string]{}, sweeper: newSweeper(nowMs, cfg.Moves.SweepIntervalMs),
		moves: map[partitionKey]*moveSession{}, jobsOrphaned: map[partitionKey]meta.TopicIdentity{}, orphansUnremoved: map[partitionKey]bool{}, heldAsked: map[string]bool{}, purgesPending: map[string]bool{}, moveRestarts: map[partitionKey]moveRestartCount{}, moveObserver: moveObserverOf(observer),
		appendObserver: appendObserverOf(observer), ackObserver: ackObserverOf(observer), deadLetterObserver: deadLetterObserverOf(observer),
		fanoutObserver: fanoutObserverOf(observer), fanout: fanoutView{nextMs: math.MaxInt64}, deadLettersDue: map[partitionKey]struct{}{},
		nextCommitPersistMs: nowMs + cfg.CommitPersistIntervalMs,
		nextRetentionMs:     nowMs + min(cfg.RetentionCheckIntervalMs, retentionFirstCheckAfterMs),
		nextMetaTickMs:      nowMs + cfg.MetaTickIntervalMs,
		nextHeartbeatMs:     nowMs,
		lastEvictionMs:      math.MinInt64,
		frozenPartitions:    map[partitionKey]*partition{},
	}
}

// recover finishes a start: stale topic directories go, and a restarted
// sole voter campaigns (a fresh one waits for its bootstrap configuration
// to apply: maintainMeta runs again then).
func (n *Node) recover() error {
	atStart, err := n.retiredAtStart()
	if err != nil {
		return err
	}
	n.retirement.atStart = atStart
	n.rememberTopics()
	if err := n.sweepOrphans(); err != nil {
		return err
	}
	n.freezeMovesFromHere()
	if err := n.discardStagedCopies(); err != nil {
		return err
	}
	if err := n.findStaleCopies(); err != nil {
		return err
	}
	n.maintainMeta()
	return nil
}

// Now returns the node's clock in milliseconds.
func (n *Node) Now() int64 { return n.nowMs }

// Tick advances the node's clock to nowMs (a smaller value is ignored) and
// runs the work that is due, in this order (after the work fault sites put
// off, which only the simulator makes):
//
//  1. the metastore's raft ticks (at most metaTicksPerTickMax), then this
//     node's heartbeat when due (and a sole voter's campaign);
//  2. lease expiry: reservations past their visibility deadline are
//     released and the long polls that may take them woken (those of
//     their partitions and the unpinned ones); records that ran out
//     of deliveries are written to their dead-letter topic (deadletter.go);
//     polls that found a corrupt run's skips or the round's reads capped
//     look again (consume.go, reads.go); a retirement this node learned
//     of is noted (retirement.go);
//  3. long polls whose wait ran out are answered empty;
//  4. metastore proposals without an outcome in time answer a retryable
//     "unknown outcome";
//  5. forwards without an answer in time fail, and their peer is avoided
//     for PeerDownMs;
//  6. requests held for a topic this node had not learned are served, or
//     refused once their wait ran out;
//  7. membership: the leader marks silent members dead; a joining node asks
//     to be added;
//  8. the root user's seed, while this node leads and no user exists;
//  9. freezes of partitions held for a move past Moves.FreezeTTLMs ask for
//     the move's abort;
//  10. the move sessions into this node start, end or take their next step;
//  11. the planner's round on the leader, and the retirement of drained
//     voters;
//  12. the stale-copy sweep asks the leader about its candidates;
//  13. the periodic persist of changed committed offsets, retention, and the
//     closing of idle logs.
func (n *Node) Tick(nowMs int64) {
	if nowMs <= n.nowMs {
		return
	}
	n.nowMs = nowMs
	n.checkLeaseBudget()
	n.runDelayed()
	n.tickMeta()
	n.expireLeases()
	n.sendDeadLetters()
	n.wakeSkipsCapped()
	n.wakeReadsCapped()
	n.retryFailedReads()
	n.noteRetirement()
	n.noteOtherDataDir()
	n.expireWaiters()
	n.expireProposals()
	n.expireForwards()
	n.serveHeld()
	n.maintainMembership()
	n.seedRoot()
	n.expireFreezes()
	n.driveMoves()
	n.planMoves()
	n.sweepStaleCopies()
	n.retryPurges()
	n.retryOrphanRemovals()
	n.driveFanout()
	n.peekBacklogs()
	if nowMs >= n.nextCommitPersistMs {
		n.nextCommitPersistMs = nowMs + n.cfg.CommitPersistIntervalMs
		n.saveFrontiers()
		n.scheduleCommitPersist()
	}
	if nowMs >= n.nextRetentionMs {
		n.nextRetentionMs = nowMs + n.cfg.RetentionCheckIntervalMs
		n.applyRetention()
	}
	if n.cfg.IdleLogCloseMs > 0 {
		n.closeIdleLogs()
	}
}

// NextDeadlineMs returns when the driver should call Tick next, so that it
// can sleep until then. It is the earliest of the deadlines the node tracks
// one by one (lease and long-poll expiry, forwards, held requests, the
// dead-member check, the committed-offset persist, retention) and of the
// next raft tick. The other timed work of Tick (heartbeats, proposal
// timeouts, freeze TTLs, move sessions, the planner, the sweep, joining,
// idle-log closing) is not listed here: it is checked on every Tick, and
// since the next raft tick is at most MetaTickIntervalMs away, a driver that
// sleeps until this deadline runs that work at most one raft tick late.
// Polls left to look again at the next Tick (a round's reads spent, or a
// reserve stopped at the skip bound) ask for it one millisecond on; those
// whose look failed to read, for readRetryIntervalMs after the failure.
func (n *Node) NextDeadlineMs() int64 {
	next := min(n.nextCommitPersistMs, n.nextRetentionMs, n.nextMetaTickMs, n.cluster.nextDeadCheckMs, n.fanout.nextMs)
	if len(n.reads.capped) > 0 || len(n.skipsCapped) > 0 || !n.backlogPeeks.listed || len(n.backlogPeeks.pending) > 0 {
		next = min(next, n.nowMs+1)
	}
	if len(n.readFailed) > 0 {
		next = min(next, n.readRetryAtMs)
	}
	if d, ok := n.waiters.nextDeadline(); ok {
		next = min(next, d)
	}
	if d, ok := n.routing.forwards.NextDeadline(); ok {
		next = min(next, d)
	}
	for _, h := range n.held {
		next = min(next, h.deadlineMs)
	}
	return min(next, n.nextLeaseDeadlineMs())
}

// Handle processes one client request. Its reply appears in a later Ready
// (immediately for most requests; after the sync round for a produce;
// when records arrive or the wait ends for a long poll). The id must be at
// most RequestIDDriverMax.
func (n *Node) Handle(id msg.RequestID, req msg.Request) {
	invariant.Check(id <= RequestIDDriverMax, "node: driver request id %d is above RequestIDDriverMax", id)
	if err := n.retiredRefusal(req); err != nil {
		n.reply(id, nil, err)
		return
	}
	n.handle(id, req)
}

// handle serves a request from a client, a peer (forwarded) or this node
// (an internal part), unless it must wait for this replica (hold).
func (n *Node) handle(id msg.RequestID, req msg.Request) {
	if n.hold(id, req) {
		return
	}
	n.serve(id, req)
}

// serve answers a request from this replica's applied state.
func (n *Node) serve(id msg.RequestID, req msg.Request) {
	switch r := req.(type) {
	case msg.CreateTopic:
		n.createTopic(id, r)
	case msg.ListTopics:
		n.answer(id)(n.listTopics(r))
	case msg.GetTopic:
		n.getTopicRouted(id, r)
	case msg.AlterTopic:
		n.alterTopic(id, r)
	case msg.DeleteTopic:
		n.deleteTopic(id, r)
	case msg.Produce:
		n.produce(id, r)
	case msg.Consume:
		n.consume(id, r)
	case msg.Replay:
		n.replayRouted(id, r)
	case msg.Ack:
		n.ackRouted(id, r)
	case msg.ListMembers:
		n.reply(id, n.listMembers(), nil)
	case msg.ListMoves:
		n.listMovesRouted(id)
	case msg.AttachChild:
		n.attachChild(id, r)
	case msg.DetachChild:
		n.detachChild(id, r)
	case msg.ListChildren:
		n.listChildrenRouted(id, r)
	default:
		n.handleMoveRequest(id, req)
	}
}

// handleMoveRequest serves the requests of the move protocol, which only
// other nodes send, and decommission.
func (n *Node) handleMoveRequest(id msg.RequestID, req msg.Request) {
	if r, ok := req.(msg.Decommission); ok {
		n.decommission(id, r)
		return
	}
	if !localOnly(id) {
		n.reply(id, nil, msg.Invalid("%T is a request between nodes", req))
		return
	}
	switch r := req.(type) {
	case msg.MoveStatus:
		n.answer(id)(n.moveStatus(r))
	case msg.MoveRead:
		n.answer(id)(n.moveRead(r))
	case msg.MoveFreeze:
		n.moveFreeze(id, r)
	case msg.MoveSweepCheck:
		n.answer(id)(n.moveVerdict(r))
	default:
		n.reply(id, nil, msg.Invalid("unknown request type %T", req))
	}
}

// Cancel drops a parked long poll; a request that was already answered or
// is not parked is unaffected. A consume forwarded to its partition's
// owner is cancelled there too (ForwardCancel): the owner answers it at
// once, and what it reserved for it meanwhile goes back when that answer
// arrives.
func (n *Node) Cancel(id msg.RequestID) {
	n.held = slices.DeleteFunc(n.held, func(h heldRequest) bool { return h.id == id })
	if passed, ok := n.routing.passedConsumes[id]; ok && !passed.cancelled {
		passed.cancelled = true
		n.send(passed.owner, msg.ForwardCancel{ID: passed.forward})
	}
	if w, ok := n.waiters.get(id); ok {
		n.waiters.remove(id)
		n.observer.ConsumeWait(w.request.Topic, "cancelled", n.nowMs-w.parkedAtMs)
	}
}

// Step delivers a message from a peer: Raft messages go to the
// metastore; forwarded requests are served and their replies routed back;
// subscriptions and notifications wake long polls across nodes; a join
// asks the leader to add a voter.
func (n *Node) Step(env msg.Envelope) error {
	if env.To != n.cfg.NodeID || env.From == "" || env.From == n.cfg.NodeID {
		return fmt.Errorf("node %s: message %T from %q to %q is misaddressed", n.cfg.NodeID, env.Message, env.From, env.To)
	}
	if err := n.refuseRetiredPeer(env); err != nil {
		return err // a decommissioned node left running (retirement.go)
	}
	// Any message proves the peer is up again (after a restart, say); a
	// peer reachable one way only lets the next forward time out again.
	n.routing.forwards.Heard(env.From)
	n.heardFrom(env.From)
	switch m := env.Message.(type) {
	case msg.RaftMessage:
		// A proposal keeps its proposer's raft id as it is relayed towards
		// the leader; every other raft message comes from its sender.
		if peer, known := n.meta.PeerByRaftID(m.Message.GetFrom()); known && peer.ID != env.From && m.Message.GetType() != raftpb.MsgProp {
			return fmt.Errorf("node %s: a raft message from %s names %s's raft id %d as its sender", n.cfg.NodeID, env.From, peer.ID, m.Message.GetFrom())
		}
		return n.meta.Step(m.Message)
	case msg.ForwardRequest:
		n.stepForwardRequest(env.From, m)
	case msg.ForwardReply:
		n.stepForwardReply(env.From, m)
	case msg.Subscribe:
		n.stepSubscribe(env.From, m)
	case msg.Notify:
		n.stepNotify(env.From, m)
	case msg.Join:
		n.stepJoin(env.From, m)
	case msg.JoinRelay:
		n.stepJoinRelay(env.From, m)
	case msg.JoinAccepted:
		n.stepJoinAccepted(m)
	case msg.Heartbeat:
		n.stepHeartbeat(env.From, m)
	case msg.ForwardCancel:
		n.stepForwardCancel(env.From, m)
	case msg.Retired:
		n.stepRetired(env.From)
	default:
		return fmt.Errorf("node %s: unknown peer message %T from %s", n.cfg.NodeID, env.Message, env.From)
	}
	return nil
}

// HasReady reports whether Ready has anything to hand out.
func (n *Node) HasReady() bool {
	return len(n.replies) > 0 || len(n.dirty) > 0 || len(n.messages) > 0 || len(n.produceForwards) > 0 ||
		len(n.earlyReplies) > 0 || len(n.moveJobs) > 0 || n.leaderReads.wanted || n.meta.HasReady()
}

// SharesRound reports whether the Ready being gathered holds work that
// requests arriving now would share: a partition's sync round or a
// forward of produced records to another owner. A driver that waits to
// batch requests (host's gather window) waits only then: consumes, acks
// and reads are answered without a sync, so holding them back only adds
// latency.
func (n *Node) SharesRound() bool {
	return len(n.dirty) > 0 || len(n.routing.produceForwards) > 0
}

// Ready hands out the gathered outputs. The driver must handle it (see
// the package doc) and call Advance before calling any other method.
func (n *Node) Ready() Ready {
	n.requestRead()
	if chaos.Planted(chaos.BugAckBeforeSync) && len(n.replies) > 0 {
		return n.readyRepliesFirst()
	}
	invariant.Check(!n.advancePending, "node: Ready taken before the previous one was advanced")
	n.round++
	n.advancePending = true
	rounds := n.prepareRounds() // before the replies are taken: a log failed there answers its own 503
	rd := Ready{Replies: n.replies, Messages: n.messages, ProduceForwards: n.produceForwards, EarlyReplies: n.earlyReplies}
	n.duplicateProduceForwards(&rd)
	rd.ProduceForwards = dropFailedForwards(rd.ProduceForwards)
	for _, prepared := range rounds {
		p := prepared.partition
		p.roundInFlight = true
		sync := Sync{Dir: p.dir, log: p.log, round: prepared.round, partition: p, fs: n.fs, cursors: n.takeCursorWrites(p)}
		if len(sync.cursors) > 0 {
			sync.refused = &cursorsRefused{}
		}
		rd.Syncs = append(rd.Syncs, sync)
	}
	n.addMetaReady(&rd)
	n.addMoveJobs(&rd)
	n.routeReplies(&rd)
	n.replies, n.messages, n.produceForwards, n.earlyReplies = nil, nil, nil, nil
	clear(n.routing.produceForwards)
	n.resetRound()
	return rd
}

// preparedRound is a dirty partition's sync round, prepared for a Ready.
type preparedRound struct {
	partition *partition
	round     *storage.SyncRound
}

// prepareRounds starts the sync round of every dirty partition: each
// covers what was appended so far, and appends before Advance wait for
// the next one. A round whose buffered records the disk had no room for
// (records past the log's preallocated tail: its write, on the loop,
// failed the log) fails its log instead, as a failed append does: the
// requests waiting for it are answered 503, never 202, and the log is
// recovered from its disk at its next open. Its round failed the Ready,
// and so stopped the node, on a disk filled by other programs.
func (n *Node) prepareRounds() []preparedRound {
	evicting := n.evicting()
	var rounds []preparedRound
	for _, p := range n.sortedDirty() {
		if evicting {
			p.log.PersistHWMNextRound()
		}
		round := p.log.PrepareSync(true, true)
		if err := round.Err(); errors.Is(err, storage.ErrNoSpace) {
			n.failLog(p, err)
			continue
		}
		rounds = append(rounds, preparedRound{partition: p, round: round})
	}
	return rounds
}

// dropFailedForwards removes the produce forwards that failed before they
// left (forwardProducePart blanks them).
func dropFailedForwards(forwards []msg.Envelope) []msg.Envelope {
	return slices.DeleteFunc(forwards, func(env msg.Envelope) bool { return env.Message == nil })
}

// resetRound empties the partitions and dependents of the round just
// handed out, with fresh maps only when they hold something: most
// Readys of consumes and acks have neither, and clearing would keep a
// burst's large tables for good.
func (n *Node) resetRound() {
	if len(n.dirty) > 0 {
		n.dirty = map[partitionKey]*partition{}
	}
	if len(n.dependents) > 0 {
		n.dependents = map[partitionKey][]int{}
	}
}

// readyRepliesFirst is planted bug BugAckBeforeSync: the replies leave in
// a Ready of their own, before the sync round that makes them true.
func (n *Node) readyRepliesFirst() Ready {
	rd := Ready{Replies: n.replies, Messages: n.messages, ProduceForwards: n.produceForwards, EarlyReplies: n.earlyReplies}
	n.duplicateProduceForwards(&rd)
	rd.ProduceForwards = dropFailedForwards(rd.ProduceForwards)
	n.routeReplies(&rd)
	n.replies, n.messages, n.produceForwards, n.earlyReplies = nil, nil, nil, nil
	clear(n.routing.produceForwards)
	n.dependents = map[partitionKey][]int{}
	return rd
}

// Advance tells the node that rd was persisted and sent. Records made
// durable become visible now, so parked long polls of those topics are
// served (their replies go into the next Ready).
func (n *Node) Advance(rd Ready) {
	// The logs' rounds complete first: applying the metastore may close
	// or delete a partition, which must not race a round.
	n.advancePending = false
	n.completeSyncs(rd)
	n.closeLogsPastCap()
	n.advanceMeta()
	n.completeInternal(rd)
	n.holdLateReplies(rd)
	var told partitionsToTell
	for _, s := range rd.Syncs {
		if s.meta != nil {
			continue
		}
		told.addAll(n.openRefused) // the rounds may have freed the logs they were refused
		n.openRefused = nil
		if s.Data() {
			told.add(s.partition.key.topic, s.partition.key.index) // only its own records became visible
			n.fanoutDue(s.partition)
		}
		if s.partition != nil {
			n.answerFreezes(s.partition)
			n.retainDeferred(s.partition, &told)
		}
	}
	n.tellPartitions(&told)
}

// completeSyncs ends the partitions' sync rounds of a persisted Ready:
// what each covered becomes visible (appends since it was taken stay
// invisible until the next round).
func (n *Node) completeSyncs(rd Ready) {
	for _, s := range rd.Syncs {
		if s.meta != nil {
			continue
		}
		s.partition.roundInFlight = false
		if err := s.log.CompleteSync(s.round, nil); err != nil {
			n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", s.Dir, err))
		}
		if err := s.round.CommittedRefused(); err != nil {
			n.committedWriteRefused(s.partition, err)
		}
		n.cursorsWritten(s.partition, s.cursors, s.refused)
	}
}

// answer returns a function that queues the reply to id, so that a
// handler's (result, error) pair can be passed straight through.
func (n *Node) answer(id msg.RequestID) func(msg.Result, error) {
	return func(result msg.Result, err error) { n.reply(id, result, err) }
}

// replyDurable is reply for an answer that depends on nothing the Ready
// being built makes durable (a produce join whose every part was answered
// after its owner's sync round): a client's goes out in
// Ready.EarlyReplies, one for an internal part or a forwarded request
// as any other.
func (n *Node) replyDurable(id msg.RequestID, result msg.Result, err error) {
	if localOnly(id) {
		n.reply(id, result, err)
		return
	}
	n.earlyReplies = append(n.earlyReplies, msg.Reply{ID: id, Result: result, Err: err})
}

func (n *Node) reply(id msg.RequestID, result msg.Result, err error) {
	if err != nil {
		n.replies = append(n.replies, msg.Reply{ID: id, Err: err})
		return
	}
	n.replies = append(n.replies, msg.Reply{ID: id, Result: result})
}

// Close persists every changed committed consumer offset and closes the
// logs. The driver calls it once, at graceful shutdown, after the last
// Ready was handled; the node must not be used afterwards. An offset
// whose file the disk has no room for (a file to create) is left
// unpersisted, as a sync round leaves it (committed-offset-write-refused):
// the logs close all the same, the next start delivers the records
// acknowledged since its last persist again, and when nothing else failed
// Close returns an *UnpersistedOffsets naming the partitions, which a
// driver reports and need not treat as a failure.
func (n *Node) Close() error {
	var errs []error
	unpersisted := &UnpersistedOffsets{}
	for _, p := range n.sortedPartitions() {
		if p.frontierUnsaved {
			n.saveFrontier(p)
		}
		if p.log != nil && p.log.CommittedDirty() {
			if err := p.log.SyncCommitted(); refusedForRoom(err) {
				n.committedWriteRefused(p, err)
				unpersisted.Dirs, unpersisted.Cause = append(unpersisted.Dirs, p.dir), err
			} else if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", p.dir, err))
			}
		}
		if err := n.closeCursors(p); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", p.dir, err))
		}
	}
	if err := n.store.CloseAll(); err != nil {
		errs = append(errs, err)
	}
	if err := n.meta.Close(); err != nil {
		errs = append(errs, err)
	}
	if len(unpersisted.Dirs) == 0 {
		return errors.Join(errs...)
	}
	if len(errs) == 0 {
		return unpersisted
	}
	return errors.Join(append(errs, unpersisted)...)
}

// refusedForRoom reports whether err, from Log.SyncCommitted, is the disk
// having no room for the committed offset's write alone, the log still
// usable (storage.SyncRound.CommittedRefused).
func refusedForRoom(err error) bool {
	return err != nil && !errors.Is(err, storage.ErrLogFailed) && storage.OnlyNoSpace(err)
}

// UnpersistedOffsets is Close's error when the disk had no room for some
// partitions' committed offsets: their files keep the offsets of their
// last persist, so the next start delivers the records acknowledged
// since then again (duplicates, never a gap). Close returns it alone
// when nothing else failed.
type UnpersistedOffsets struct {
	// Dirs are the partitions' directories, sorted; Cause is the last
	// refusal, a full disk.
	Dirs  []string
	Cause error
}

// unpersistedDirsShown bounds the directories UnpersistedOffsets names.
const unpersistedDirsShown = 5

func (u *UnpersistedOffsets) Error() string {
	named := strings.Join(u.Dirs[:min(len(u.Dirs), unpersistedDirsShown)], ", ")
	if len(u.Dirs) > unpersistedDirsShown {
		named += fmt.Sprintf(" and %d more", len(u.Dirs)-unpersistedDirsShown)
	}
	return fmt.Sprintf("the committed consumer offsets of %d partition(s) (%s) were not persisted: the disk has no room for their files (%v); "+
		"the records acknowledged since their last persist will be delivered again", len(u.Dirs), named, u.Cause)
}

func (u *UnpersistedOffsets) Unwrap() error { return u.Cause }

// Abandon drops the node as a crash would: nothing is persisted or
// synced; the metastore's file is closed (its committed transactions
// survive, as bbolt guarantees) so that a new node can open it. The
// simulator calls it when it kills a node.
func (n *Node) Abandon() error {
	return n.meta.Close()
}

// Serving returns nil when the node can serve its clients: its metastore
// replica knows a leader, this node is one of the group's voters, and a
// member. Otherwise it says why (readiness probes report it): a node that
// lost the leader, that was removed from the cluster (decommissioned) or
// that has not joined yet is not ready.
func (n *Node) Serving() error {
	if n.knowsRetired() {
		return n.retiredError()
	}
	if err := n.logLostError(); err != nil {
		return err
	}
	if _, ok := n.meta.Leader(); !ok {
		return errors.New("no metadata leader known")
	}
	if _, voter := n.meta.State().PeerByNodeID(n.cfg.NodeID); !voter {
		return errors.New("this node is not a voter of the cluster (removed, or not joined yet)")
	}
	if _, member := n.meta.State().Member(n.cfg.NodeID); !member {
		return errors.New("this node is not a cluster member yet")
	}
	return n.writeFence()
}

// MetaStatus summarizes this node's replica of the metastore (term,
// commit, applied and snapshot index, leader), for metrics and checkers.
func (n *Node) MetaStatus() meta.Status { return n.meta.Status() }

// MetaAppliedIndex is MetaStatus().Applied without the rest of the status
// (the simulator's metastore model asks after every step).
func (n *Node) MetaAppliedIndex() uint64 { return n.meta.AppliedIndex() }

// Stats are the node's inventory numbers, for metrics.
type Stats struct {
	Topics, Partitions, OpenLogs, ParkedPolls int
	// TopicsMax is the cluster's bound of Topics (Config.TopicsMax) as
	// this node holds it; a create past it is refused.
	TopicsMax int
	// OwnedPartitions counts the partitions this node owns in its replica
	// of the placement, the count Config.PartitionsPerNodeMax
	// (OwnedPartitionsMax) bounds: past it a create or a grow is refused.
	OwnedPartitions, OwnedPartitionsMax int
	// OpenLogsMax is the cap of OpenLogs; LogEvictions counts the logs
	// closed since start to stay under it.
	OpenLogsMax  int
	LogEvictions uint64
	// MovesInFlight counts the partitions with a target in this node's
	// replica of the placement.
	MovesInFlight int
	// MoveSessions counts the moves into this node it is copying, and
	// FrozenPartitions the partitions it keeps frozen as a move's source.
	MoveSessions, FrozenPartitions int
	// RestingDestinations counts the members this node, as the leader,
	// rests after their moves kept failing (move_rest.go); 0 elsewhere.
	RestingDestinations int
	// RelaysInFlight counts this node's own writes into topics (dead
	// letters) not yet durable; at most RelaysInFlightMax.
	RelaysInFlight, RelaysInFlightMax int
	// RelayBytesInFlight is their key and payload bytes, at most
	// RelayBytesInFlightMax (or one relay's).
	RelayBytesInFlight, RelayBytesInFlightMax int64
	// HeldRequests counts the requests waiting for their topic, or the
	// partition they pin, to reach this replica; at most HeldRequestsMax.
	HeldRequests, HeldRequestsMax int
	// UsersBytes is what the users of this replica hold against
	// meta.UsersBytesMax (names, password hashes, grants).
	UsersBytes int
	// HeldRefusedFull counts the requests answered 503 at once since the
	// start because HeldRequestsMax were held.
	HeldRefusedFull uint64
	// MetaReadsOutstanding counts the metastore leader's read requests
	// (the quorum confirmations its 404s and 400s about a topic wait for,
	// readbarrier.go) raft has not confirmed yet, at most MetaReadsMax
	// (meta.ReadRequestsMax); 0 on a replica that does not lead.
	// MetaReadsConfirmed counts those confirmed since the start.
	MetaReadsOutstanding, MetaReadsMax int
	MetaReadsConfirmed                 uint64
	// ZeroTailBytes is the disk the partition logs hold preallocated as
	// zero tails (storage/doc.go): those of the open logs, and those the
	// logs closed since the node started left behind. A partition not
	// opened since the start is not counted (its tail is unknown until
	// its log's recovery reads it).
	ZeroTailBytes int64
	// KeptLogs counts the logs closed for room or idleness that the node
	// keeps for a warm reopen, KeptLogBytes their memory, at most
	// KeptLogBytesMax (Config.ClosedLogsKeptBytesMax).
	KeptLogs                      int
	KeptLogBytes, KeptLogBytesMax int64
	// OpenLogIndexBytes is the memory of the open logs' indexes (4 bytes
	// a record): OpenLogsMax bounds their number, their records their size.
	OpenLogIndexBytes int64
	// LeasesHeld is the number of offsets the lease tables hold (moved
	// by every change of a table), at most about LeasesMax
	// (Config.LeasesMax).
	LeasesHeld, LeasesMax int
	// DiskFreeBytes is the disk free space as the node estimates it (the
	// last SetDiskFree less what it appended since; 0 before a report);
	// DiskLow is set while it is under DiskReserveBytes
	// (Config.DiskReserveBytes) and the node refuses writes into its
	// partitions.
	DiskFreeBytes, DiskReserveBytes int64
	DiskLow                         bool
	// DiskReserveRefusals counts the clients' produces this node refused
	// (503) since the start because it was under its reserve
	// (refusedForDisk).
	DiskReserveRefusals uint64
	// FanoutCursors counts the fan-out cursors loaded here (one per child
	// and parent partition this node drives), and FanoutCursorSteps the
	// times the driver stepped one since the start: a cursor that waits
	// (caught up, or for its linger, retry or due time) is not stepped.
	FanoutCursors     int
	FanoutCursorSteps uint64
}

// Stats returns the node's inventory numbers.
func (n *Node) Stats() Stats {
	topics := n.meta.State().Topics()
	s := Stats{Topics: len(topics), ParkedPolls: n.waiters.parked(), OpenLogs: len(n.store.OpenDirs()), MovesInFlight: len(n.meta.State().Moves()),
		OpenLogsMax: n.store.OpenMax(), LogEvictions: n.logEvictions, RelaysInFlight: n.relays.inFlight, RelaysInFlightMax: n.cfg.RelaysInFlightMax,
		RelayBytesInFlight: n.relays.bytesInFlight, RelayBytesInFlightMax: n.cfg.RelayBytesInFlightMax,
		HeldRequests: len(n.held), HeldRequestsMax: n.cfg.HeldRequestsMax,
		TopicsMax: n.cfg.TopicsMax, OwnedPartitionsMax: n.cfg.PartitionsPerNodeMax,
		OwnedPartitions: n.meta.State().PartitionsOwned()[n.cfg.NodeID]} // the count the limit checks
	for _, record := range topics {
		s.Partitions += record.Partitions
	}
	s.MoveSessions, s.FrozenPartitions = len(n.moves), len(n.FrozenPartitions())
	s.RestingDestinations = n.restingDestinations()
	s.ZeroTailBytes = n.zeroTailBytes()
	s.KeptLogs, s.KeptLogBytes = n.store.Kept()
	s.KeptLogBytesMax = n.cfg.ClosedLogsKeptBytesMax
	s.OpenLogIndexBytes = n.store.OpenIndexBytes()
	s.LeasesHeld, s.LeasesMax = n.leasesHeld(), n.cfg.LeasesMax
	s.DiskFreeBytes, _ = n.diskFree()
	s.DiskReserveBytes, s.DiskLow, s.DiskReserveRefusals = n.cfg.DiskReserveBytes, n.underReserve(), n.disk.refused
	s.FanoutCursors, s.FanoutCursorSteps = n.fanoutCursors(), n.fanout.cursorSteps
	s.HeldRefusedFull = n.heldRefusedFull
	s.MetaReadsOutstanding, s.MetaReadsMax = n.meta.ReadsOutstanding(), meta.ReadRequestsMax
	s.MetaReadsConfirmed = n.leaderReads.confirmedTotal
	s.UsersBytes = n.meta.State().UsersBytes()
	return s
}

// fanoutCursors counts the cursors loaded in the partitions.
func (n *Node) fanoutCursors() int {
	cursors := 0
	for _, p := range n.partitions { //determinism:ok a sum
		cursors += len(p.fanout)
	}
	return cursors
}

// zeroTailBytes sums the zero tails of the open logs and of the logs the
// node closed and has not reopened.
func (n *Node) zeroTailBytes() int64 {
	total := n.store.ZeroTailBytes()
	for _, p := range n.partitions { //determinism:ok a sum
		if p.log == nil {
			total += p.closed.ZeroTailBytes
		}
	}
	return total
}

// ReleaseWaiters answers every parked long poll with nothing, at once, and
// parks no new ones: the driver calls it when graceful shutdown starts.
func (n *Node) ReleaseWaiters() {
	n.draining = true
	for _, w := range n.waiters.popExpired(maxTimeMs) {
		n.observer.ConsumeWait(w.request.Topic, "cancelled", n.nowMs-w.parkedAtMs)
		n.reply(w.id, msg.ConsumeResult{Messages: []msg.Message{}, Batch: w.request.Max > 0}, nil)
	}
}

const maxTimeMs = int64(^uint64(0) >> 1)

// PartitionState is a checker's view of one open partition log.
type PartitionState struct {
	Dir   string
	Topic string
	// Identity is the creation of the topic the partition is open for.
	Identity   meta.TopicIdentity
	Partition  int
	HWM        uint64
	Committed  uint64
	InFlight   int
	AckedAhead int
}

// OpenPartitions reports the state of every open partition log, sorted by
// topic and partition. The simulator's state checker reads it after every step.
func (n *Node) OpenPartitions() []PartitionState {
	return n.AppendOpenPartitions(make([]PartitionState, 0, len(n.partitions)))
}

// PartitionBacklogs reports, sorted by topic and partition, the state of
// every partition this node writes whose log is open, as it stands, and
// of each whose log closed since the node started (idle, evicted or
// failed) and that holds a backlog (records not committed, leased or
// acked ahead), as it closed, with its lease table's present counts and
// frontier. Nothing appends to a closed log, so its figures stay true
// until it opens again. A closed log without a backlog is left out (its
// lag is 0: the series it would keep, one per partition ever opened, is
// what a scrape need not carry). A partition whose log has not opened
// since the node started is reported as its files held it, once the
// node has read them (backlog_peek.go), with its lease table's present
// counts if it has one. Dir is the partition's directory; the host's
// metrics read this every few seconds.
func (n *Node) PartitionBacklogs() []PartitionState {
	var out []PartitionState
	for _, p := range n.sortedPartitions() {
		if p.log == nil && !p.closedKnown {
			continue
		}
		state := PartitionState{
			Dir: p.dir, Topic: p.key.topic, Identity: n.known[p.key.topic], Partition: p.key.index,
			HWM: p.closed.HWM, InFlight: p.leases.InFlight(), AckedAhead: p.leases.AckedAhead(),
			// acks while closed move the lease table's frontier, saved to
			// the log only when it opens again (noteFrontier)
			Committed: max(p.closedCommitted, min(p.leases.Committed(), p.closed.HWM)),
		}
		if p.log != nil {
			state.HWM, state.Committed = p.log.HWM(), p.log.Committed()
		} else if state.HWM == state.Committed && state.InFlight == 0 && state.AckedAhead == 0 {
			continue
		}
		out = append(out, state)
	}
	if peeked := n.peekedBacklogs(); len(peeked) > 0 {
		out = append(out, peeked...)
		slices.SortFunc(out, func(a, b PartitionState) int {
			return compareKeys(partitionKey{a.Topic, a.Partition}, partitionKey{b.Topic, b.Partition})
		})
	}
	return out
}

// OpenLogDirs lists the directories of the partition logs the node's
// store holds open, sorted. The simulator asks it when the node removes a
// directory: no open log may lose its files.
func (n *Node) OpenLogDirs() []string { return n.store.OpenDirs() }

// AppendOpenPartitions appends what OpenPartitions reports to out and
// returns it, so that a caller that asks after every step reuses one slice.
func (n *Node) AppendOpenPartitions(out []PartitionState) []PartitionState {
	for _, p := range n.sortedPartitions() {
		if p.log != nil {
			out = append(out, PartitionState{
				Dir: p.dir, Topic: p.key.topic, Identity: n.known[p.key.topic], Partition: p.key.index, HWM: p.log.HWM(), Committed: p.log.Committed(),
				InFlight: p.leases.InFlight(), AckedAhead: p.leases.AckedAhead(),
			})
		}
	}
	return out
}
