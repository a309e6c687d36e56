// Package node is one broker node as a deterministic state machine: the
// data path (topics, produce, consume, ack, replay) over the partition logs
// it owns, and its replica of the Raft metastore (package meta), which
// holds the topics, their placement and the members. It starts no
// goroutines, reads no clock and does no network I/O; disk goes through
// storage.FS (the metastore's bbolt file is opened by the driver). Two
// drivers run it: host (production: goroutines, HTTP, wall clock, os
// files) and sim (one goroutine, simulated clock, network and disk).
//
// Topic changes are metastore proposals: the client's answer leaves when
// the entry is applied on this replica (a follower's proposal reaches the
// leader through raft), so a client reads its own change on the node it
// asked. A single node is a one-voter group that elects itself as soon as
// its bootstrap configuration is applied, then heartbeats so that
// partitions can be placed on it.
//
// # Across nodes
//
// Any node accepts any request. One that names a topic this replica does
// not know yet, or pins a partition past the count it has applied (a
// change made through another node, not applied here yet), waits for it
// (topicwait.go); the metastore leader's replica says 404 or 400 about a
// topic, to its own clients or to another node's question, only past a
// read barrier (readbarrier.go: a raft read index requested since the
// request came, confirmed by a quorum and applied), since it may have
// been deposed without knowing it. A partition is written and its queue served only by its
// owner; other nodes forward (ForwardRequest, answered
// by a ForwardReply; a forwarded request is served from the receiver's own
// partitions and never forwarded again). A produce is split by owner and
// answered when every part was fsynced by its owner. A keyless record goes
// to a partition this node owns and may write (live, unfrozen) when there
// is one, so it needs no forward. The parts this node forwards to one
// owner for one topic within one Ready travel as one ForwardRequest (one
// batch produce, within the batch limits), whose reply is split back into
// the parts'; keyless records avoid owners that are dead (in the
// metastore), short of disk (their last heartbeat said so: disk.go) or
// silent (a forward timed out within PeerDownMs, or the driver reported
// the peer unreachable), and a part that fails retryably
// is re-placed at most route.ReroutesMax times. A record pinned to a
// partition, by an explicit partition or by its key, whose owner is known
// dead or silent is refused at once (Unavailable, a 503 with Retry-After),
// never forwarded to wait out the timeout nor moved to another partition;
// a keyed record does move off a partition frozen for a move. A consume of any partition serves this node's
// partitions first, then probes the other owners one at a time (every
// remoteFirstEvery-th asks them first, then this node's); a parked
// poll subscribes at the owners (Subscribe), which Notify it when records
// become available there. Acks go to the partitions' owners, by the
// partition in the receipt handle; an ack is idempotent: one whose record
// is already acknowledged (below the committed offset, which survives
// restarts and moves, or acked ahead of it) succeeds again, and an ack
// forwarded to an owner that does not answer fails retryably
// (Unavailable), so a client that retries learns whether its first attempt
// landed. The leader (past its barrier) proposes members dead after
// MemberDeadAfterMs without a heartbeat change on its own clock, and
// proposes the members' heartbeats (msg.Heartbeat, sent to it once an
// interval) in rounds of one entry each (heartbeats.go); a node
// started with Meta.Join sends Join to its configured peers until the
// leader has added it as a voter (or it knows it was removed); a member
// that does not lead relays the Join to the leader (JoinRelay), and the
// leader answers a Join from a node it has added with the voters'
// addresses (JoinAccepted), so a joiner may be told of a single member.
// A voter's Join (its replica cannot address some voter) is answered by
// whichever voter it reaches, from that voter's applied state.
//
// The node also writes into topics on its own behalf (relay.go: a record
// that exhausted its deliveries goes to its dead-letter topic). Such a
// write is placed and routed exactly as a client's produce, its parts
// served here or forwarded like a produce's; instead of a client reply,
// a continuation runs at the Advance (or the ForwardReply) that proves
// every record durable at its owner, or with the error that stopped it.
// At most Config.RelaysInFlightMax are in flight.
//
// # Fan-out (docs/architecture.md#fan-out)
//
// The owner of a parent topic's partition copies it into each child with
// a cursor per child (fanout_copy.go, fanout_cursor.go), on its ticks:
// batches go through relay, the cursor advances only once a batch is
// durable in the child, and its file in the partition directory follows
// every Config.Fanout.CursorPersistIntervalMs, so a crash repeats copies
// and never skips one. A delay child takes a record only once its commit
// time plus the delay has passed on the node's clock. A move carries the
// cursor files (MoveSourceState.Cursors) into the staged copy.
//
// # JSON Schemas
//
// A topic's schema versions live in the metastore; the node never compiles
// them. Create and alter pass a schema document through (the HTTP layer
// compiled it); alter checks additive evolution against the latest version
// before proposing, and the metastore checks again when it applies. The
// node publishes the kept versions of every topic to its driver
// (SchemaEpoch, TopicSchemas); the driver's HTTP layer validates a
// client's produce with the latest and names it (Produce.SchemaID). The
// node that receives the request refuses it with ErrSchemaChanged unless
// that is the topic's latest applied version, so no record is taken on the
// strength of an older one. The parts it forwards carry that id and the
// identity of the topic they were placed for (a topic deleted and created
// again under its name is another); their owner refuses a part of another
// topic, or a client's part validated against another version than its
// own latest (checkPlacedPart), so a node behind on either never writes
// records the owner's topic did not take.
//
// # Moves (docs/architecture.md#moves)
//
// The leader runs the planner (package rebalance) past its barrier and
// proposes targets (move_leader.go). A node that sees itself as a target
// runs a session (package movedest decides its steps, move_dest.go carries
// them out): CatchUp copies the source's segments pass after pass
// (MoveStatus, MoveRead) until within Moves.LagBytes or out of passes;
// PrepareHandoff asks the source to freeze (MoveFreeze: no produce, no
// commit; answered once its accepted records are durable). The source
// answers all three only once its replica shows the move, of the topic's
// creation the request names (sourceLog), and a state holding less than
// the copy restarts it (movedest's copyAheadOf);
// Finalize copies the fixed tail, records the source's HWM and committed
// offset, and hands the sync, verification and install to the driver as a
// Job (Ready.Jobs, answered by JobDone); the flip is the guarded CompleteMove (ForcePromote when the source
// died and the copy holds its last known state). The source lets go of
// the partition when it applies the flip (move_reconcile.go), asks for
// the abort if its freeze outlives Moves.FreezeTTLMs (move_source.go),
// and deletes its copy only after three checks (move_sweep.go). A node
// writes only while its own heartbeat was applied within half of
// MemberDeadAfterMs (writable), so a node cut off from the metastore stops
// writing before another may take its partitions over.
//
// # Parts
//
// Parts with their own state, deadlines and outputs are sub-packages with
// the shape of a pure data structure: time as nowMs arguments, inputs as
// method calls, outputs as return values, their own invariants and unit
// tests. None imports node; node translates between them and its
// requests, envelopes, storage and proposals.
//
//   - node/lease: the consumer lease table of one partition.
//   - node/movedest: the destination session of a move, from the first
//     status request to the flip.
//   - node/movesource: the freeze a partition's owner holds for a move.
//   - node/route: the tables of outstanding forwards (and of peers marked
//     down) and of requests served on behalf of another, and the join and
//     batch of a produce split by owner.
//
// # The contract
//
// Inputs:
//   - Tick(nowMs): the current time. The node's clock is the last value
//     ticked; it never goes backwards. Visibility deadlines, long-poll
//     deadlines, retention and idle-log closing are all driven by ticks.
//   - Handle(id, request): a client request (a msg.Request), decoded by
//     httpapi from HTTP (the simulator builds the same values through the
//     same decoder). The id is chosen by the driver, unique among the
//     node's requests and at most RequestIDDriverMax (the node numbers its
//     own above it).
//   - Cancel(id): the client went away; a waiting long poll is dropped.
//   - Step(envelope): a message from a peer node (a msg.PeerMessage). The
//     driver delivers envelopes from one peer in the order they were sent
//     while a connection lasts; it may lose any of them.
//
// Outputs are gathered in a Ready, taken with Ready() when HasReady()
// reports true (also when the leader wants a read barrier asked for: the
// Ready carries its heartbeats; raft's confirmation arrives in a later
// metastore Ready, which the node takes in its own Ready, and the held
// requests it settles are answered at that Ready's Advance, nothing for
// the driver to pass on). Taking a Ready starts its sync round: every log it touches
// writes its buffered frames and fixes the range the round makes durable
// (up to Next() at that moment). The driver handles a Ready in this order:
//
//  1. Persist: run every Sync of Ready.Syncs (fsyncs of partition logs and
//     of committed consumer offsets, the atomic replace of fan-out cursor
//     files, and the metastore's one bbolt transaction: Raft entries, hard
//     state, applied state; a metastore Ready with nothing for the store,
//     only Raft heartbeats and their answers, is persisted by the node
//     itself and adds no Sync). Syncs of
//     different logs are independent and may run in parallel, and on any
//     goroutine: a partition's Sync touches only file handles and state the
//     round owns. The partitions' Syncs may instead run together
//     (RunTogether: one storage.GroupSyncer call makes the data of every
//     round durable before any round writes its hwm slot or committed
//     offset), the metastore's beside them. A write the disk has no room
//     for that can wait (a fan-out cursor's file, a committed offset's file
//     being created) does not fail its Sync: it is written again later
//     (fanout_cursor.go, maintenance.go). If any Sync fails, the node instance is finished: the
//     driver must not deliver this Ready's replies or messages and must
//     not call Advance; it answers every outstanding request as failed and
//     restarts the node from its disk (a crash, in the simulator). After a
//     failed fsync the page cache can no longer be trusted, so recovery
//     from what is really on disk is the only safe continuation.
//  2. Send: deliver Ready.Messages to peers (Envelope.To; ClusterAddrs
//     maps node ids to addresses) and Ready.Replies to clients. Both may
//     depend on the Syncs (a produce's 202, or the ForwardReply that
//     becomes one on another node), which is why they wait for step 1.
//     Ready.ProduceForwards and Ready.EarlyReplies (a produce sent in whole
//     or in part to other owners, answered once every part was durable at
//     its owner) depend on none: they may leave before step 1 (the host
//     sends them first), even if step 1 then fails.
//  3. Advance(ready): tell the node the Ready was handled. The range each
//     Sync fixed becomes visible to consumers here (and nothing appended
//     after the Ready was taken), freezes whose records are all durable
//     are answered, and waiting long polls are served (their replies
//     appear in the next Ready): the unpinned ones and those pinned to a
//     partition whose records became visible, oldest parked first.
//  4. Jobs: run each of Ready.Jobs off the loop (Job.Run on any
//     goroutine), then hand its end back with JobDone, as an input.
//
// Pipelined group commit: while a Ready's partition Syncs run, the driver
// may keep feeding the node inputs (Handle, Step, Tick, Cancel, JobDone,
// PeerUnreachable, PeerRetry). Whatever those inputs produce (appends,
// replies, messages, proposals) goes into the next Ready, which the
// driver takes only after it called Advance for this one; so at most one
// sync round is in flight, and the next one carries everything that
// arrived meanwhile.
// Between Ready() and Advance():
//   - Appends to a log whose round is in flight are allowed: the round
//     covers only frames written before it was taken, Advance makes only
//     those visible, and the later ones wait for the next round. No reply
//     or message that depends on them leaves before that round is durable.
//   - Reads see the HWM of the last completed round; a freeze is answered
//     only once every record accepted before it is durable.
//   - Nothing closes or deletes what an in-flight round syncs: a log with a
//     round in flight counts as dirty (it is never evicted nor closed as
//     idle), retention waits for the next tick after the round, and a log
//     closed meanwhile (its storage failed, say) keeps its files open until
//     the round completes; a log that failed meanwhile raises no HWM at
//     Advance (it reopens from its disk, recovering what is durable, once
//     that round completed: until then its partition answers 503, as
//     recovery would remove the round's temporary files and write the
//     hwm file under it), while the replies of the round, whose fsyncs
//     succeeded, stand. A round that writes a partition's fan-out cursor
//     files alone leaves its log clean: the log is not evicted meanwhile,
//     and one closed (failed, idle) opens again only after the round. The
//     directory of a partition this node writes
//     is removed only while applying the metastore (a deleted topic, a
//     partition moved away), which happens in Advance after the rounds
//     completed; the other removals (a move's staged or rolled-back copy,
//     a stale copy swept) touch partitions this node does not write.
//   - A Ready that carries the metastore's persist is not overlapped: the
//     driver persists and advances it before feeding anything else (Raft
//     must see its entries persisted before it is stepped again, and the
//     applied state is read by every input). A metastore Ready of Raft
//     messages alone, which the node persisted in memory (no Sync), may be
//     outstanding while inputs are fed: it carries no entries and no hard
//     state.
//
// A driver may also feed nothing between Ready and Advance; the node is
// the same state machine either way, driven by the sequence of calls.
//
// Group commit falls out of this: every produce handled since the last
// Ready was taken shares one sync round per touched log, and with
// pipelining the requests that arrive while a round is on disk are
// handled meanwhile and share the next one.
//
// Determinism: the same inputs in the same order produce the same outputs.
// Iteration over maps whose order could reach an output is sorted.
package node
