package soak

import (
	"fmt"
	"maps"
	"slices"
)

// judgeCopies turns the child's and the dead-letter topic's findings into
// failures.
func (report *Report) judgeCopies() {
	child, dead := report.Audit.Child, report.Audit.DeadLetters
	if child.MissingCount > 0 {
		report.fail("%d of %d records answered 202 in %s never reached %s", child.MissingCount, child.Expected, hotTopic, childTopic)
	}
	if child.KeyMismatches > 0 || child.Unexpected > 0 || len(child.Unreadable) > 0 {
		report.fail("%s holds %d copies with another key than the parent's and %d unexpected records; %d offsets unreadable",
			childTopic, child.KeyMismatches, child.Unexpected, len(child.Unreadable))
	}
	if dead.MissingCount > 0 {
		report.fail("%d of %d records that exhausted their deliveries are neither in %s nor in %s", dead.MissingCount, dead.Expected,
			deadTopic, hotTopic)
	}
	if dead.OriginMismatches > 0 || dead.Unexpected > 0 || len(dead.Unreadable) > 0 {
		report.fail("%s holds %d dead letters whose origin does not match and %d unexpected records; %d offsets unreadable",
			deadTopic, dead.OriginMismatches, dead.Unexpected, len(dead.Unreadable))
	}
}

// topicAuditLines render the audit per topic: the produced topics'
// durability, the child's copies and the dead letters.
func (report *Report) topicAuditLines() []string {
	a := report.Audit
	var lines []string
	for _, topic := range slices.Sorted(maps.Keys(a.AcknowledgedIn)) {
		lines = append(lines, fmt.Sprintf("audit %s: %d of %d records durable", topic, a.DurableIn[topic], a.AcknowledgedIn[topic]))
	}
	c := a.Child
	lines = append(lines, fmt.Sprintf("audit %s (fan-out child of %s): %d of %d acknowledged records of %s copied; %d records read, "+
		"%d ids copied more than once, %d key mismatches, %d unexpected", childTopic, hotTopic, c.Copied, c.Expected, hotTopic,
		c.RecordsRead, c.DuplicatedIDs, c.KeyMismatches, c.Unexpected))
	for _, m := range c.Missing {
		lines = append(lines, "  not copied "+m)
	}
	d := a.DeadLetters
	lines = append(lines, fmt.Sprintf("audit %s (dead letters of %s, max_deliveries %d): %d of %d exhausted records dead-lettered "+
		"(%d poison, %d exhausted by a failed ack or a lapsed lease), %d still in %s unacked; %d records read, %d of them with a "+
		"matching origin, %d ids dead-lettered more than once, %d unexpected; %d records seen exhausted were acked later "+
		"(a restart started their count over)", deadTopic, hotTopic, hotMaxDeliveries, d.DeadLettered, d.Expected, d.Poison,
		d.Exhausted, d.InSource, hotTopic, d.RecordsRead, d.OriginsMatched, d.DuplicatedIDs, d.Unexpected, d.AckedAfterRestart))
	for _, m := range d.Missing {
		lines = append(lines, "  not dead-lettered "+m)
	}
	for _, shown := range append(slices.Clone(c.Anomalies), d.Anomalies...) {
		lines = append(lines, "  anomaly "+shown)
	}
	for _, shown := range append(slices.Clone(c.Unreadable), d.Unreadable...) {
		lines = append(lines, "  unreadable "+shown)
	}
	return lines
}
