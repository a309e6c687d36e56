package host

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"narad/auth"
	"narad/meta"
	"narad/msg"
	"narad/node"
)

// Bounds of the loop.
const (
	// inboxCapacity bounds requests queued for the loop; a full inbox
	// blocks HTTP handlers (backpressure), never grows.
	inboxCapacity = 4096
	// inputsPerRoundMax bounds the inputs handled in one go before the
	// loop looks at its round again, so a flood cannot delay the start of
	// a sync round (and replies) without limit.
	inputsPerRoundMax = 1024
	// tickIntervalMax is the longest the loop sleeps without a tick.
	tickIntervalMax = 100 * time.Millisecond
	// gatherWindowMax bounds how long the next Ready, once none is in
	// flight, waits for as many client requests as the last round
	// answered: when the disk is faster than the clients' round trip,
	// starting at once splits closed-loop clients into two cohorts that
	// take turns, one fsync each.
	gatherWindowMax = 500 * time.Microsecond
)

// input is one thing for the loop: a request (reply != nil), a cancel,
// an envelope from a peer (fromPeer), or a control function run on the
// loop goroutine (stats, shutdown).
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
	// when to look again. Loop goroutine only.
	dialFailures  map[string]uint64
	nextPeerCheck time.Time

	// pending maps a request id to where its reply goes.
	pending map[msg.RequestID]chan msg.Reply
	// inFlight is set while a Ready's partition syncs run off the loop
	// (pipelined group commit); the loop keeps feeding the node, and
	// takes the next Ready only after this one's result came back on
	// persisted and it was advanced. Loop goroutine only.
	inFlight bool
	// persisted carries the result of the Ready in flight (capacity 1:
	// one Ready at most is in flight, so the sender never blocks).
	persisted chan persistResult
	// requestsSinceReady counts the client requests fed since the last
	// Ready was taken, answeredLastRound the replies the last finished
	// round delivered; gatherUntil, when not zero, is when the next Ready
	// stops waiting for more requests, and gather the timer that wakes
	// the loop then. Loop goroutine only.
	requestsSinceReady, answeredLastRound int
	gatherUntil                           time.Time
	gather                                *time.Timer
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
	// them before it returns.
	jobs sync.WaitGroup

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
		peerInbox: make(chan msg.Envelope, peerInboxCapacity), peerAddrs: map[string]string{},
		pending: map[msg.RequestID]chan msg.Reply{}, done: make(chan struct{}),
		persisted: make(chan persistResult, 1),
	}
}

// persistResult is the outcome of a Ready persisted off the loop.
type persistResult struct {
	ready node.Ready
	err   error
}

// run is the loop goroutine: it returns when ctx ends (after handling
// what it holds) or when persisting fails.
func (l *loop) run(ctx context.Context) error {
	defer l.jobs.Wait() // after done is closed (defers run last first), so a job's post cannot block
	defer close(l.done)
	timer := time.NewTimer(tickIntervalMax)
	defer timer.Stop()
	// A fresh single node elects itself over its first Readys: run them
	// now rather than at the first request.
	l.node.Tick(l.clock().UnixMilli())
	if err := l.flush(); err != nil {
		l.setFailed(err)
		return err
	}
	l.publishServing()
	l.refreshPeers()
	for {
		var err error
		select {
		case <-ctx.Done():
			return l.stop()
		case in := <-l.inbox:
			l.round(in)
		case env := <-l.peerInbox:
			l.round(input{fromPeer: true, envelope: env})
		case <-timer.C:
			l.round(input{})
		case result := <-l.persisted:
			err = l.persistedRound(result)
		case <-l.gatherC():
		}
		if err == nil {
			err = l.flush()
		}
		if err != nil {
			l.setFailed(err)
			return err
		}
		l.refreshPeers()
		l.checkUnreachable()
		timer.Reset(l.sleepDuration())
	}
}

// stop ends the loop at shutdown: the Ready in flight finishes (its
// replies are true once its syncs succeeded), every other request is
// answered as failed.
func (l *loop) stop() error {
	var err error
	if l.inFlight {
		err = l.finishRound(<-l.persisted)
	}
	l.failPending(msg.Unavailable("node is shutting down"))
	return err
}

// round ticks the node and feeds it first plus whatever else is queued
// (at most inputsPerRoundMax inputs), without waiting: a sync round starts
// as soon as there is work, and what arrives while it runs goes into the
// next one.
func (l *loop) round(first input) {
	l.node.Tick(l.clock().UnixMilli())
	l.feed(first)
	l.drain()
}

// drain feeds the queued inputs, up to inputsPerRoundMax, without waiting.
func (l *loop) drain() {
	for range inputsPerRoundMax {
		in, ok := l.poll()
		if !ok {
			return
		}
		l.feed(in)
	}
}

// poll takes one queued input without waiting, peers' envelopes first.
func (l *loop) poll() (input, bool) {
	select {
	case env := <-l.peerInbox:
		return input{fromPeer: true, envelope: env}, true
	default:
	}
	select {
	case in := <-l.inbox:
		return in, true
	default:
		return input{}, false
	}
}

func (l *loop) feed(in input) {
	switch {
	case in.fromPeer:
		l.step(in.envelope)
	case in.control != nil:
		in.control(l.node)
	case in.cancel:
		delete(l.pending, in.id)
		l.node.Cancel(in.id)
	case in.reply != nil && in.userChange != nil:
		l.requestsSinceReady++
		l.pending[in.id] = in.reply
		l.node.ChangeUsers(in.id, in.userChange)
	case in.reply != nil:
		l.requestsSinceReady++
		l.pending[in.id] = in.reply
		l.node.Handle(in.id, in.request)
	}
}

// flush takes the node's Readys while none is in flight. A Ready whose
// syncs are only partition logs' starts its persist off the loop and ends
// the flush: the loop goes on feeding the node while it runs (see
// persistedRound). Any other Ready (nothing to sync, or the metastore's
// persist, which the node contract does not let overlap) is persisted and
// finished here. A Ready whose persist failed sends and answers nothing.
func (l *loop) flush() error {
	l.publishSchemas()
	l.publishUsers()
	for !l.inFlight && l.node.HasReady() && !l.holdForGather() {
		rd := l.node.Ready()
		l.requestsSinceReady = 0
		if len(rd.Syncs) > 0 && !rd.Metastore() {
			l.startPersist(rd)
			return nil
		}
		if err := l.finishRound(persistResult{ready: rd, err: l.persist(rd.Syncs)}); err != nil {
			return err
		}
	}
	return nil
}

// holdForGather reports whether the next Ready waits for more client
// requests: fewer arrived since the last Ready than the last round
// answered, and the round's gather window (gatherWindowMax from the
// first time it waited) is still open.
func (l *loop) holdForGather() bool {
	if l.requestsSinceReady >= l.answeredLastRound {
		l.gatherUntil = time.Time{}
		return false
	}
	now := l.clock()
	if l.gatherUntil.IsZero() {
		l.gatherUntil = now.Add(gatherWindowMax)
	}
	wait := l.gatherUntil.Sub(now)
	if wait <= 0 {
		l.gatherUntil = time.Time{}
		return false
	}
	if l.gather == nil {
		l.gather = time.NewTimer(wait)
	} else {
		l.gather.Reset(wait)
	}
	return true
}

// gatherC is the gather timer's channel while the next Ready waits, else
// nil (a nil channel never fires in a select).
func (l *loop) gatherC() <-chan time.Time {
	if l.gatherUntil.IsZero() || l.gather == nil {
		return nil
	}
	return l.gather.C
}

// startPersist runs a Ready's syncs on a goroutine of their own; the
// result comes back to the loop on persisted.
func (l *loop) startPersist(rd node.Ready) {
	l.inFlight = true
	l.jobs.Go(func() {
		l.persisted <- persistResult{ready: rd, err: l.persist(rd.Syncs)}
	})
}

// persistedRound finishes the Ready that was in flight, then feeds what
// queued meanwhile, so that the next Ready carries it.
func (l *loop) persistedRound(result persistResult) error {
	if err := l.finishRound(result); err != nil {
		return err
	}
	l.node.Tick(l.clock().UnixMilli())
	l.drain()
	return nil
}

// finishRound sends a persisted Ready's messages, delivers its replies,
// advances the node and starts its jobs. A failed persist finishes the
// node instead: every outstanding request is answered as failed.
func (l *loop) finishRound(result persistResult) error {
	l.inFlight = false
	if result.err != nil {
		l.failPending(msg.Unavailable("node storage failed; retry")) // the log line names the files
		return fmt.Errorf("persist: %w", result.err)
	}
	rd := result.ready
	l.answeredLastRound = len(rd.Replies)
	l.publishSchemas()
	l.publishUsers() // before the replies: a user change is visible once answered
	l.send(rd.Messages)
	for _, reply := range rd.Replies {
		l.deliver(reply)
	}
	l.node.Advance(rd)
	for _, job := range rd.Jobs {
		l.startJob(job)
	}
	// Readiness, leadership and the root seed change only when a Ready
	// applies the metastore: published here, not after every input.
	l.publishServing()
	l.logRootSeed()
	return nil
}

// startJob runs a node's long disk work (a move's install and
// verification) on a goroutine of its own, so the loop keeps serving,
// and hands its end back to the node on the loop.
func (l *loop) startJob(job node.Job) {
	l.jobs.Go(func() {
		start := l.clock()
		job.Run()
		l.logger.Debug("job done", "dir", job.Dir(), "duration", time.Since(start))
		l.post(func(n *node.Node) { n.JobDone(job) })
	})
}

// persist runs the Syncs, in parallel when there are several (each
// touches only its own partition's files).
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
	if len(syncs) == 1 {
		return syncs[0].Run()
	}
	errs := make([]error, len(syncs))
	var wg sync.WaitGroup
	for i := range syncs {
		wg.Go(func() { errs[i] = syncs[i].Run() })
	}
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

func (l *loop) deliver(reply msg.Reply) {
	ch, ok := l.pending[reply.ID]
	if !ok {
		return // cancelled: the client is gone
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

func (l *loop) publishServing() {
	l.serving.Store(&servingState{err: l.node.Serving()})
	status := l.node.MetaStatus()
	l.leader.Store(status.IsLeader)
	l.metaStatus.Store(&status)
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

func (l *loop) requestStats() {
	l.post(func(n *node.Node) { l.metrics.setInventory(n.Stats(), n.OpenPartitions()) })
}

func (l *loop) releaseWaiters() {
	l.post(func(n *node.Node) { n.ReleaseWaiters() })
}
