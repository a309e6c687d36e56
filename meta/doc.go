// Package meta is the metastore: the cluster metadata, replicated by etcd
// raft (a raft.RawNode) and stored in one bbolt file per node. It is part
// of the deterministic core: it starts no goroutines (bbolt's Open, when
// it rebuilds the freelist in the simulator, walks the file in one it
// waits for), reads no
// clock (time arrives as Tick calls and as nowMs fields of commands), draws
// no global randomness, makes no os calls (bbolt opens its file from the
// path OpenStore is given) and iterates maps in sorted order wherever the
// order could reach an output. bbolt buckets iterate in key order.
//
// # What it owns
//
// The State: topics with the placement of every partition (Owner, and
// Target while a move is under way) and their fan-out links (a parent's
// Children and a child's Parent, attach epoch and delay, both sides kept
// equal by AttachChild, DetachChild, CreateTopic with a Parent and
// DeleteTopic; state_fanout.go), members with their liveness and
// draining flag, users with their password hashes and grants, and the
// raft voter configuration with each voter's address. The node reads it
// through State's accessors, which return copies or sorted slices.
//
// # Inputs
//
//   - Tick(): one raft tick (the driver picks the period; ElectionTicks
//     and HeartbeatTicks count them).
//   - Step(msg): a raft message from a peer. Messages raft would panic
//     on, or that no replica sends, are refused (peermessage.go), and so
//     is a vote request that names another data directory for this
//     replica than its own (Config.DataID; votes.go): a replica whose
//     store was lost must not elect a candidate lacking what it had
//     acknowledged.
//   - Propose(cmd) on any replica that knows a leader (raft forwards a
//     follower's proposal; ErrNoLeader otherwise, so the node answers
//     503), and ProposeConfChange(change) on the leader only (a follower
//     answers ErrNoLeader or a *NotLeaderError naming the leader).
//   - TransferLeadership, ReportSnapshot, ReportUnreachable.
//   - RequestRead(tag) on the leader past its barrier: a read index
//     (see Leadership barriers below).
//
// # Outputs, and the order the driver handles them in
//
// When HasReady reports true the driver takes Ready() and then, in this
// order:
//
//  1. Persist(rd): one bbolt transaction holding a received snapshot
//     (replacing the state machine), the new log entries, the hard state,
//     the committed entries applied to the state machine together with the
//     applied index, and every SnapshotEntries entries a snapshot of the
//     state machine with the log compacted to SnapshotTailEntries before
//     it. A Ready that only carries messages writes nothing. If Persist
//     fails the instance is finished: the driver sends nothing, does not
//     Advance, closes it and restarts from the store.
//  2. Send rd.Messages. Their To is a raft id; PeerByRaftID maps it to a
//     node id and cluster address. Any message may be lost. A driver that
//     learns whether a MsgSnap arrived may say so (ReportSnapshot); else
//     the leader counts it lost after SnapshotAckTicks and sends it again,
//     since raft sends a follower nothing while a snapshot is pending.
//  3. Advance(rd): returns the Outcomes of this node's proposals applied
//     in step 1, each with its ProposalID and nil or a rejection error.
//
// rd.Reads, the confirmations of this replica's read requests, need
// nothing persisted: the driver may take them when it takes the Ready,
// and act on each once AppliedIndex reached its Index.
//
// Applying committed entries before the messages leave is allowed: they
// were committed, so they are durable on a quorum. A crash anywhere in the
// cycle never applies an entry twice, because an entry and the applied
// index are in the same transaction and raft restarts with Config.Applied
// set to that index; raft's view of the configuration on restart is the
// one the state machine recorded at that index.
//
// # Commands
//
// A command in the log is: one byte of CommandType, one byte of version
// (1 for every command today), then the JSON object
// {"proposal": ProposalID, "command": body}. Decoding is strict (unknown
// fields, trailing data, unknown numbers or versions are errors) and
// bounded (commandBytesMax). Numbers are append-only and never reused:
//
//	1 CreateTopic      2 DeleteTopic     3 AlterTopic
//	4 MemberHeartbeat  5 MarkMemberDead  6 SetDraining   7 RemoveMember
//	8 SetTarget        9 CompleteMove   10 AbortMove    11 ForcePromote
//	12 PutUser        13 DeleteUser     14 SetGrants    15 SetPassword
//	16 AttachChild    17 DetachChild    18 MemberHeartbeats
//
// Applying a command yields nil or a typed rejection (ErrGuardFailed,
// ErrTopicExists, ErrTopicNotFound, ...), the same on every replica; a
// rejected command changes nothing. The guarded commands are
// compare-and-swaps: SetTarget only on a stable partition with the
// expected owner; CompleteMove and ForcePromote (Owner := Target,
// Target := "") only if Owner and Target are the expected ones (and the
// move's start time, when given: a later move with the same owner and
// target is another move); AbortMove
// only if Target is the expected one (and, when given, the move's start
// time, so that a late abort of a replaced move does not end the later
// one); all three, when they name it, only on the topic's creation they
// name (a target and a start may repeat across two creations of a name);
// MarkMemberDead only if the last
// heartbeat is the one the proposer saw. A committed entry this binary
// cannot decode stops the replica (assert): skipping it would let the
// replicas diverge.
//
// A ProposalID (node, term, sequence) is unique over the life of the group
// without being persisted by meta: the node id separates proposers, and
// each start of a node begins its sequence at a base that grows with the
// node's persisted start counter (Config.ProposalSequenceBase). A proposal
// can be lost (its leader is deposed before it commits, a forwarded
// MsgProp is dropped, or a snapshot skips it on this replica); the
// proposer needs its own timeout.
//
// Configuration changes carry the peer (node id, raft id, address) in the
// raft ConfChange context, so every replica learns every voter's address.
// They are checked when applied, from the state alone: a raft id is never
// reused, no removal leaves fewer than three voters (ErrTooFewVoters), and
// a rejected change is applied to raft as a no-op.
//
// # JSON Schemas of topics
//
// A topic may keep versions of a JSON Schema (TopicRecord.Schemas):
// CreateTopic with Schema makes version 1, and AlterTopic with Schema adds
// the next one, guarded by SchemaAfterVersion (the version its proposer
// checked against; ErrGuardFailed otherwise) and only if it evolves the
// latest additively (CheckSchemaEvolution: no property removed, no type
// changed, no required field dropped or added; the refusal is a
// *SchemaEvolutionError naming the rule and the property). An alter of
// this release (SameSchemaKept) whose Schema is the latest version's
// (SameSchema: equal once decoded, whitespace and key order aside) adds
// none, whatever its guard says, and applies its other fields. meta checks a
// document's size, shape and nesting (CheckSchemaDocument) but never
// compiles it: the HTTP layer does, before proposing. SchemaEpoch changes
// whenever a topic's latest schema may have, so a driver knows when to
// rebuild its view of them. Snapshots carry the schemas with their topics.
//
// # The store's layout
//
// One bbolt file (Store): bucket "log" holds the entries by big-endian
// index; bucket "raft" the format, the hard state and the applied
// position; bucket "snapshot" the latest snapshot; buckets "topics",
// "members", "users" and "cluster" the state machine, one key per record.
// The snapshot has a bucket of its own since format 2: in format 1 it
// shared bucket "raft" with the hard state, so nearly every transaction
// rewrote its page. OpenStore migrates a format 1 file in place, in one
// transaction (the snapshot moves, the format becomes 2), and refuses any
// other format; a format 2 file is refused by a binary that only knows
// format 1.
//
// # Invariants
//
//   - snapshot index <= applied index <= commit index, in the store and in
//     memory; the stored log and raft's in-memory log hold the same entries
//     after the snapshot.
//   - The state machine in the store equals State after every Persist.
//   - Every TopicRecord has Partitions == len(Assignments), non-empty
//     owners, and a Target that is empty or differs from its Owner.
//   - A topic's Schemas are consecutive versions from oldest to latest (at
//     most SchemaVersionsKept), with ids that only grow and are never
//     reused, even by a topic re-created under the same name; the schema
//     bytes of all topics stay under SchemaBytesTotalMax.
//   - The users grow only within the bounds their commands carry
//     (UsersMax users, UsersBytesMax bytes together), so that with the
//     schemas they fit one snapshot message.
//   - The voters of the configuration are exactly the peers of State.
//
// # Leadership barriers
//
// Barrier uses the own-term-entry approach: raft appends an empty entry
// when a leader is elected, and once the leader has applied an entry of
// its own term its state machine includes everything committed before.
// The planner and placement run only while Barrier holds: what they
// propose goes through the log, whose guards refuse it if a newer leader
// changed the state meanwhile. CheckQuorum is on (a leader cut off from a
// quorum steps down) and so is PreVote (a node rejoining after a
// partition does not depose the leader).
//
// Barrier does not say that the replica still leads: cut off from the
// quorum, it believes so until CheckQuorum steps it down (up to an
// election timeout), while a newer leader may commit and acknowledge
// changes it never sees. An answer that denies something (a topic not
// found, a partition past the count) must know that no newer leader
// exists, and takes a read index: RequestRead(tag) calls raft's
// ReadIndex (ReadOnlySafe: the leader broadcasts a heartbeat carrying the
// request, and a quorum's answer confirms it; no lease on the clock). The
// confirmation comes in a later Ready's Reads as ReadConfirmed{Tag,
// Index}: Index is the commit index the leader had when the request
// reached raft, so once AppliedIndex reached it the applied state holds
// everything committed before the request; a sole voter confirms at
// once. Only a leader past Barrier asks (ErrBarrierPending, else raft
// would park the request until the leader commits in its term), and at
// most ReadRequestsMax requests are outstanding (ErrReadsFull). None is
// confirmed once the leadership it was asked in ends: raft forgets them,
// and so does Meta (ReadsOutstanding no longer counts them), so the
// caller needs its own deadline. The request's context is its number and
// the tag; raft gives read states only for this replica's requests (a
// peer's MsgReadIndex or MsgReadIndexResp is refused), so the tag is
// always the caller's.
//
// # Determinism
//
// The same inputs in the same order give the same Ready contents, with one
// exception owned by raft: election timeouts are randomized from
// crypto/rand.Reader. meta does not work around it; the simulator replaces
// that reader with a seeded one for a run (tests use
// testing/cryptotest.SetGlobalRandom), so one process runs one simulation
// at a time. bbolt runs on a real file (in the simulator a temporary one,
// with StoreOptions.NoSync); it keeps bbolt's array freelist (the hashmap
// freelist allocates pages in Go map order) and never uses db.Batch (it
// arms a timer); in the simulator it does not write the freelist at each
// commit (StoreOptions.NoFreelistSync; bbolt rebuilds it at open, in page
// order). raft's log output is discarded; its panics stay panics.
package meta
