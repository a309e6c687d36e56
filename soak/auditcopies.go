package soak

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
)

// ChildAudit is what the replay found in the fan-out child: every record
// of the hot topic answered 202 must be there at least once, with its
// key, and nothing else may be (a record of the child is identified by
// its payload).
type ChildAudit struct {
	// Expected counts the hot topic's acknowledged records; Copied those
	// found in the child.
	Expected, Copied int
	// Missing lists the first acknowledged records not found;
	// MissingCount counts them all.
	Missing      []string
	MissingCount int
	// RecordsRead counts the child's records; DuplicatedIDs the ids found
	// more than once (copies are at least once).
	RecordsRead, DuplicatedIDs int
	// KeyMismatches counts copies whose key is not the parent record's.
	KeyMismatches int
	// Unexpected counts the child's records that are no soak record or
	// whose id the hot topic does not hold; Anomalies quotes the first
	// mismatches and unexpected records.
	Unexpected int
	Anomalies  []string
	// Unreadable lists the child's offsets below a high watermark that
	// replay could not read.
	Unreadable []string
}

// DeadLetterAudit is what the replay found in the dead-letter topic:
// every record that had to reach it (poison, or seen exhausted and not
// acked since) is there with a dead_letter origin naming its place in
// the hot topic, or is still in the hot topic unacked; nothing else is.
type DeadLetterAudit struct {
	// Expected counts the records that had to reach the topic, Poison and
	// Exhausted of them by cause; DeadLettered those found there.
	Expected, Poison, Exhausted, DeadLettered int
	// InSource counts expected records not found but delivered from the
	// hot topic after the load stopped (still there, unacked);
	// AckedAfterRestart the records seen exhausted that a later ack took
	// (a restart started their count over; not expected).
	InSource, AckedAfterRestart int
	// Missing lists the first expected records found in neither place;
	// MissingCount counts them all.
	Missing      []string
	MissingCount int
	// RecordsRead counts the dead letters read; OriginsMatched those whose
	// dead_letter names a place of the hot topic holding the same record
	// (id and key) with at least hotMaxDeliveries deliveries;
	// OriginMismatches the others; DuplicatedIDs counts the ids found
	// more than once (copies are at least once).
	RecordsRead, OriginsMatched, OriginMismatches, DuplicatedIDs int
	// Unexpected counts dead letters that are no soak record, or a record
	// neither poison nor received at the limit; Anomalies quotes the
	// first.
	Unexpected int
	Anomalies  []string
	Unreadable []string
}

// auditChild compares the child's records with the hot topic's.
func auditChild(stored topicLogs, acknowledged map[string]ledgerEntry) ChildAudit {
	parent, child := stored.merged(hotTopic), stored.merged(childTopic)
	audit := ChildAudit{RecordsRead: child.recordsRead, Unexpected: child.foreignCount, Anomalies: slices.Clone(child.foreign),
		Unreadable: child.unreadable}
	for _, id := range slices.Sorted(maps.Keys(acknowledged)) {
		entry := acknowledged[id]
		if entry.Topic != hotTopic {
			continue
		}
		audit.Expected++
		if len(child.offsetsOf[id]) > 0 {
			audit.Copied++
			continue
		}
		audit.MissingCount++
		if len(audit.Missing) < missingShownMax {
			audit.Missing = append(audit.Missing, fmt.Sprintf("%s (202 %s)", id, describeEntry(entry)))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(child.offsetsOf)) {
		copies := child.offsetsOf[id]
		if len(copies) > 1 {
			audit.DuplicatedIDs++
		}
		originals := parent.offsetsOf[id]
		if len(originals) == 0 {
			audit.Unexpected++
			audit.note(fmt.Sprintf("%s: %s is not in %s", copies[0], id, hotTopic))
			continue
		}
		for _, at := range copies {
			if child.keyAt[at] != parent.keyAt[originals[0]] {
				audit.KeyMismatches++
				audit.note(fmt.Sprintf("%s: %s has key %q, in %s %q", at, id, child.keyAt[at], originals[0], parent.keyAt[originals[0]]))
			}
		}
	}
	return audit
}

func (a *ChildAudit) note(text string) {
	if len(a.Anomalies) < missingShownMax {
		a.Anomalies = append(a.Anomalies, text)
	}
}

// auditDeadLetters compares the dead-letter topic with the records that
// had to reach it; drainBeganMs tells a record still delivered from the
// hot topic after the load stopped.
func auditDeadLetters(stored topicLogs, acknowledged map[string]ledgerEntry, copies copySnapshot, drainBeganMs int64) DeadLetterAudit {
	parent, dead := stored.merged(hotTopic), stored.merged(deadTopic)
	expected := copies.deadLetterExpected(acknowledged)
	audit := DeadLetterAudit{Expected: len(expected), RecordsRead: dead.recordsRead, Unexpected: dead.foreignCount,
		Anomalies: slices.Clone(dead.foreign), Unreadable: dead.unreadable, AckedAfterRestart: copies.ackedAfterExhaustion()}
	for _, id := range slices.Sorted(maps.Keys(expected)) {
		if expected[id] == causePoison {
			audit.Poison++
		} else {
			audit.Exhausted++
		}
		switch last, delivered := copies.lastDeliveredMs[id]; {
		case len(dead.offsetsOf[id]) > 0:
			audit.DeadLettered++
		case delivered && last >= drainBeganMs:
			audit.InSource++
		default:
			audit.MissingCount++
			if len(audit.Missing) < missingShownMax {
				audit.Missing = append(audit.Missing, fmt.Sprintf("%s (202 %s; last delivered at %dms, delivered %t)",
					id, describeEntry(acknowledged[id]), last, delivered))
			}
		}
	}
	for _, offsets := range dead.offsetsOf {
		if len(offsets) > 1 {
			audit.DuplicatedIDs++
		}
	}
	for _, at := range slices.SortedFunc(maps.Keys(dead.idAt), comparePlacements) {
		id := dead.idAt[at]
		if !poisonous(id) && !copies.atLimit[id] {
			audit.Unexpected++
			audit.note(fmt.Sprintf("%s: %s is not poison and no consumer received it at delivery %d", at, id, hotMaxDeliveries))
		}
		if why := originMismatch(at, id, dead, parent); why != "" {
			audit.OriginMismatches++
			audit.note(fmt.Sprintf("%s: %s: %s", at, id, why))
			continue
		}
		audit.OriginsMatched++
	}
	return audit
}

// originMismatch says what is wrong with the dead_letter origin of the
// dead letter at (record id), or "" when it names a place of the hot
// topic holding the same record with enough deliveries.
func originMismatch(at placement, id string, dead, parent *storedLogs) string {
	origin, ok := dead.originAt[at]
	if !ok {
		return "no dead_letter origin"
	}
	source := placement{topic: origin.Topic, partition: origin.Partition, offset: origin.Offset}
	switch {
	case origin.Topic != hotTopic:
		return fmt.Sprintf("origin topic %q, want %q", origin.Topic, hotTopic)
	case parent.idAt[source] != id:
		return fmt.Sprintf("origin %s holds %q", source, parent.idAt[source])
	case parent.keyAt[source] != dead.keyAt[at]:
		return fmt.Sprintf("key %q, origin %s has %q", dead.keyAt[at], source, parent.keyAt[source])
	case origin.DeliveryCount < hotMaxDeliveries:
		return fmt.Sprintf("origin delivery_count %d, below max_deliveries %d", origin.DeliveryCount, hotMaxDeliveries)
	}
	return ""
}

func (a *DeadLetterAudit) note(text string) {
	if len(a.Anomalies) < missingShownMax {
		a.Anomalies = append(a.Anomalies, text)
	}
}

func comparePlacements(a, b placement) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition), cmp.Compare(a.offset, b.offset))
}
