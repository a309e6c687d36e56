package sim

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/raft/v3/raftpb"

	"narad/meta"
)

// metaModelCompareMs is the least simulated time between two full
// comparisons of one replica with its model: a full comparison reads the
// replica's whole store. Between them, the topics and members each
// applied entry touched are compared at once (compareTouched), so that a
// divergence healed within the second (the same partition changing
// twice) shows too.
const metaModelCompareMs = 1_000

// The replica's store, as the metastore lays it out: the bucket of the
// raft bookkeeping with the applied position (big-endian index, then
// term), and the state machine's buckets of JSON records.
var (
	replicaRaftBucket    = []byte("raft")
	replicaAppliedKey    = []byte("applied")
	replicaTopicsBucket  = []byte("topics")
	replicaMembersBucket = []byte("members")
)

// metaModelChecker runs the naive model of the metastore (metaModel)
// beside every replica: each replica has its own copy of the model,
// advanced over the committed entries (which the simulator rebuilds from
// the leaders' messages, metaLog) up to the entry the replica applied.
// From time to time, once the replica applied an entry that is not a
// heartbeat, the replica's own state (read from its store) is
// compared with its model: topics, their placement (owner, target, move
// start) and members (alive, draining, last heartbeat). A difference is a
// failure "meta-model" naming the entries since the last agreement that
// touched what differs, with the model's verdict on each.
//
// It needs the committed log from the wire, so it runs in clusters only:
// a single node sends no Raft message.
type metaModelChecker struct {
	w *World
	// log holds the committed entries after base, in index order: log[i]
	// is the entry at index base+1+i. Only grows.
	log  []committedEntry
	base uint64
	// replicas holds each node's model, by node index; nil until the
	// node's first comparison, grown as nodes are added.
	replicas []*replicaModel
	// comparisons counts the full comparisons made, for the report;
	// touchedComparisons those of the touched records alone.
	comparisons, touchedComparisons int
	// refusals counts the entries the model refused, by command type, at
	// the first replica that applied them (countedIndex is the last entry
	// counted): which guards the run exercised.
	refusals     map[string]int
	countedIndex uint64
	// gap is set if the committed entries ever came with a gap (only a
	// unit test's hand-made log does that: metaLog fails the run on a
	// real one); the models cannot follow then, and stop.
	gap bool
	// decoded keeps the records read from the replicas' stores, by their
	// stored bytes: most records are the same from one read to the next,
	// and decoding is a function of the bytes alone.
	decoded *decodedRecords
}

// decodedRecords holds decoded topic and member records by their encoded
// bytes; the reports only read them. Emptied when it grows past
// decodedRecordsMax.
type decodedRecords struct {
	topics  map[string]meta.TopicRecord
	members map[string]meta.Member
}

const decodedRecordsMax = 4096

func newDecodedRecords() *decodedRecords {
	return &decodedRecords{topics: map[string]meta.TopicRecord{}, members: map[string]meta.Member{}}
}

// committedEntry is one committed entry: its command, nil for entries
// that carry none (a leader's empty entry, a configuration change).
type committedEntry struct {
	index   uint64
	command meta.Command
	// leftVoters names the member a configuration change took out of the
	// voters, as the simulator's view of the metastore applied it.
	leftVoters string
}

// replicaModel is the model of one replica. Invariant: model is the state
// after applying the committed entries up to index.
type replicaModel struct {
	model *metaModel
	index uint64
	// due is set when an entry other than a heartbeat was applied since
	// the last comparison; comparedAtMs is when that comparison ran.
	due          bool
	comparedAtMs int64
	// since lists the model's verdicts on the entries applied since the
	// last comparison that agreed; the first touchedCompared of them had
	// what they touched compared (compareTouched).
	since           []modelVerdict
	touchedCompared int
}

// modelVerdict is what the model did with one entry. The command is
// kept as it is, and formatted only when a failure describes the verdict
// (describeVerdicts): formatting every applied entry's for every replica
// was 0.8% of a five-node moves run, for text almost never read.
type modelVerdict struct {
	index   uint64
	about   string
	command meta.Command
	refusal string
}

func newMetaModelChecker(w *World, base uint64) *metaModelChecker {
	return &metaModelChecker{w: w, base: base, refusals: map[string]int{}, countedIndex: base}
}

// committed takes the next committed entry, appended in term, as metaLog
// applies it; leftVoters names the member a configuration change removed
// from the voters ("" for none). A command appended in another term than
// it was proposed in is kept as an entry with none (staleProposal).
func (c *metaModelChecker) committed(index, term uint64, entryType raftpb.EntryType, data []byte, leftVoters string) {
	if c.gap || index != c.base+uint64(len(c.log))+1 {
		c.gap = true
		return
	}
	entry := committedEntry{index: index, leftVoters: leftVoters}
	if entryType == raftpb.EntryNormal && len(data) > 0 {
		if id, command, err := meta.DecodeCommand(data); err == nil && !staleProposal(data, id.Term, term) {
			entry.command = command
		} else if err == nil {
			c.refusals["meta-model-refused-stale-term"]++
		}
	}
	c.log = append(c.log, entry)
}

// afterStep advances the models of the touched nodes and compares those
// that are due.
func (c *metaModelChecker) afterStep(touched []*simNode) {
	if c.gap {
		return
	}
	for _, n := range touched {
		if c.w.failure != nil || !n.up() {
			continue
		}
		r := c.replica(n)
		applied := n.node.MetaAppliedIndex()
		c.advance(r, applied)
		switch {
		case !r.due || r.index != applied:
		case c.w.nowMs-r.comparedAtMs >= metaModelCompareMs:
			c.compare(n, r)
		default:
			c.compareTouched(n, r)
		}
	}
}

// finish compares every node that is up, due or not.
func (c *metaModelChecker) finish() {
	if c.gap {
		return
	}
	for _, n := range c.w.nodes {
		if c.w.failure == nil && n.up() {
			r := c.replica(n)
			c.advance(r, n.node.MetaAppliedIndex())
			c.compare(n, r)
		}
	}
}

func (c *metaModelChecker) replica(n *simNode) *replicaModel {
	for len(c.replicas) <= n.index {
		c.replicas = append(c.replicas, nil)
	}
	r := c.replicas[n.index]
	if r == nil {
		r = &replicaModel{model: newMetaModel(), index: c.base}
		c.replicas[n.index] = r
	}
	return r
}

// advance applies the committed entries after r.index up to applied, as
// far as the log is known.
func (c *metaModelChecker) advance(r *replicaModel, applied uint64) {
	for r.index < applied && r.index < c.base+uint64(len(c.log)) {
		entry := c.log[r.index-c.base]
		r.index = entry.index
		if entry.leftVoters != "" {
			r.model.leftVoters(entry.leftVoters)
		}
		if entry.command == nil {
			continue
		}
		refusal, about := r.model.apply(entry.command)
		if entry.index > c.countedIndex {
			c.countedIndex = entry.index
			if refusal != "" {
				c.refusals[fmt.Sprintf("meta-model-refused-%T", entry.command)]++
			}
		}
		if !isHeartbeat(entry.command) {
			r.due = true
			r.since = append(r.since, modelVerdict{index: entry.index, about: about,
				command: entry.command, refusal: refusal})
		}
	}
}

// compare reads the replica's state from its store and fails
// the run if it differs from the model at the same applied entry.
func (c *metaModelChecker) compare(n *simNode, r *replicaModel) {
	report, err := readReplicaWith(n.store, c.decodedRecords())
	if err != nil {
		c.w.fail("meta-model", "%s: cannot read its store: %v", n.id, err)
		return
	}
	r.comparedAtMs = c.w.nowMs
	if report.applied != r.index {
		return // a restart recovered an older Ready's view: still due, compared later (sim review)
	}
	c.comparisons++
	r.due = false
	if about, difference := differences(r.model, report); difference != "" {
		c.failDiffering(n, r, about, difference)
		return
	}
	r.since, r.touchedCompared = r.since[:0], 0
}

// failDiffering fails the run on a difference between a replica and its
// model, naming the entries about it since the last agreement.
func (c *metaModelChecker) failDiffering(n *simNode, r *replicaModel, about, difference string) {
	c.w.fail("meta-model", "%s at entry %d: %s differs: %s; entries about it since the last agreement: %s",
		n.id, r.index, about, difference, describeVerdicts(r.since, about))
}

// compareTouched compares the topics and members that the entries applied
// since the last such comparison touched, reading those records alone
// from the replica's store.
func (c *metaModelChecker) compareTouched(n *simNode, r *replicaModel) {
	var abouts []string
	for _, verdict := range r.since[r.touchedCompared:] {
		if verdict.about != "" && !slices.Contains(abouts, verdict.about) {
			abouts = append(abouts, verdict.about)
		}
	}
	if len(abouts) == 0 {
		return
	}
	report := replicaReport{topics: map[string]meta.TopicRecord{}, members: map[string]meta.Member{}, decoded: c.decodedRecords()}
	if err := n.store.View(func(tx *bolt.Tx) error { return report.readItems(tx, abouts) }); err != nil {
		c.w.fail("meta-model", "%s: cannot read its store: %v", n.id, err)
		return
	}
	if report.applied != r.index {
		return // as in compare: compared when the store is at the entry
	}
	r.touchedCompared = len(r.since)
	c.touchedComparisons++
	for _, about := range abouts {
		if difference := aboutDifference(r.model, report, about); difference != "" {
			c.failDiffering(n, r, about, difference)
			return
		}
	}
}

// readItems reads the applied index and the records abouts name ("topic
// T", "member M"; others are not read).
func (r *replicaReport) readItems(tx *bolt.Tx, abouts []string) error {
	topics, members, err := r.openBuckets(tx)
	if err != nil {
		return err
	}
	for _, about := range abouts {
		if name, ok := strings.CutPrefix(about, "topic "); ok {
			if value := topics.Get([]byte(name)); value != nil {
				if err := r.keepTopic([]byte(name), value); err != nil {
					return err
				}
			}
		}
		if id, ok := strings.CutPrefix(about, "member "); ok {
			if value := members.Get([]byte(id)); value != nil {
				if err := r.keepMember([]byte(id), value); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// aboutDifference is differences for one thing an entry touched.
func aboutDifference(model *metaModel, report replicaReport, about string) string {
	if name, ok := strings.CutPrefix(about, "topic "); ok {
		return topicDifference(model.topics[name], report.topics, name)
	}
	if id, ok := strings.CutPrefix(about, "member "); ok {
		return memberDifference(model.members[id], report.members, id)
	}
	return ""
}

func describeVerdicts(verdicts []modelVerdict, about string) string {
	var parts []string
	for _, v := range verdicts {
		if v.about != about {
			continue
		}
		outcome := "applied"
		if v.refusal != "" {
			outcome = "refused (" + v.refusal + ")"
		}
		parts = append(parts, fmt.Sprintf("#%d %T%+v: model %s", v.index, v.command, v.command, outcome))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}

// replicaReport is a replica's state as its store holds it.
type replicaReport struct {
	applied uint64
	topics  map[string]meta.TopicRecord
	members map[string]meta.Member
	// decoded, if set, holds records already decoded, by their bytes.
	decoded *decodedRecords
}

// readReplica reads the applied index, the topics and the members from
// the replica's store, in a read-only transaction that sees what the last
// committed transaction left in its file.
func readReplica(store *meta.Store) (replicaReport, error) {
	return readReplicaWith(store, nil)
}

// readReplicaWith is readReplica taking the records of the same bytes
// from decoded (nil: none).
func readReplicaWith(store *meta.Store, decoded *decodedRecords) (replicaReport, error) {
	report := replicaReport{topics: map[string]meta.TopicRecord{}, members: map[string]meta.Member{}, decoded: decoded}
	err := store.View(func(tx *bolt.Tx) error { return report.read(tx) })
	return report, err
}

// decodedRecords returns the checker's records decoded so far, emptied
// once large.
func (c *metaModelChecker) decodedRecords() *decodedRecords {
	if c.decoded == nil || len(c.decoded.topics)+len(c.decoded.members) > decodedRecordsMax {
		c.decoded = newDecodedRecords()
	}
	return c.decoded
}

func (r *replicaReport) read(tx *bolt.Tx) error {
	topics, members, err := r.openBuckets(tx)
	if err != nil {
		return err
	}
	if err := topics.ForEach(r.keepTopic); err != nil {
		return err
	}
	return members.ForEach(r.keepMember)
}

// openBuckets reads the applied index into r and returns the buckets of
// the topics and the members.
func (r *replicaReport) openBuckets(tx *bolt.Tx) (topics, members *bolt.Bucket, err error) {
	raft, topics, members := tx.Bucket(replicaRaftBucket), tx.Bucket(replicaTopicsBucket), tx.Bucket(replicaMembersBucket)
	if raft == nil || topics == nil || members == nil {
		return nil, nil, fmt.Errorf("the store lacks a bucket")
	}
	if applied := raft.Get(replicaAppliedKey); len(applied) >= 8 {
		r.applied = binary.BigEndian.Uint64(applied)
	}
	return topics, members, nil
}

// keepTopic and keepMember decode one record of the store into r.
func (r *replicaReport) keepTopic(key, value []byte) error {
	if r.decoded != nil {
		if record, ok := r.decoded.topics[string(value)]; ok {
			r.topics[string(key)] = record
			return nil
		}
	}
	var record meta.TopicRecord
	return decodeInto(value, &record, func() {
		r.topics[string(key)] = record
		if r.decoded != nil {
			r.decoded.topics[string(value)] = record
		}
	})
}

func (r *replicaReport) keepMember(key, value []byte) error {
	if r.decoded != nil {
		if member, ok := r.decoded.members[string(value)]; ok {
			r.members[string(key)] = member
			return nil
		}
	}
	var member meta.Member
	return decodeInto(value, &member, func() {
		r.members[string(key)] = member
		if r.decoded != nil {
			r.decoded.members[string(value)] = member
		}
	})
}

func decodeInto(data []byte, into any, keep func()) error {
	if err := json.Unmarshal(data, into); err != nil {
		return err
	}
	keep()
	return nil
}

// differences returns the first thing (a topic or a member) on which the
// model and the replica differ, and how.
func differences(model *metaModel, report replicaReport) (about, difference string) {
	for _, name := range unionOfKeys(model.topics, report.topics) {
		if difference := topicDifference(model.topics[name], report.topics, name); difference != "" {
			return "topic " + name, difference
		}
	}
	for _, id := range unionOfKeys(model.members, report.members) {
		if difference := memberDifference(model.members[id], report.members, id); difference != "" {
			return "member " + id, difference
		}
	}
	return "", ""
}

// unionOfKeys is every key of a or b, sorted, each once.
func unionOfKeys[A, B any](a map[string]A, b map[string]B) []string {
	keys := append(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(b))...)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// presenceDifference says how the model and the replica differ on whether
// a thing exists; decided is false when both have it (compare further).
func presenceDifference(inModel, inReplica bool) (difference string, decided bool) {
	switch {
	case !inModel && !inReplica:
		return "", true
	case !inModel:
		return "the replica has it, the model does not", true
	case !inReplica:
		return "the model has it, the replica does not", true
	}
	return "", false
}

func topicDifference(want *modelTopic, reported map[string]meta.TopicRecord, name string) string {
	got, exists := reported[name]
	if difference, decided := presenceDifference(want != nil, exists); decided {
		return difference
	}
	switch {
	case want.unmodelled:
		return ""
	case len(got.Assignments) != len(want.partitions):
		return fmt.Sprintf("model has %d partitions, replica %d", len(want.partitions), len(got.Assignments))
	}
	for i, p := range want.partitions {
		a := got.Assignments[i]
		if a.Owner != p.owner || a.Target != p.target || a.MoveStartedAtMs != p.startedAtMs {
			return fmt.Sprintf("partition %d: model %s -> %q (started %d), replica %s -> %q (started %d)",
				i, p.owner, p.target, p.startedAtMs, a.Owner, a.Target, a.MoveStartedAtMs)
		}
	}
	return ""
}

func memberDifference(want *modelMember, reported map[string]meta.Member, id string) string {
	got, exists := reported[id]
	if difference, decided := presenceDifference(want != nil, exists); decided {
		return difference
	}
	switch {
	case got.Alive != want.alive || got.Draining != want.draining || got.LastHeartbeatMs != want.lastHeartbeatMs || got.DiskLow != want.diskLow || got.DataID != want.dataID:
		return fmt.Sprintf("model alive=%t draining=%t heartbeat=%d disk_low=%t data_id=%q, replica alive=%t draining=%t heartbeat=%d disk_low=%t data_id=%q",
			want.alive, want.draining, want.lastHeartbeatMs, want.diskLow, want.dataID, got.Alive, got.Draining, got.LastHeartbeatMs, got.DiskLow, got.DataID)
	}
	return ""
}

// isHeartbeat reports whether a command only records heartbeats (a
// member's own, or a leader's round): the replicas' states are compared
// after the other entries only.
func isHeartbeat(command meta.Command) bool {
	switch command.(type) {
	case meta.MemberHeartbeat, meta.MemberHeartbeats:
		return true
	}
	return false
}
