package node

import (
	"errors"
	"fmt"
	"hash/fnv"
	"sort"

	"narad/meta"
	"narad/msg"
	"narad/node/lease"
	"narad/storage"
)

// topicNameBytesMax bounds a topic's name (it names a directory).
const topicNameBytesMax = 255

// validTopicName accepts 1 to topicNameBytesMax of [A-Za-z0-9._-], but
// not "." or "..": a name is a directory's. Every produce checks it, so
// it is a loop over the bytes rather than a regular expression.
func validTopicName(name string) error {
	valid := len(name) >= 1 && len(name) <= topicNameBytesMax && name != "." && name != ".."
	for i := 0; valid && i < len(name); i++ {
		valid = topicNameByte(name[i])
	}
	if !valid {
		return msg.Invalid("invalid topic name %q: want 1-255 of [A-Za-z0-9._-], not . or ..", name)
	}
	return nil
}

func topicNameByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-'
}

func (n *Node) topic(name string) (*topic, error) {
	t, ok := n.lookupTopic(name)
	if !ok {
		return nil, msg.NotFound("topic %q not found", name)
	}
	return t, nil
}

// createTopic validates the request and proposes the topic, with the
// placement of its partitions, to the metastore; the 201 leaves when the
// entry is applied (handleOutcomes).
func (n *Node) createTopic(id msg.RequestID, r msg.CreateTopic) {
	// Whether the name is taken, as it is or in another case, is left to
	// the metastore (ErrTopicExists, ErrTopicExistsIgnoringCase: a 409
	// when the entry applies): this replica may lag, and a 409 from its
	// copy could deny a topic whose delete was already answered.
	parent, err := n.childPlacement(r)
	if err == nil && parent != nil && r.Partitions == 0 {
		r.Partitions = parent.info.Partitions
	}
	var info msg.TopicInfo
	if err == nil {
		info, err = n.newTopicInfo(r)
	}
	var owners []string
	if err == nil {
		view := n.newPlacementView()
		owners = n.placeNewTopic(view, parent, info)
		err = n.checkPlacementLimits(true, owners, view.owned)
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	n.propose(id, proposalCreateTopic, r.Name, meta.CreateTopic{
		Name: info.Name, RetentionMs: info.RetentionMs, VisibilityTimeoutMs: info.VisibilityTimeoutMs,
		MaxInFlightPerPartition: info.InFlightMax, MaxAckedAheadPerPartition: info.AckedAheadMax,
		CreatedAtMs: n.nowMs, CreatedBy: r.CreatedBy, CreatorCreatedAtMs: r.CreatorCreatedAtMs, Owners: owners, Schema: r.Schema, Limits: n.placementLimits(),
		MaxDeliveries: info.MaxDeliveries, DeadLetterTopic: info.DeadLetterTopic,
		Parent: r.Parent, FanoutDelayMs: r.FanoutDelayMs, ExpectedOwner: r.ExpectedOwner, Numbered: true, OwnersVoting: true,
		NamesFolded: true, DeadLetterLinksChecked: true, SameSchemaAttached: true,
	})
}

// placeNewTopic places a new topic's partitions, anti-affine to its
// parent's when it has one.
func (n *Node) placeNewTopic(view *placementView, parent *topic, info msg.TopicInfo) []string {
	if parent != nil {
		return n.placeChildPartitions(view, parent, info.Name, info.Partitions)
	}
	return n.placePartitions(view, info.Name, 0, info.Partitions)
}

func (n *Node) newTopicInfo(r msg.CreateTopic) (msg.TopicInfo, error) {
	if err := validTopicName(r.Name); err != nil {
		return msg.TopicInfo{}, err
	}
	if err := CheckSchemaDocument(r.Schema); err != nil {
		return msg.TopicInfo{}, err
	}
	info := msg.TopicInfo{
		Name: r.Name, Partitions: r.Partitions, RetentionMs: r.RetentionMs,
		VisibilityTimeoutMs: r.VisibilityTimeoutMs, InFlightMax: r.InFlightMax,
		AckedAheadMax: r.AckedAheadMax, CreatedAt: n.nowMs / 1000,
		MaxDeliveries: r.MaxDeliveries, DeadLetterTopic: r.DeadLetterTopic,
	}
	if err := n.applyDefaults(&info); err != nil {
		return msg.TopicInfo{}, err
	}
	return info, n.checkDeadLetters(info)
}

// applyDefaults replaces zero fields by the node defaults and checks every
// bound. It is shared by create and alter so both apply the same rules.
func (n *Node) applyDefaults(info *msg.TopicInfo) error {
	if info.Partitions < 0 || info.RetentionMs < 0 || info.VisibilityTimeoutMs < 0 || info.InFlightMax < 0 || info.AckedAheadMax < 0 {
		return msg.Invalid("partitions, retention_ms, visibility_timeout_ms and caps must not be negative")
	}
	info.Partitions = orDefault(info.Partitions, n.cfg.DefaultPartitions)
	info.RetentionMs = orDefault(info.RetentionMs, n.cfg.DefaultRetentionMs)
	info.VisibilityTimeoutMs = orDefault(info.VisibilityTimeoutMs, n.cfg.DefaultVisibilityTimeoutMs)
	info.InFlightMax = orDefault(info.InFlightMax, n.cfg.DefaultInFlightMax)
	info.AckedAheadMax = orDefault(info.AckedAheadMax, n.cfg.DefaultAckedAheadMax)
	if info.Partitions < msg.PartitionsMin || info.Partitions > n.cfg.PartitionsMax {
		return msg.Invalid("partitions must be between %d and %d, got %d", msg.PartitionsMin, n.cfg.PartitionsMax, info.Partitions)
	}
	if err := checkCap("max_in_flight_per_partition", info.InFlightMax); err != nil {
		return err
	}
	if err := checkCap("max_acked_ahead_per_partition", info.AckedAheadMax); err != nil {
		return err
	}
	if info.VisibilityTimeoutMs > msg.VisibilityTimeoutMsMax {
		return msg.Invalid("visibility_timeout_ms must be at most %d (12h), got %d", msg.VisibilityTimeoutMsMax, info.VisibilityTimeoutMs)
	}
	if info.RetentionMs != retentionForever && info.RetentionMs < msg.RetentionMsMin {
		return msg.Invalid("retention_ms must be at least %d (1h), got %d", msg.RetentionMsMin, info.RetentionMs)
	}
	return nil
}

// checkCap refuses a per-partition cap past lease.CapMax, naming the
// field and the value sent.
func checkCap(field string, value int) error {
	if value > lease.CapMax {
		return msg.Invalid("%s must be at most %d, got %d", field, lease.CapMax, value)
	}
	return nil
}

// pageAfter returns up to limit of the sorted names that come after token.
func pageAfter(names []string, token string, limit int) []string {
	i := sort.SearchStrings(names, token)
	if i < len(names) && names[i] == token {
		i++
	}
	return names[i:min(i+limit, len(names))]
}

// placementView is what choosing owners for a change's new partitions
// reads from the applied state, once per change: the members that may
// take partitions (receiversByRoom) and how many each owns. Only the
// change's own placement changes it: placePartitions and
// placeChildPartitions count what they place in owned, so that
// checkPlacementLimits judges the counts the placement leads to.
type placementView struct {
	// roomy and all are the receivers, sorted: those with room on disk,
	// and all of them.
	roomy, all []string
	// owned counts the partitions each member owns, with those placed.
	owned map[string]int
}

func (n *Node) newPlacementView() *placementView {
	roomy, all := n.receiversByRoom()
	return &placementView{roomy: roomy, all: all, owned: n.meta.State().PartitionsOwned()}
}

// placePartitions chooses owners for partitions [from, to) of a topic:
// round-robin over the receivers (alive, non-draining members, those with
// room on disk when there are any), sorted by id, starting at a member
// picked by the topic's name so topics spread out. A receiver that owns
// PartitionsPerNodeMax partitions already is passed over for the next one
// in the round that owns fewer, then for a member short of disk that owns
// fewer, so a create or grow that fits in the cluster is not refused for
// a full member; when every member is full the round stands, and
// checkPlacementLimits refuses it.
func (n *Node) placePartitions(view *placementView, topicName string, from, to int) []string {
	receivers := view.roomy
	if len(receivers) == 0 {
		receivers = view.all
	}
	if len(receivers) == 0 {
		receivers = []string{n.cfg.NodeID} // the leader heartbeats first; its own entry applies before this one
	}
	h := fnv.New32a()
	h.Write([]byte(topicName))
	start := int(h.Sum32() % uint32(len(receivers)))
	owners := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		owner, ok := n.nextWithRoom(receivers, start+i, view.owned)
		if !ok {
			owner, ok = n.nextWithRoom(view.all, start+i, view.owned)
		}
		if !ok {
			owner = receivers[(start+i)%len(receivers)]
		}
		view.owned[owner]++
		owners = append(owners, owner)
	}
	return owners
}

// nextWithRoom returns the first of the members, from index i of their
// round on, that owns fewer than PartitionsPerNodeMax partitions (owned).
func (n *Node) nextWithRoom(members []string, i int, owned map[string]int) (string, bool) {
	for step := range members {
		if candidate := members[(i+step)%len(members)]; owned[candidate] < n.cfg.PartitionsPerNodeMax {
			return candidate, true
		}
	}
	return "", false
}

func orDefault[T int | int64](value, fallback T) T {
	if value == 0 {
		return fallback
	}
	return value
}

func (n *Node) listTopics(r msg.ListTopics) (msg.Result, error) {
	limit := orDefault(r.Limit, msg.TopicsPageDefault)
	if limit < 1 || limit > msg.TopicsPageMax {
		return nil, msg.Invalid("limit must be between 1 and %d", msg.TopicsPageMax)
	}
	if len(r.PageToken) > msg.TopicNameBytesMax {
		return nil, msg.Invalid("page_token is at most %d bytes (it is a topic name)", msg.TopicNameBytesMax)
	}
	names := pageAfter(n.meta.State().TopicNames(), r.PageToken, limit)
	page := msg.TopicPage{Topics: make([]msg.TopicInfo, 0, len(names))}
	for _, name := range names {
		t, _ := n.lookupTopic(name)
		page.Topics = append(page.Topics, t.info)
	}
	if len(names) == limit {
		page.NextPageToken = names[len(names)-1]
	}
	return page, nil
}

func (n *Node) getTopic(r msg.GetTopic) (msg.Result, error) {
	t, err := n.topic(r.Name)
	if err != nil {
		return nil, err
	}
	if r.Partition != msg.PartitionNone && (r.Partition < 0 || r.Partition >= t.info.Partitions) {
		return nil, invalidPartition(t, r.Partition)
	}
	detail := msg.TopicDetail{TopicInfo: t.info, PartitionStats: []msg.PartitionStats{}}
	if r.Confirm {
		return detail, nil // the asker reads the topic's info: no log opened, no stats sent
	}
	for i := range t.info.Partitions {
		if r.Partition == msg.PartitionNone || r.Partition == i {
			detail.PartitionStats = append(detail.PartitionStats, n.partitionStats(t, i))
		}
	}
	return detail, nil
}

func (n *Node) partitionStats(t *topic, index int) msg.PartitionStats {
	stats := msg.PartitionStats{Index: index, OwnerNode: t.owner(index)}
	if !n.ownedHere(t, index) {
		return stats // another node's: its stats arrive with forwarding
	}
	p := n.partitionOf(t, index)
	if n.logAbsent(p) {
		stats.Available = true // never written here: empty, and no files made to say so
		return stats
	}
	s := p.closed // a log closed intact is described as it closed, not reopened for it
	if !p.closedIntact {
		log, err := n.openLog(t, p)
		if err != nil {
			return stats
		}
		s = log.Stats()
	}
	stats.Available = true
	stats.Segments, stats.SizeBytes = s.Segments, s.SizeBytes
	stats.OldestOffset, stats.NextOffset, stats.HighWatermark = s.Oldest, s.HWM, s.HWM
	stats.OldestSegmentAt = s.OldestSegmentTimeMs / 1000
	stats.Committed, stats.InFlight = p.leases.Committed(), p.leases.InFlight()
	return stats
}

// alterTopic validates the change against the current definition and
// proposes it; lease tables pick up new caps when the entry applies
// (reconcileTopics).
func (n *Node) alterTopic(id msg.RequestID, r msg.AlterTopic) {
	t, err := n.topic(r.Name)
	var info msg.TopicInfo
	if err == nil {
		info, err = n.alteredInfo(t.info, r)
	}
	if err == nil {
		err = n.checkSchemaChange(r)
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	// Only the fields the request names, with the defaults resolved: the
	// command applies onto the topic as it is then, so an alter of other
	// fields taken meanwhile (or applied before this node saw it) stands.
	cmd := meta.AlterTopic{Name: r.Name, Schema: r.Schema, SchemaAfterVersion: t.info.SchemaVersion,
		RetentionMs: resolvedIf(r.RetentionMs, &info.RetentionMs), VisibilityTimeoutMs: resolvedIf(r.VisibilityTimeoutMs, &info.VisibilityTimeoutMs),
		MaxInFlightPerPartition: resolvedIf(r.InFlightMax, &info.InFlightMax), MaxAckedAheadPerPartition: resolvedIf(r.AckedAheadMax, &info.AckedAheadMax),
		MaxDeliveries: resolvedIf(r.MaxDeliveries, &info.MaxDeliveries), DeadLetterTopic: resolvedIf(r.DeadLetterTopic, &info.DeadLetterTopic),
		ExpectedOwner:          r.ExpectedOwner,
		ExpectedCreation:       meta.Expecting(t.identity),
		OwnersVoting:           true,
		TupleItemsCompared:     true,
		PrefixItemsCompared:    true,
		DeadLetterLinksChecked: true,
		SameSchemaKept:         true}
	if info.Partitions > t.info.Partitions {
		cmd.Partitions = &info.Partitions
		view := n.newPlacementView()
		cmd.NewOwners = n.placePartitions(view, info.Name, t.info.Partitions, info.Partitions)
		cmd.Limits = n.placementLimits()
		if err := n.checkPlacementLimits(false, cmd.NewOwners, view.owned); err != nil {
			n.reply(id, nil, err)
			return
		}
	} else if alterNamesOnlyPartitions(r) { // set: alteredInfo refuses an alter of nothing
		// The count it has here (a grow retried after an unknown outcome
		// had applied) goes through the log too, adding none, so that its
		// 200 says the topic has that count now: answered from this
		// replica, which may lag, it was a deleted topic's, or a count the
		// topic had grown past.
		cmd.Partitions = &info.Partitions
	}
	n.propose(id, proposalAlterTopic, r.Name, cmd)
}

func (n *Node) alteredInfo(info msg.TopicInfo, r msg.AlterTopic) (msg.TopicInfo, error) {
	if r.Partitions == nil && r.RetentionMs == nil && r.VisibilityTimeoutMs == nil && r.InFlightMax == nil && r.AckedAheadMax == nil &&
		len(r.Schema) == 0 && r.MaxDeliveries == nil && r.DeadLetterTopic == nil {
		return info, msg.Invalid("nothing to change: set at least one of partitions, retention_ms, visibility_timeout_ms, " +
			"max_in_flight_per_partition, max_acked_ahead_per_partition, schema, max_deliveries, dead_letter_topic")
	}
	if r.Partitions != nil {
		if *r.Partitions < info.Partitions {
			return info, msg.Invalid("partitions can only grow: have %d, asked %d", info.Partitions, *r.Partitions)
		}
		info.Partitions = *r.Partitions
	}
	setIf(&info.RetentionMs, r.RetentionMs)
	setIf(&info.VisibilityTimeoutMs, r.VisibilityTimeoutMs)
	setIf(&info.InFlightMax, r.InFlightMax)
	setIf(&info.AckedAheadMax, r.AckedAheadMax)
	setIf(&info.MaxDeliveries, r.MaxDeliveries)
	setIf(&info.DeadLetterTopic, r.DeadLetterTopic)
	if err := n.applyDefaults(&info); err != nil {
		return info, err
	}
	return info, n.checkDeadLetters(info)
}

// alterNamesOnlyPartitions reports whether an alter asks for nothing but a
// partition count.
func alterNamesOnlyPartitions(r msg.AlterTopic) bool {
	return r.RetentionMs == nil && r.VisibilityTimeoutMs == nil && r.InFlightMax == nil && r.AckedAheadMax == nil &&
		len(r.Schema) == 0 && r.MaxDeliveries == nil && r.DeadLetterTopic == nil
}

// resolvedIf is resolved when asked is set (the request names the field),
// else nil (the command leaves it as it is).
func resolvedIf[T any](asked, resolved *T) *T {
	if asked == nil {
		return nil
	}
	return resolved
}

func setIf[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

// deleteTopic proposes the deletion; every node drops its partitions of
// the topic when the entry applies (reconcileTopics).
func (n *Node) deleteTopic(id msg.RequestID, r msg.DeleteTopic) {
	t, err := n.topic(r.Name)
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	n.propose(id, proposalDeleteTopic, r.Name, meta.DeleteTopic{Name: r.Name, ExpectedOwner: r.ExpectedOwner,
		ExpectedCreation: meta.Expecting(t.identity)})
}

// dropTopicState forgets every partition of a topic that is gone (or was
// re-created): moves into this node end, open logs are closed, unsynced
// produces answered 404, parked polls answered 404, and its directory
// removed.
func (n *Node) dropTopicState(name string) {
	gone := msg.NotFound("topic %q not found", name)
	n.endTopicSessions(name)
	n.forgetSubscriptions(name)
	for _, p := range n.sortedPartitions() {
		if p.key.topic != name {
			continue
		}
		n.failDependents(p, gone)
		if err := n.store.Close(p.dir); err != nil && !isClosed(err) {
			n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", p.dir, err))
		}
		n.removePartition(p)
	}
	n.closeTopicLogs(name)
	for _, id := range n.waiters.removeTopic(name) {
		n.reply(id, nil, gone)
	}
	delete(n.cursors, name)
	delete(n.deadLettersBlocked, name) // a topic created again under the name starts unblocked
	n.topicCache = nil                 // its entry shares the cursors just dropped
	// Parents' cursors into the topic go with it: a copy batch in flight
	// then finds no cursor when it is answered (batchDone) and reports
	// nothing of a topic whose metric series were dropped; the cursor
	// files go at the next cleaning of the parent's links.
	for _, p := range n.sortedPartitions() {
		delete(p.fanout, name)
	}
	// Durably (the topics directory synced). Leftovers of a failed removal
	// of a topic that stays deleted are reclaimed by the startup sweep;
	// those a topic created again under the name finds (a crash after the
	// metastore applied the delete and the re-create but before this
	// removal, or a restart before retryPurges succeeded) carry the old
	// creation's stamp, and its first open removes them (stamp.go).
	if err := n.purgeTopicDir(name); err != nil {
		n.observer.Event("topic-purge-failed", fmt.Sprintf("%s: %v", name, err))
		n.purgesPending[name] = true
	}
	if topics, ok := n.observer.(TopicObserver); ok {
		topics.TopicDropped(name)
	}
}

// retryPurges removes again the directories of deleted topics whose
// removal failed (an I/O error): until it succeeds, no partition of a
// topic created again under the name opens, nor does a move into one
// start, so none serves or installs over the deleted topic's files.
func (n *Node) retryPurges() {
	if len(n.purgesPending) == 0 {
		return // at every tick: nothing to sort
	}
	for _, name := range sortedNames(n.purgesPending) {
		if err := n.purgeTopicDir(name); err != nil {
			continue // reported when it first failed; tried again next tick
		}
		delete(n.purgesPending, name)
		n.observer.Event("topic-purged", name+": the directory a failed removal left is gone")
	}
}

// purgeTopicDir removes a dropped topic's directory, durably. The
// directory of a partition whose move's finalize job is still out
// (jobsOrphaned), and the install leftovers beside it, stay: the job
// renames and reads them on another goroutine. Its return (discardJob)
// removes them, then the topic's directory (purgeDroppedTopicDir).
func (n *Node) purgeTopicDir(name string) error {
	kept := n.orphanedJobEntries(name)
	if len(kept) == 0 {
		return storage.DeletePartition(n.fs, topicsDir+"/"+name)
	}
	entries, err := n.partitionEntries(name)
	if err != nil {
		return err
	}
	for _, entry := range entries {
		final, leftover := storage.InstallLeftover(entry)
		if kept[entry] || (leftover && kept[final]) {
			continue
		}
		if err := storage.DeletePartition(n.fs, topicsDir+"/"+name+"/"+entry); err != nil {
			return err
		}
	}
	return nil
}

// orphanedJobEntries names the partition directories of a topic (entries
// of its directory) that a finalize job still out works in.
func (n *Node) orphanedJobEntries(name string) map[string]bool {
	var kept map[string]bool
	for key := range n.jobsOrphaned { //determinism:ok a set, read by lookup
		if key.topic == name {
			if kept == nil {
				kept = map[string]bool{}
			}
			kept[partitionEntry(key.index)] = true
		}
	}
	return kept
}

// purgeDroppedTopicDir removes the directory of a topic that is gone once
// no finalize job works in it any more (a job's return, discardJob). A
// topic created again under the name keeps its directory.
func (n *Node) purgeDroppedTopicDir(name string) {
	if _, exists := n.meta.State().Topic(name); exists || len(n.orphanedJobEntries(name)) > 0 {
		return
	}
	if err := storage.DeletePartition(n.fs, topicsDir+"/"+name); err != nil {
		n.observer.Event("topic-purge-failed", fmt.Sprintf("%s: %v", name, err))
	}
}

// closeTopicLogs closes the logs still open in a dropped topic's
// directory that no partition of this node serves: a move's installed
// copy whose flip has not applied (the store adopted it; the session that
// rolls it back ends only at the next drive of the moves, after the
// directory is gone). Seed 2700155: the topic's delete applied at the
// target in flip, whose copy stayed open under the removal.
func (n *Node) closeTopicLogs(name string) {
	if err := n.store.CloseUnder(topicsDir + "/" + name); err != nil {
		n.observer.Event("log-close-failed", err.Error()) // each names its directory
	}
}

func isClosed(err error) bool { return errors.Is(err, storage.ErrClosed) }
