package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"narad/auth"
	"narad/meta"
	"narad/msg"
	"narad/node"
	"narad/storage"
)

// Bounds of the loop.
const (
	// inboxCapacity bounds requests queued for the loop; a full inbox
	// blocks HTTP handlers (backpressure), never grows.
	inboxCapacity = 4096
	// inputsPerRoundMax bounds the inputs handled before a Ready, so a
	// flood cannot delay the sync round (and replies) without limit.
	inputsPerRoundMax = 1024
	// tickIntervalMax is the longest the loop sleeps without a tick.
	tickIntervalMax = 100 * time.Millisecond
	// gatherWindowMax bounds how long a round waits for the clients that
	// the previous flush answered to send their next request (and for the
	// requests queued before it answered, which are there already), so
	// that they share one sync round instead of splitting into a round of
	// one and a round of the rest (measured: rounds alternated 1 and 15
	// with 16 closed-loop producers, halving throughput).
	gatherWindowMax = 500 * time.Microsecond
	// groupSyncRoundsMin is the fewest partition rounds carrying records
	// that one Ready's persist makes durable together (node.RunTogether,
	// one syncfs) rather than with an fdatasync each in parallel.
	// Measured on this kind of two-core VM (600 B per log per round):
	// parallel fdatasyncs took 0.27 ms for one log, 0.45 for two, 0.65
	// for three and 0.95 for five; one syncfs 0.35, 0.43, 0.48 and 0.53.
	groupSyncRoundsMin = 2
)

// input is one thing for the loop: a request (reply != nil), a cancel
// (with the request's reply channel, which nobody reads any more), an
// envelope from a peer (fromPeer), or a control function run on the loop
// goroutine (stats, shutdown).
type input struct {
	id       msg.RequestID
	request  msg.Request
	reply    chan msg.Reply // buffered, capacity 1
	cancel   bool
	control  func(*node.Node)
	fromPeer bool
	envelope msg.Envelope
	// userChange, with reply, is a user change for node.ChangeUsers.
	userChange meta.Command
}

// loop owns the node. Only run's goroutine touches node and pending.
type loop struct {
	node    *node.Node
	inbox   chan input
	clock   func() time.Time
	logger  *slog.Logger
	metrics *Metrics

	// peerInbox queues envelopes from peers (transport reader goroutines
	// write, the loop reads). Separate from inbox so that a flood of
	// client requests cannot hold Raft traffic back.
	peerInbox chan msg.Envelope
	// peerInboxBytes sums the payload bytes of the envelopes in peerInbox
	// (at most peerInboxBytesMax, or one envelope's); fromPeer adds
	// before it queues, tookFromPeer takes off. peerRoom wakes a reader
	// waiting for room (capacity 1: a wake is never lost, and each take
	// sends one).
	peerInboxBytes atomic.Int64
	peerRoom       chan struct{}
	// peerBytesMax is peerInboxBytesMax (tests lower it); set before run.
	peerBytesMax int64
	// transport sends the node's envelopes; nil for a single node. Set
	// before run starts, then only used by the loop goroutine.
	transport transport
	// peerAddrs is the address book last handed to the transport (id ->
	// cluster address); nextPeerRefresh is when to compare it again with
	// the node's. Loop goroutine only.
	peerAddrs       map[string]string
	nextPeerRefresh time.Time
	// leader holds whether the node led the metastore at the last flush,
	// and metaStatus its replica's summary then; the loop publishes both
	// after each flush, for the metrics.
	leader     atomic.Bool
	metaStatus atomic.Pointer[meta.Status]
	// dialFailures are the transport's counts last seen; nextPeerCheck is
	// when to look again; pauseMarked holds the peers whose down mark the
	// loop renewed while the transport waited out its backoff, to end
	// with the pause (checkUnreachable). Loop goroutine only.
	dialFailures  map[string]uint64
	nextPeerCheck time.Time
	pauseMarked   map[string]bool

	// pending maps a request id to where its reply goes.
	pending map[msg.RequestID]chan msg.Reply
	// requestIDs numbers the node's requests, the clients' (backend) and
	// the loop's own; an id is never reused within a process.
	requestIDs atomic.Uint64
	// unclaimed are consume replies whose client left before they were
	// read: their records go back to the node (handBack) as soon as the
	// node may take inputs. Loop goroutine only.
	unclaimed []msg.Reply
	// answeredLastFlush counts the replies the last flush delivered: how
	// many clients may be about to send again. queuedLastFlush counts the
	// inputs queued when that flush started delivering: requests of
	// clients it did not answer, which the next round takes at once.
	// Their sum is the requests the next round waits for (up to
	// gatherWindowMax), so that closed-loop clients share one round
	// instead of alternating in two cohorts, each waiting for the
	// other's fsync.
	answeredLastFlush, queuedLastFlush int
	// gather is the reusable timer of the gather window.
	gather *time.Timer
	// groupSync, when not nil, is the node's file system with group sync
	// enabled: a Ready with at least groupSyncRoundsMin data rounds is
	// persisted with node.RunTogether. Set before run starts.
	groupSync storage.GroupSyncer
	// disk reports the data directory's free space, read every
	// diskCheckInterval (checkDisk) and told to the node; nil for a loop
	// without one (the node then keeps no reserve). Set before run.
	disk          freeSpace
	nextDiskCheck time.Time
	// metaRoom keeps the metastore's file allocated ahead of its end,
	// checked with the free space (checkDisk); nil for a loop without
	// one. Set before run.
	metaRoom *metaRoom
	// serving holds the node's last Serving() answer (nil when ready),
	// published by the loop for the readiness probe.
	serving atomic.Pointer[servingState]
	// schemas is the node's schema view (kept versions by topic), rebuilt
	// by the loop after a persist that changed the node's SchemaEpoch and
	// before that round's replies leave; never changed once published.
	schemas atomic.Pointer[schemaView]
	// failed is set, under failedMu, when persisting failed; the loop has
	// then stopped and every Do answers 503.
	failedMu sync.Mutex
	failed   error
	done     chan struct{}
	// jobs counts the node's off-loop jobs still running; run waits for
	// them before it returns, at most jobsWaitMax (set before run: the
	// host's shutdown grace). jobsLeft, set by run as it returns, says
	// some were still running then: the node must be dropped as a crash
	// would (Abandon), since a job still writes its files, which the
	// next start repairs (storage.RepairInstall).
	jobs        sync.WaitGroup
	jobsRunning atomic.Int64
	jobsWaitMax time.Duration
	jobsLeft    atomic.Bool

	// authenticator receives the node's users whenever their version
	// changes, before the replies of the Ready that applied the change
	// leave; nil for a loop without HTTP security wiring. usersVersion is
	// the version last published, usersPublished whether any was. seed
	// is this host's root credential until its seeding is logged. Loop
	// goroutine only, set before run.
	authenticator  *auth.Authenticator
	usersVersion   uint64
	usersPublished bool
	seed           *rootSeed
}

func newLoop(n *node.Node, clock func() time.Time, logger *slog.Logger, metrics *Metrics) *loop {
	return &loop{
		node: n, inbox: make(chan input, inboxCapacity), clock: clock, logger: logger, metrics: metrics,
		peerInbox: make(chan msg.Envelope, peerInboxCapacity), peerRoom: make(chan struct{}, 1), peerBytesMax: peerInboxBytesMax, peerAddrs: map[string]string{},
		pending: map[msg.RequestID]chan msg.Reply{}, done: make(chan struct{}), pauseMarked: map[string]bool{},
	}
}

// newInboxGauges expose how full the loop's two queues are, evaluated at
// each scrape: a full one blocks its writers (HTTP handlers, or the peer
// transport's readers), so a depth near the capacity is a node that
// cannot keep up.
func newInboxGauges(l *loop) []prometheus.Collector {
	depth := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "loop", Name: "inbox_depth",
		Help: "Inputs queued for the node's loop, by queue (requests: client requests and control; peers: messages from other nodes)."},
		[]string{"queue"})
	capacity := prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "loop", Name: "inbox_capacity",
		Help: "Capacity of each queue of the node's loop; a full queue makes its writers wait."}, []string{"queue"})
	capacity.WithLabelValues("requests").Set(float64(cap(l.inbox)))
	capacity.WithLabelValues("peers").Set(float64(cap(l.peerInbox)))
	bytes := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "loop", Name: "peer_inbox_bytes",
		Help: "Payload bytes of the messages from other nodes queued for the loop; at narad_loop_peer_inbox_bytes_max the connections' readers wait."})
	bytesMax := prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "narad", Subsystem: "loop", Name: "peer_inbox_bytes_max",
		Help: "Bound of narad_loop_peer_inbox_bytes (one message alone always fits)."})
	bytesMax.Set(peerInboxBytesMax)
	return []prometheus.Collector{capacity, bytesMax, inboxDepth{depth: depth, bytes: bytes, loop: l}}
}

// inboxDepth sets the depth gauges from the channels' lengths at each
// collection.
type inboxDepth struct {
	depth *prometheus.GaugeVec
	bytes prometheus.Gauge
	loop  *loop
}

func (d inboxDepth) Describe(descriptions chan<- *prometheus.Desc) {
	d.depth.Describe(descriptions)
	d.bytes.Describe(descriptions)
}

func (d inboxDepth) Collect(metrics chan<- prometheus.Metric) {
	d.depth.WithLabelValues("requests").Set(float64(len(d.loop.inbox)))
	d.depth.WithLabelValues("peers").Set(float64(len(d.loop.peerInbox)))
	d.depth.Collect(metrics)
	d.bytes.Set(float64(d.loop.peerInboxBytes.Load()))
	d.bytes.Collect(metrics)
}

// run is the loop goroutine: it returns when ctx ends (after handling
// what it holds) or when persisting fails.
func (l *loop) run(ctx context.Context) error {
	defer l.waitJobs() // after done is closed (defers run last first), so a job's post cannot block
	defer close(l.done)
	timer := time.NewTimer(tickIntervalMax)
	defer timer.Stop()
	// A fresh single node elects itself over its first Readys: run them
	// now rather than at the first request.
	l.node.Tick(l.clock().UnixMilli())
	l.checkDisk()
	if err := l.flush(); err != nil {
		l.setFailed(err)
		return err
	}
	l.refreshPeers()
	for {
		select {
		case <-ctx.Done():
			l.failPending(msg.Unavailable("node is shutting down"))
			return nil
		case in := <-l.inbox:
			l.round(in)
		case env := <-l.peerInbox:
			l.round(l.tookFromPeer(env))
		case <-timer.C:
			l.round(input{})
		}
		if err := l.flush(); err != nil {
			l.setFailed(err)
			return err
		}
		l.refreshPeers()
		l.checkUnreachable()
		timer.Reset(l.sleepDuration())
	}
}

// round ticks the node and feeds it first plus whatever else is queued
// (at most inputsPerRoundMax inputs). While the node holds work that later
// requests would share (node.SharesRound: a sync round or a forward of
// produced records), it waits up to gatherWindowMax for as many client
// requests as the last flush answered plus the inputs queued when it
// began answering. A round of consumes, acks and reads does not wait:
// nothing in it costs less shared. Peer envelopes and control inputs do
// not count as client requests.
func (l *loop) round(first input) {
	l.node.Tick(l.clock().UnixMilli())
	l.checkDisk()
	requests := l.feedCounted(first)
	var gatherUntil time.Time
	for inputs := 1; inputs < inputsPerRoundMax; inputs++ {
		if in, ok := l.poll(); ok {
			requests += l.feedCounted(in)
			continue
		}
		if requests >= l.answeredLastFlush+l.queuedLastFlush || !l.node.SharesRound() {
			return
		}
		if gatherUntil.IsZero() {
			gatherUntil = l.clock().Add(gatherWindowMax)
			l.metrics.gatherWaits.Inc()
		}
		if !l.gatherOne(&requests, gatherUntil) {
			return
		}
	}
}

// diskCheckInterval is how often the loop reads the free space of the data
// directory's file system; between two reads the node counts its own
// appends (node/disk.go).
const diskCheckInterval = time.Second

// freeSpace reports the bytes a file system has free (storage.OSFS).
type freeSpace interface{ FreeBytes() (int64, error) }

// checkDisk tells the node its free space, at most once per
// diskCheckInterval. After a failed read the node keeps no reserve until
// a read succeeds (its own count since the last one would only go down,
// and end by refusing every write on a disk with room).
func (l *loop) checkDisk() {
	now := l.clock()
	if l.disk == nil || now.Before(l.nextDiskCheck) {
		return
	}
	l.nextDiskCheck = now.Add(diskCheckInterval)
	if l.metaRoom != nil {
		l.metaRoom.keep(l.logger)
	}
	free, err := l.disk.FreeBytes()
	if err != nil {
		l.logger.Warn("cannot read the data directory's free space; no disk reserve until it can", "error", err)
		l.node.ForgetDiskFree()
		return
	}
	l.node.SetDiskFree(free)
}

// poll takes one queued input without waiting, peers' envelopes first.
func (l *loop) poll() (input, bool) {
	select {
	case env := <-l.peerInbox:
		return l.tookFromPeer(env), true
	default:
	}
	select {
	case in := <-l.inbox:
		return in, true
	default:
		return input{}, false
	}
}

// gatherOne waits until the round's gather deadline for one more input; it
// reports whether one came. The window bounds the whole round, not each
// input.
func (l *loop) gatherOne(requests *int, until time.Time) bool {
	wait := until.Sub(l.clock())
	if wait <= 0 {
		return false
	}
	if l.gather == nil {
		l.gather = time.NewTimer(wait)
	} else {
		l.gather.Reset(wait)
	}
	var in input
	select {
	case in = <-l.inbox:
	case env := <-l.peerInbox:
		in = l.tookFromPeer(env)
	case <-l.gather.C:
		return false
	}
	if !l.gather.Stop() {
		<-l.gather.C
	}
	*requests += l.feedCounted(in)
	return true
}

// feedCounted feeds in and returns 1 for a client request, 0 otherwise.
// The node's clock is brought to the present first (Tick does nothing
// within the millisecond it last saw): an input taken late in a long
// round, after a burst, would otherwise be handled at the round's start
// time, and stamp its records, or release a delay child's copy, that many
// milliseconds in the past.
func (l *loop) feedCounted(in input) int {
	l.node.Tick(l.clock().UnixMilli())
	l.feed(in)
	if in.reply != nil && !in.cancel {
		return 1
	}
	return 0
}

func (l *loop) feed(in input) {
	switch {
	case in.fromPeer:
		l.step(in.envelope)
	case in.control != nil:
		in.control(l.node)
	case in.cancel:
		l.cancel(in)
	case in.reply != nil && in.userChange != nil:
		l.pending[in.id] = in.reply
		l.node.ChangeUsers(in.id, in.userChange)
	case in.reply != nil:
		l.pending[in.id] = in.reply
		l.node.Handle(in.id, in.request)
	}
}

// cancel forgets a request whose client left. Not answered yet, its
// reply will find no pending entry (deliver hands its records back);
// answered already, the reply waits in the channel that nobody reads,
// and its records are handed back from there.
func (l *loop) cancel(in input) {
	if _, waiting := l.pending[in.id]; waiting {
		delete(l.pending, in.id)
	} else if in.reply != nil {
		select {
		case reply := <-in.reply:
			l.unclaimed = append(l.unclaimed, reply)
		default:
		}
	}
	l.node.Cancel(in.id)
	l.handBack()
}

// newRequestID returns a request id never used before in this process.
// Safe from any goroutine.
func (l *loop) newRequestID() msg.RequestID { return msg.RequestID(l.requestIDs.Add(1)) }

// handBack returns to the node the records of the consume replies no
// client read (an AckReturn of their handles, which the node routes to
// their owners): they are delivered again at once, their delivery
// uncounted, instead of staying leased for a visibility timeout as if a
// consumer had them, and counting toward max_deliveries. Called only
// where the node may take an input (not between a Ready and its Advance).
func (l *loop) handBack() {
	for _, reply := range l.unclaimed {
		result, ok := reply.Result.(msg.ConsumeResult)
		if !ok || len(result.Messages) == 0 {
			continue
		}
		handles := make([]string, len(result.Messages))
		for i, m := range result.Messages {
			handles[i] = m.ReceiptHandle
		}
		l.metrics.consumesUnclaimed.Inc()
		l.node.Handle(l.newRequestID(), msg.Ack{Topic: result.Messages[0].Topic, Handles: handles, Action: msg.AckReturn, Batch: true})
	}
	clear(l.unclaimed)
	l.unclaimed = l.unclaimed[:0]
}

// flush handles every Ready: send its produce forwards and deliver its
// early replies (neither depends on a Sync), persist, then send the rest
// to peers, then reply, then advance. A Ready whose persist failed sends
// and answers nothing more.
//
// The node contract allows the loop to keep feeding the node while a
// Ready's partition syncs run off the loop (pipelined group commit), and
// the simulator drives that overlap. This host does not use it: measured
// on a two-core machine, with the clients on the same cores, the overlap
// was no faster when the machine was otherwise idle and lost 5-20 % of
// produce throughput under load (the fsync's goroutine waits for a
// processor the feeding loop holds, and rounds carry fewer records), so
// the loop persists each Ready itself and the gather window batches.
func (l *loop) flush() error {
	defer l.publishServing()
	defer l.logRootSeed()
	l.publishSchemas()
	l.publishUsers()
	l.answeredLastFlush, l.queuedLastFlush = 0, -1 // -1: no reply delivered yet
	defer func() { l.queuedLastFlush = max(l.queuedLastFlush, 0) }()
	for l.node.HasReady() {
		rd := l.node.Ready()
		l.send(rd.ProduceForwards) // they depend on no Sync: on their way while this node fsyncs
		if len(rd.EarlyReplies) > 0 {
			l.deliverAll(rd.EarlyReplies) // likewise
		}
		if err := l.persist(rd.Syncs); err != nil {
			l.failPending(msg.Unavailable("%s; retry", storageFailure(err))) // the log line names the files
			return fmt.Errorf("persist: %w", err)
		}
		l.publishSchemas()
		l.publishUsers() // before the replies: a user change is visible once answered
		l.send(rd.Messages)
		l.deliverAll(rd.Replies)
		l.node.Advance(rd)
		l.handBack()
		for _, job := range rd.Jobs {
			l.startJob(job)
		}
	}
	return nil
}

// startJob runs a node's long disk work (a move's install and
// verification) on a goroutine of its own, so the loop keeps serving,
// and hands its end back to the node on the loop.
func (l *loop) startJob(job node.Job) {
	l.goJob(func() {
		start := l.clock()
		job.Run()
		l.logger.Debug("job done", "dir", job.Dir(), "duration", time.Since(start))
		l.post(func(n *node.Node) { n.JobDone(job) })
	})
}

// goJob runs work on a goroutine counted in jobs and jobsRunning.
func (l *loop) goJob(work func()) {
	l.jobsRunning.Add(1)
	l.jobs.Go(func() {
		defer l.jobsRunning.Add(-1)
		work()
	})
}

// waitJobs waits for the jobs still running when the loop stops, at most
// jobsWaitMax, and records in jobsLeft whether some outlived the wait.
// A job installs and verifies a move's copy: it reads the whole
// partition, which can take minutes on a large one.
func (l *loop) waitJobs() {
	running := l.jobsRunning.Load()
	if running == 0 {
		return
	}
	l.logger.Info("waiting for move jobs to end (install and verification of a copy)", "jobs", running, "wait_max", l.jobsWaitMax)
	ended := make(chan struct{})
	go func() { l.jobs.Wait(); close(ended) }()
	wait := time.NewTimer(l.jobsWaitMax)
	defer wait.Stop()
	select {
	case <-ended:
	case <-wait.C:
		l.jobsLeft.Store(true)
		l.logger.Warn("move jobs still running after the shutdown grace; stopping as a crash would (the next start puts their install right)",
			"jobs", l.jobsRunning.Load())
	}
}

// persist runs the Syncs: the partitions' rounds together (persistGroup)
// when group sync is on, at least groupSyncRoundsMin of them carry records
// and no move is staging a copy here (node.StagingMoves: the syncfs would
// wait for the copy's unsynced bytes); otherwise each on its own, in
// parallel when there are several (each touches only its own partition's
// files): on the loop goroutine, which waits anyway, and on at most
// syncWorkersMax-1 goroutines of their own, each taking the next Sync not
// yet taken, so a round of n logs starts min(n, syncWorkersMax)-1
// goroutines (each blocked fsync holds an OS thread: a round of thousands
// of logs on a slow disk would otherwise reach Go's limit of 10,000
// threads, which ends the process) and wakes the loop once.
func (l *loop) persist(syncs []node.Sync) error {
	start := l.clock()
	defer func() {
		if len(syncs) > 0 {
			l.metrics.syncRound.Observe(time.Since(start).Seconds())
		}
		if records := roundRecords(syncs); records > 0 {
			l.metrics.roundRecords.Observe(float64(records))
		}
	}()
	if l.groupSync != nil && node.DataRounds(syncs) >= groupSyncRoundsMin && !l.node.StagingMoves() {
		return l.persistGroup(syncs)
	}
	switch len(syncs) {
	case 0:
		return nil
	case 1:
		return syncs[0].Run()
	}
	return runParallel(len(syncs), syncWorkersMax, func(i int) error { return syncs[i].Run() })
}

// runParallel runs run(0), ..., run(n-1) on at most workersMax goroutines,
// the caller's included, each taking the next index not yet taken, and
// joins their errors in index order.
func runParallel(n, workersMax int, run func(i int) error) error {
	errs := make([]error, n)
	var next atomic.Int64
	work := func() {
		for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
			errs[i] = run(int(i))
		}
	}
	var wg sync.WaitGroup
	for range min(n, workersMax) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	return errors.Join(errs...)
}

// syncWorkersMax bounds the goroutines (the loop's own included) that run
// one round's Syncs when they run each on its own (persist).
const syncWorkersMax = 64

// persistGroup runs the metastore's persist, if the Ready has one, on a
// goroutine of its own, and every partition round together on the loop
// goroutine (node.RunTogether: one file-system sync for all their data).
func (l *loop) persistGroup(syncs []node.Sync) error {
	errs := make([]error, len(syncs)+1)
	var wg sync.WaitGroup
	partitions := make([]node.Sync, 0, len(syncs))
	for i, s := range syncs {
		if s.Metastore() {
			wg.Go(func() { errs[i] = s.Run() })
			continue
		}
		partitions = append(partitions, s)
	}
	errs[len(syncs)] = node.RunTogether(l.groupSync, partitions)
	wg.Wait()
	return errors.Join(errs...)
}

// roundRecords is how many records a round's Syncs make durable.
func roundRecords(syncs []node.Sync) int {
	records := 0
	for _, s := range syncs {
		records += s.Records()
	}
	return records
}

// deliverAll delivers replies and counts them as answered in this flush.
func (l *loop) deliverAll(replies []msg.Reply) {
	if l.queuedLastFlush < 0 {
		l.queuedLastFlush = len(l.inbox) // before any reply leaves: none of these is an answered client's
	}
	for _, reply := range replies {
		l.deliver(reply)
	}
	l.answeredLastFlush += len(replies)
}

func (l *loop) deliver(reply msg.Reply) {
	ch, ok := l.pending[reply.ID]
	if !ok {
		l.unclaimed = append(l.unclaimed, reply) // cancelled: the client is gone
		return
	}
	delete(l.pending, reply.ID)
	ch <- reply
}

func (l *loop) failPending(err error) {
	for id, ch := range l.pending { //determinism:ok host is not the core; order does not matter
		ch <- msg.Reply{ID: id, Err: err}
		delete(l.pending, id)
	}
}

func (l *loop) sleepDuration() time.Duration {
	untilMs := l.node.NextDeadlineMs() - l.clock().UnixMilli()
	return min(max(time.Duration(untilMs)*time.Millisecond, time.Millisecond), tickIntervalMax)
}

// schemaView is the node's schemas at one SchemaEpoch, for the HTTP layer.
type schemaView struct {
	epoch   uint64
	byTopic map[string][]msg.SchemaVersion
}

// publishSchemas rebuilds the schema view when the applied metadata
// changed a topic's schemas. It runs after every persist, before the
// Ready's replies are delivered, so that a client told that a schema
// version applied, or a produce refused because it did, finds that
// version in the view.
func (l *loop) publishSchemas() {
	epoch := l.node.SchemaEpoch()
	if view := l.schemas.Load(); view != nil && view.epoch == epoch {
		return
	}
	l.schemas.Store(&schemaView{epoch: epoch, byTopic: l.node.TopicSchemas()})
}

// topicSchemas returns the published versions of a topic's schema. Safe
// from any goroutine.
func (l *loop) topicSchemas(topic string) []msg.SchemaVersion {
	if view := l.schemas.Load(); view != nil {
		return view.byTopic[topic]
	}
	return nil
}

// servingState wraps the node's readiness answer for atomic publication.
type servingState struct{ err error }

// publishServing publishes the node's readiness and metastore status
// after a flush, allocating only when one changed (most flushes change
// neither: the host flushes once per consume or ack).
func (l *loop) publishServing() {
	if err, last := l.node.Serving(), l.serving.Load(); last == nil || err != last.err {
		l.serving.Store(&servingState{err: err})
	}
	status := l.node.MetaStatus()
	l.leader.Store(status.IsLeader)
	last := l.metaStatus.Load()
	if last != nil && status.SnapshotsTooLarge > last.SnapshotsTooLarge {
		l.logger.Warn("a metadata snapshot is too large to send: a follower that needs one cannot catch up until it fits (fewer topics or partitions)",
			"event", "meta-snapshot-too-large", "bytes", status.SnapshotTooLargeBytes, "bytes_max", meta.SnapshotMessageBytesMax)
	}
	if last == nil || *last != status {
		changed := status
		l.metaStatus.Store(&changed)
	}
}

// lastMetaStatus is the replica summary the loop last published (zero
// before the first flush). Safe from any goroutine.
func (l *loop) lastMetaStatus() meta.Status {
	if status := l.metaStatus.Load(); status != nil {
		return *status
	}
	return meta.Status{}
}

// servingError is the last readiness answer the loop published.
func (l *loop) servingError() error {
	state := l.serving.Load()
	if state == nil {
		return errors.New("node is starting")
	}
	return state.err
}

func (l *loop) setFailed(err error) {
	l.failedMu.Lock()
	defer l.failedMu.Unlock()
	l.failed = err
}

func (l *loop) failure() error {
	l.failedMu.Lock()
	defer l.failedMu.Unlock()
	return l.failed
}

// post hands a control function to the loop; it gives up if the loop has
// stopped.
func (l *loop) post(control func(*node.Node)) {
	select {
	case l.inbox <- input{control: control}:
	case <-l.done:
	}
}

// requestStats samples the node's inventory on the loop, then sets the
// gauges from it on the caller's goroutine (pollInventory's), not the
// loop's: rebuilding a series per partition holding a backlog costs
// milliseconds per thousand partitions (56 ms for 20,000, measured),
// which held every request waiting for the loop (whole-change review).
// It returns without setting them when the loop has stopped.
func (l *loop) requestStats() {
	var stats node.Stats
	var partitions []node.PartitionState
	var lags []node.FanoutLinkLag
	var users, schemaBytes int
	var dropped uint64
	sampled := make(chan struct{})
	l.post(func(n *node.Node) {
		stats, partitions, lags = n.Stats(), n.PartitionBacklogs(), n.FanoutLinkLags()
		users, schemaBytes = l.userCount(n), l.schemaBytes()
		dropped = l.metrics.seriesDropped.Load() // the drops run on the loop too: none between the sample and this
		close(sampled)
	})
	select {
	case <-sampled:
	case <-l.done:
		return
	}
	l.metrics.setInventory(stats, partitions, dropped)
	l.metrics.setFanoutLags(lags, dropped)
	l.metrics.setStateBounds(users, stats.UsersBytes, schemaBytes)
}

// userCount is the number of users this replica applied: those published
// to the authenticator, which the loop republishes after every persist
// that changed them, else the node's (a copy of each). Loop goroutine only.
func (l *loop) userCount(n *node.Node) int {
	if l.authenticator != nil {
		if users := l.authenticator.Users(); users != nil {
			return users.Len()
		}
	}
	return len(n.Users())
}

// schemaBytes is the size of the schemas published to the HTTP layer,
// which the loop rebuilds whenever the node's schemas changed.
func (l *loop) schemaBytes() int {
	if view := l.schemas.Load(); view != nil {
		return schemaBytesOf(view.byTopic)
	}
	return 0
}

func (l *loop) releaseWaiters() {
	l.post(func(n *node.Node) { n.ReleaseWaiters() })
}
