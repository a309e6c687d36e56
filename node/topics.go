package node

import (
	"errors"
	"fmt"
	"regexp"

	"narad/node/lease"
	"narad/storage"
)

var topicNamePattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)

func validTopicName(name string) error {
	if !topicNamePattern.MatchString(name) || name == "." || name == ".." {
		return Invalid("invalid topic name %q: want 1-255 of [A-Za-z0-9._-], not . or ..", name)
	}
	return nil
}

func (n *Node) topic(name string) (*topic, error) {
	t, ok := n.catalog.get(name)
	if !ok {
		return nil, NotFound("topic %q not found", name)
	}
	return t, nil
}

func (n *Node) createTopic(r CreateTopic) (any, error) {
	info, err := n.newTopicInfo(r)
	if err != nil {
		return nil, err
	}
	if _, exists := n.catalog.get(r.Name); exists {
		return nil, Conflict("topic already exists")
	}
	// A directory left by an interrupted delete must not leak old records
	// into the new topic.
	if err := n.fs.RemoveAll(topicsDir + "/" + r.Name); err != nil {
		return nil, Internal("create topic failed: %v", err)
	}
	n.catalog.put(info)
	if err := n.catalog.save(n.fs); err != nil {
		n.catalog.remove(r.Name)
		return nil, Internal("create topic failed: %v", err)
	}
	return info, nil
}

func (n *Node) newTopicInfo(r CreateTopic) (TopicInfo, error) {
	if err := validTopicName(r.Name); err != nil {
		return TopicInfo{}, err
	}
	info := TopicInfo{
		Name: r.Name, Partitions: r.Partitions, RetentionMs: r.RetentionMs,
		VisibilityTimeoutMs: r.VisibilityTimeoutMs, InFlightMax: r.InFlightMax,
		AckedAheadMax: r.AckedAheadMax, CreatedAt: n.nowMs / 1000,
	}
	if err := n.applyDefaults(&info); err != nil {
		return TopicInfo{}, err
	}
	return info, nil
}

// applyDefaults replaces zero fields by the node defaults and checks every
// bound. It is shared by create and alter so both apply the same rules.
func (n *Node) applyDefaults(info *TopicInfo) error {
	if info.Partitions < 0 || info.RetentionMs < 0 || info.VisibilityTimeoutMs < 0 || info.InFlightMax < 0 || info.AckedAheadMax < 0 {
		return Invalid("partitions, retention_ms, visibility_timeout_ms and caps must not be negative")
	}
	info.Partitions = orDefault(info.Partitions, n.cfg.DefaultPartitions)
	info.RetentionMs = orDefault(info.RetentionMs, n.cfg.DefaultRetentionMs)
	info.VisibilityTimeoutMs = orDefault(info.VisibilityTimeoutMs, n.cfg.DefaultVisibilityTimeoutMs)
	info.InFlightMax = orDefault(info.InFlightMax, n.cfg.DefaultInFlightMax)
	info.AckedAheadMax = orDefault(info.AckedAheadMax, n.cfg.DefaultAckedAheadMax)
	if info.Partitions < PartitionsMin || info.Partitions > n.cfg.PartitionsMax {
		return Invalid("partitions must be between %d and %d, got %d", PartitionsMin, n.cfg.PartitionsMax, info.Partitions)
	}
	if info.InFlightMax > lease.CapMax || info.AckedAheadMax > lease.CapMax {
		return Invalid("max_in_flight_per_partition and max_acked_ahead_per_partition must be at most %d", lease.CapMax)
	}
	if info.RetentionMs != retentionForever && info.RetentionMs < RetentionMsMin {
		return Invalid("retention_ms must be at least %d (1h), got %d", RetentionMsMin, info.RetentionMs)
	}
	return nil
}

func orDefault[T int | int64](value, fallback T) T {
	if value == 0 {
		return fallback
	}
	return value
}

func (n *Node) listTopics(r ListTopics) (any, error) {
	limit := orDefault(r.Limit, TopicsPageDefault)
	if limit < 1 || limit > TopicsPageMax {
		return nil, Invalid("limit must be between 1 and %d", TopicsPageMax)
	}
	names := n.catalog.pageAfter(r.PageToken, limit)
	page := TopicPage{Topics: make([]TopicInfo, 0, len(names))}
	for _, name := range names {
		t, _ := n.catalog.get(name)
		page.Topics = append(page.Topics, t.info)
	}
	if len(names) == limit {
		page.NextPageToken = names[len(names)-1]
	}
	return page, nil
}

func (n *Node) getTopic(r GetTopic) (any, error) {
	t, err := n.topic(r.Name)
	if err != nil {
		return nil, err
	}
	if r.Partition != PartitionNone && (r.Partition < 0 || r.Partition >= t.info.Partitions) {
		return nil, Invalid("invalid partition")
	}
	detail := TopicDetail{TopicInfo: t.info, PartitionStats: []PartitionStats{}}
	for i := range t.info.Partitions {
		if r.Partition == PartitionNone || r.Partition == i {
			detail.PartitionStats = append(detail.PartitionStats, n.partitionStats(t, i))
		}
	}
	return detail, nil
}

func (n *Node) partitionStats(t *topic, index int) PartitionStats {
	stats := PartitionStats{Index: index, OwnerNode: n.cfg.NodeID}
	p := n.partitionOf(t, index)
	log, err := n.openLog(t, p)
	if err != nil {
		return stats
	}
	s := log.Stats()
	stats.Available = true
	stats.Segments, stats.SizeBytes = s.Segments, s.SizeBytes
	stats.OldestOffset, stats.NextOffset, stats.HighWatermark = s.Oldest, s.HWM, s.HWM
	stats.OldestSegmentAt = s.OldestSegmentTimeMs / 1000
	stats.Committed, stats.InFlight = p.leases.Committed(), p.leases.InFlight()
	return stats
}

func (n *Node) alterTopic(r AlterTopic) (any, error) {
	t, err := n.topic(r.Name)
	if err != nil {
		return nil, err
	}
	info, err := n.alteredInfo(t.info, r)
	if err != nil {
		return nil, err
	}
	old := t.info
	n.catalog.put(info)
	if err := n.catalog.save(n.fs); err != nil {
		n.catalog.put(old)
		return nil, Internal("alter topic failed: %v", err)
	}
	for i := range old.Partitions {
		if p := n.partitions[partitionKey{info.Name, i}]; p != nil && p.leases != nil {
			p.leases.SetConfig(n.leaseConfig(t))
		}
	}
	n.wake(info.Name) // more partitions or larger caps may serve parked polls
	return info, nil
}

func (n *Node) alteredInfo(info TopicInfo, r AlterTopic) (TopicInfo, error) {
	if r.Partitions == nil && r.RetentionMs == nil && r.VisibilityTimeoutMs == nil && r.InFlightMax == nil && r.AckedAheadMax == nil {
		return info, Invalid("nothing to change: set at least one of partitions, retention_ms, visibility_timeout_ms, max_in_flight_per_partition, max_acked_ahead_per_partition")
	}
	if r.Partitions != nil {
		if *r.Partitions <= info.Partitions {
			return info, Invalid("partitions can only grow: have %d, asked %d", info.Partitions, *r.Partitions)
		}
		info.Partitions = *r.Partitions
	}
	setIf(&info.RetentionMs, r.RetentionMs)
	setIf(&info.VisibilityTimeoutMs, r.VisibilityTimeoutMs)
	setIf(&info.InFlightMax, r.InFlightMax)
	setIf(&info.AckedAheadMax, r.AckedAheadMax)
	if err := n.applyDefaults(&info); err != nil {
		return info, err
	}
	return info, nil
}

func setIf[T any](field *T, value *T) {
	if value != nil {
		*field = *value
	}
}

func (n *Node) deleteTopic(r DeleteTopic) (any, error) {
	t, err := n.topic(r.Name)
	if err != nil {
		return nil, err
	}
	n.catalog.remove(r.Name)
	if err := n.catalog.save(n.fs); err != nil {
		n.catalog.put(t.info)
		return nil, Internal("delete topic failed: %v", err)
	}
	n.dropTopicState(t)
	// Metadata is gone; leftover data is reclaimed by the startup sweep if
	// this removal fails or a crash interrupts it.
	if err := n.fs.RemoveAll(topicsDir + "/" + r.Name); err != nil {
		n.observer.Event("topic-purge-failed", fmt.Sprintf("%s: %v", r.Name, err))
	}
	return nil, nil
}

// dropTopicState forgets every partition of a deleted topic: open logs are
// closed, unsynced produces answered 404, parked polls answered 404.
func (n *Node) dropTopicState(t *topic) {
	gone := NotFound("topic %q not found", t.info.Name)
	for i := range t.info.Partitions {
		key := partitionKey{t.info.Name, i}
		p := n.partitions[key]
		if p == nil {
			continue
		}
		n.failDependents(p, gone)
		if err := n.store.Close(p.dir); err != nil && !isClosed(err) {
			n.observer.Event("log-close-failed", fmt.Sprintf("%s: %v", p.dir, err))
		}
		delete(n.partitions, key)
	}
	for _, id := range n.waiters.removeTopic(t.info.Name) {
		n.reply(id, nil, gone)
	}
}

func isClosed(err error) bool { return errors.Is(err, storage.ErrClosed) }
