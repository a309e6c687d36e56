// Package sim is the deterministic simulator: a whole Narad world — nodes
// running the real node code, clients speaking HTTP through httpapi's
// decoder and encoder, a network, crash-model disks and a clock — in one
// goroutine, driven by one seed.
//
// # The world
//
// Events (request arrivals, replies, ticks, sync completions, faults) sit
// in one queue ordered by simulated time, ties broken by insertion order,
// so a seed always replays the same way. The simulator is the node's
// second driver (host is the first): it handles each Ready in the
// contract's order — persist, then send messages and replies, then
// Advance — but lets a sync round take simulated time, during which
// requests queue at the node (group commit, as in production) and a
// crash can land.
//
// A world has one node or a cluster (-nodes=3 or 5) whose metastore is
// one Raft group of every node. Nodes talk over a peer network that
// models the production transport: one connection per ordered pair of
// nodes, with a seeded delay per link, in order while the connection
// lasts; a reset (a fault, a partition, a crash of either end) loses what
// is in flight, and nothing else is lost. Every envelope a Ready hands out
// is sent after that Ready's Syncs, encoded with the wire codec, and
// decoded at the receiver: the codec runs on every message. Clients send
// each request to a random node.
//
// Faults are drawn from the seed by profile (-faults): node crashes (the
// node is dropped and, half of the time, its machine with it: the disk
// loses unsynced writes, possibly tearing the last one; otherwise only the
// process dies, as under kill -9, at the start of a sync round, after its
// writes and before its fsyncs, and the page cache keeps them), restarts, graceful stops, fsync and write failures (half of
// the write failures with failures of opens, reads or removals, and, on a
// node the run may take down, half with failures of creates, renames or
// directory syncs), and lost
// or slow client messages; in a cluster also kills of the metastore's
// leader and of followers, full partitions (a node cut off, often the
// leader, or a minority split from the majority), one-way partitions, and
// connection resets. At most a minority of a cluster is down (or carries
// an armed fsync failure) at once, so a quorum can always make progress.
// A seeded share of the runs with disk faults (profiles disk and all) of
// one node, or of three nodes with -moves, with or without -fanout, also
// gets media corruption: while a node is down, a synced byte of a frame
// in the middle of a log goes bad, so recovery (or, in a segment it took
// from its index file, the first read) finds the record corrupt
// and the node skips its offset (media_faults.go). In a cluster only a
// partition the node owns in the committed placement is hit; a move then
// copies what the owner's log still holds, damage included, and the
// destination accepts exactly the owner's corrupt offsets. The fault is
// on there by default (-media-clusters=false turns it off; it was off
// while such a partition could not move); a regression seed gets it only
// if its line says media-clusters.
// Without weather the faults of the moves world leave few moves a quiet
// moment to flip in: most flips wait for the end of the faults. So a
// seeded half of the moves worlds (-weather=auto, TestSim's default; on
// or off forces it; tests and regression seeds run without it unless
// their line says weather) get weather (weather.go): the safety phase
// alternates fault spells, in which faults are drawn as above, and
// lulls of 6 to 14 s, in which no fault and no write storm starts and
// the producers slow down tenfold, while stale and withheld proposals
// and the core's fault sites go on. Moves flip in a lull's quiet end,
// each with its withheld and stale proposals, and the next spell lands
// on the moves in flight then.
// In a seeded half of the cluster worlds the nodes' clocks disagree: each
// start of a node draws an offset of its clock within ±250 ms, kept until
// it stops (clock_skew.go); the checkers that compare two nodes' times
// (the delay child's) allow for the spread.
// In profiles with crashes, half of the control-plane operator's deletes of
// a topic that holds records meet a node whose removal of the topic's
// directory keeps failing; the operator creates the name again at once,
// the node crashes once it could apply that create, and the operator
// reads the topic after its restart (purge_faults.go): the situation the
// partition directories' stamps exist for, too narrow to arise from
// independent faults.
// A run has a safety phase (faults on) and a liveness phase (every node
// up, faults off, producers stopped, consumers draining), as TigerBeetle's
// VOPR does.
//
// # Moves
//
// Every multi-node world runs with short move timings (moves.go: small
// copy chunks, a freeze TTL of seconds, a force-promotion after a few
// seconds of silence), so the partitions of a node that missed the topic's
// creation move to it within a run. With -moves a cluster also gets the
// moves scenario: a three-node world scales up to four (a new node started
// with Meta.Join, which the leader adds) and/or decommissions a node
// through the HTTP API (meta keeps three voters, so without the scale-up
// the node only drains); a five-node world decommissions one and may scale
// up to six. A decommission may be cancelled. A drained node the leader
// removes from the voters is then shut down for good (retired), as an
// operator would; clients learn of a new node once it is a member. After
// every step a watcher looks at the moves the touched nodes run
// (MoveSessions, FrozenPartitions): when a move enters a phase (catchup,
// handoff, finalize, flip) or its source freezes, it may land a fault at
// that instant — kill the source or the destination, cut them apart (both
// ways or one way), cut either from the leader, isolate the source, kill
// or isolate the leader — and marks "move-fault:<fault>@<phase>". The
// leader is also killed or cut off right after a scale-up or a
// decommission committed, while the planner starts their moves. A move
// entering CatchUp may get a write storm: pinned producers of large
// records that outrun the copy, so CatchUp gives up converging and still
// cuts over. Every move proposal a node forwards to the leader reaches it
// a second time (late_proposals.go), seconds later or right after the
// partition's next move started, and some moves' flips are withheld
// until then (the source's freeze expires and the move is aborted and
// started again first): the stale proposals that only the metastore's
// guards keep from applying to a later move. And when a destination in
// CatchUp has just copied all of its source's last reported state, the
// two may be cut apart, a client produces one record pinned to the
// partition at the source, and the source dies once it answered 202, for
// longer than the force-promotion takes: the destination then holds a
// complete copy of a state the source never froze, which it must not
// promote (move_faults.go). Half of the moves worlds, drawn from the seed,
// also get the fan-out scenario (their nodes write cursor files once a
// second, not every 100 ms, so that faults often meet a cursor ahead of
// its file); a kill, a cut, a disk fault or a move of a parent or child
// partition then marks "fanout-fault:<fault>@<phase>" for each phase of
// the cursors it meets (fanout_faults.go).
// With -deadletters the topic names a dead-letter topic and a
// max_deliveries of 1 or 2 (deadletters.go): the consumers' nacks and
// forgotten leases exhaust some records, and a consumer drains the
// dead-letter topic. With -deadletters-aimed as well, in a cluster, an
// operator creates small topics whose dead letters go to the same
// dead-letter topic, nacks their records and deletes each topic while its
// dead letters are being written, and the peer network loses those
// writes' forwards, so that batches end with their source partition gone
// (deadletters_doomed.go).
//
// With -fanout -fanout-aged-out on one node (a cluster ignores it; see
// TestSimFanoutAgedOut) the
// topic keeps its records an hour (the least the API allows a parent of
// a delay child) and the copy child's segments fail to open or write for
// longer, from ten seconds into the safety phase; the producers pause
// after forty seconds and resume once those records expired, half a
// minute before the disk heals, so retention deletes records the child's
// cursors never copied, and the cursors skip them (fanout_agedout.go). The safety phase lasts about an hour of simulated
// time, some ten seconds of wall time.
//
// Once a moves world has healed, one more node joins after some replica
// compacted the metastore's log (latejoin.go), configured with the
// bootstrap members only (which may not include the leader): it can only
// start from a snapshot, and must serve within 5 s.
//
// # What it checks
//
//   - After every step, an omniscient state checker: a partition's visible
//     high-watermark never exceeds what is durable and never falls below
//     it; the committed consumer offset never falls below what was
//     persisted and never passes the high-watermark; an acknowledged
//     produce is durable when its 202 leaves; recovery never lands below
//     what was durable (so acknowledged), and what a partition serves
//     once it recovered is durable: recovering a copy of the disk's
//     durable bytes alone reaches at least the same high-watermark.
//   - Idempotent acks (check_acks.go): clients send an ack again, with
//     the same handles, when its answer was lost or was 503. Once a
//     record's ack landed (its node reports every ack it applies), any
//     ack of the record sent later must answer 204 and no consume sent
//     later may deliver it, unless the ack may have been lost since: the
//     node that applied it restarted, the partition changed owner, or
//     the node was not its committed owner; such redeliveries are
//     counted (redelivered_after_lost_ack), with the retries
//     (ack_retries) and the retries that found their ack had landed
//     (ack_retries_landed). The same holds of what clients saw alone
//     (ack-answered, black-box too): once a commit ack of a record was
//     answered 204, no consume sent after may deliver it, unless the
//     owner then went down or restarted or the partition moved.
//   - Payloads (storm.go): a padded payload's padding is drawn from its
//     record's id, and every delivered or replayed one is checked against
//     it ("payload"): a byte changed, lost or taken from another record
//     shows.
//   - Dead letters (deadletters.go): a node acknowledges a record in its
//     topic as a dead letter only once the copy's offset is durable at a
//     node of the dead-letter partition; every dead letter names the
//     topic as its origin; a record consumed from the dead-letter topic
//     counts as delivered, so the accounting below holds a record that
//     exhausted its deliveries to its topic or the dead-letter topic.
//   - Fan-out (check_fanout.go): after the drain, every record answered
//     202 in the topic is in each child, and none reached the delay child
//     before its first commit in the topic plus the delay (as the final
//     replay read it: the children are read after it). A record is
//     excused from a child only when media corruption destroyed it, or
//     retention deleted it, at every offset it was acknowledged at: the
//     offsets retention deleted are those of the segment files the
//     simulator saw a node remove durably, oldest first, with a later
//     segment left (fanout_agedout.go), never the node's own report; the
//     readers accept a 410 only at such an offset (or a corrupt one).
//   - At the end, Jepsen-style accounting over unique message ids: lost
//     (answered 202, never consumed), unexpected (consumed, never
//     produced), duplicated and recovered. A record never consumed is
//     excused, not lost, only when media corruption destroyed it at every
//     placement it was acknowledged at (excused); the replayer likewise
//     accepts a 410 only for an offset the corruption hit.
//   - Log consistency over every append and replay read of each
//     partition: an offset once read always holds the same record, and a
//     partition's visible prefix never shrinks. A one-pass check decides
//     it (the model's appends take the offsets in order, so each append
//     has an earliest point it can take effect at, check_log_order.go);
//     porcupine checks the same history, and a verdict of its that
//     contradicts the one-pass check fails the run (log-checkers), while
//     porcupine out of its budget leaves the one-pass verdict.
//   - Single owner: every append is made by the partition's owner in the
//     committed metastore at that instant, and a partition's appender
//     changes only across a committed flip of its ownership (CompleteMove
//     or ForcePromote). The committed log and placement are rebuilt from
//     the leaders' messages on the wire (metaLog), never read from a
//     node's memory. Stronger, after every step: at most one node answers
//     AcceptsWrites for a partition (check_writers.go), and no node
//     appends to a partition it keeps frozen at that instant.
//   - Removals (check_removals.go): every removal a node makes on its disk
//     is seen as it is made. A removal of a topic's directory
//     ("topics/T") or of a partition directory ("topics/T/p00003") fails
//     the run if the node's store holds a log in it open, or, in a
//     cluster, if the committed placement names the node as the owner or
//     the move target of a partition it removes, and the node had
//     applied the entry from which it has held that partition without a
//     break (the create of the topic's current incarnation, or the
//     SetTarget of the move that made it target, then owner) before the
//     input it was handling. The placement is the committed log's at its
//     highest index, or, when the node applied past it (a leader applies
//     before its messages announce the commit), at the node's applied
//     index, once the log reaches it. Sound because a node's replica is a
//     committed prefix: if it applied the start of an unbroken holding,
//     its own state still says owner or target, and every legitimate
//     removal is made by a node whose own state says otherwise — a
//     deleted or re-created topic's directory (dropped in the Advance that
//     applied the delete or the re-create, before the new incarnation is
//     served), a flipped-away source's copy swept once the leader and the
//     replica agree, an installed copy rolled back when the node applied
//     its move's abort (a new move to the same node, even in the same
//     Advance, starts a new holding it had not applied), a stale copy
//     found at start; and one by a node that does hold the partition: a
//     target (not yet owner) removing the copy it installed itself, whose
//     verification failed (its flip was never proposed; had it been, the
//     new owner's missing records are the no-loss checkers' to catch). A holding the node had not applied is not its to
//     keep: it begins by copying afresh. Not judged: a partition's own
//     files (retention, recovery's cleanup and the cursor files remove
//     them by design; the log checker judges what a read then finds),
//     the copy an install sets aside, a move's staged copy (only its
//     session uses it), and removals during a start that fails. A rename
//     of a partition directory is judged only for the logs open in it (an
//     install renames aside the copy it replaces, once its log is closed).
//     No open log is let pass: a node dropping a deleted topic's
//     directory closes first even a move's installed copy awaiting a flip
//     that never committed (five-node moves seed 2034, seed 2700155).
//   - Raft, from the wire: at most one leader per term (election safety),
//     one predecessor per entry (log matching), and no committed entry
//     ever replaced (state machine safety).
//   - Oracles that share no code with what they check (oracles.go): a
//     naive model of the metastore's commands and guards runs beside
//     every replica of a cluster, over the committed entries, and is
//     compared with the replica's own store (meta-model): what each
//     applied entry touched at once, all of it at most once a second; a client-side model of leases fails a 204 to an ack
//     of a handle that a newer reservation of its record superseded
//     before the ack was sent (lease-model; a slow consumer acks after
//     its leases lapsed, so such acks happen), or to an ack sent later
//     after its handle was received than the longest visibility timeout
//     the workload sets, when no other ack of the record may have landed
//     (a flip in between is no excuse: a move hands the record over
//     released, and nonces never repeat), and a 410 to an ack sent
//     before any lease of its handle could lapse (sooner after its
//     consume was sent than the shortest visibility timeout less the
//     slowest way to the owner), unless
//     another handout or ack of the record, a node's start, a flip, a
//     dead letter, a media fault or the site that cuts leases short
//     could have ended it; and an operator's topic
//     creates, alters, grows and deletes are checked with porcupine as one
//     linearizable register per topic name (control-plane; a grow's 400
//     for a shrink is a lagging replica's read, judged only by its body);
//     the operator
//     also writes records into every partition it believes its topics
//     have (grown ones too) and replays them, and a record
//     acknowledged into one creation of a name must never be read after a
//     later create of the name was answered 201 (control-resurrection:
//     partition directories carry their creation's stamp). Each
//     checker's comment says exactly what it excuses.
//   - Moves end: a move whose flips the network withholds (see Moves)
//     is ended by its source's freeze TTL, so it must leave the committed
//     placement within 8 s while its source stays up and reaches the
//     same leader (freeze-ttl).
//   - Liveness: once faults stop, requests succeed again and the backlog
//     drains (within 120 s plus 20 ms a record left to drain); in a
//     cluster, one node leads and has applied an entry of its term, the
//     placement settles (every move finished or was aborted, no
//     draining member owns a partition, and the planner run over the
//     committed state plans nothing: the cluster is balanced), the late
//     joiner of a moves world serves within 5 s of its start, and through
//     every node not retired all members are alive, the owners are the
//     committed ones, and every partition can be replayed, the
//     partitions the operator's grows added to its topics too
//     (control-grow: a 400 or 404 for a partition the committed log has
//     fails the run).
//   - The queue empties (check_emptied.go): after the drain, every
//     partition of the topic, as its owner describes it through the API,
//     reaches a committed offset equal to its high watermark with nothing
//     in flight, within the longest visibility timeout and a redelivery's
//     drain. The accounting counts ids, so a second copy of a record left
//     queued for good, or a committed offset stopped short, shows only
//     here.
//
// It also measures failovers in simulated time: from a leader's kill to
// the first moment another node leads and has applied an entry of its
// term (the metastore's barrier).
//
// `go test ./sim -seed=N [-nodes=3] [-moves]` runs one seed and prints its
// trace hash; `-seeds=K` sweeps; a failure prints the seed, the checker,
// the last events, and the command that reproduces it. A panic inside a
// run (a broken assert of the core) is caught by Run and becomes the run's
// failure, checker "panic", with the top of its stack: a sweep reports the
// seed and goes on. `go test ./sim -run
// TestSimMovesSweep -seeds=K` is the long sweep of moves worlds: it fails
// if a (fault × phase) mark, or another expected move mark, was never
// reached.
package sim
