package soak

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

	"narad/proc"
)

// drainProgressInterval is how often the final drain says what it waits
// for; undeliveredShownMax bounds the records it names.
const (
	drainProgressInterval = 10 * time.Second
	undeliveredShownMax   = 5
)

// finish ends the run: the consumers drain what was acknowledged, the
// placement settles, the audit replays every partition, and the nodes'
// logs are summarized. Every shortfall becomes a failure of the report.
func (r *run) finish(ctx context.Context) {
	drainBeganMs := r.ledger.sinceMs()
	r.drainDeliveries(ctx)
	if err := r.restartStopped(ctx); err != nil {
		r.report.fail("restarting the nodes before the audit: %v", err)
	}
	if placement, err := r.settle(ctx); err != nil {
		r.report.fail("before the audit: %v", err)
	} else {
		r.report.Placement = placement
	}
	r.logf("audit: replaying every partition")
	audit, err := runAudit(ctx, r.cluster, r.ledger, drainBeganMs)
	if err != nil {
		r.report.fail("audit could not run: %v", err)
	}
	r.report.Audit = audit
	r.stopConsumers()
	r.load.consumers.Wait()
	r.collect()
}

// drainDeliveries lets the consumers run until they have seen every
// acknowledged record, its copy in the child, and every record that had
// to reach the dead-letter topic there, within deliveryDrainTimeout.
func (r *run) drainDeliveries(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, deliveryDrainTimeout)
	defer cancel()
	began, lastShown := time.Now(), time.Now()
	for {
		undelivered := r.ledger.undelivered()
		uncopied, undeadLettered := r.ledger.waitingCopies()
		if len(undelivered)+len(uncopied)+len(undeadLettered) == 0 {
			break
		}
		if time.Since(lastShown) >= drainProgressInterval {
			lastShown = time.Now()
			r.showDrain(ctx, undelivered, uncopied, undeadLettered)
		}
		if proc.SleepContext(ctx, pollInterval) != nil {
			break
		}
	}
	r.report.DrainTook = time.Since(began)
}

// showDrain says what the drain still waits for.
func (r *run) showDrain(ctx context.Context, undelivered, uncopied, undeadLettered []string) {
	if len(undelivered) > 0 {
		r.logf("drain: %d acknowledged records not consumed yet; %s", len(undelivered), r.describeUndelivered(ctx, undelivered))
	}
	if len(uncopied)+len(undeadLettered) > 0 {
		r.logf("drain: %d records of %s not consumed from %s yet (%s), %d not from %s yet (%s)", len(uncopied), hotTopic, childTopic,
			firstIDs(uncopied), len(undeadLettered), deadTopic, firstIDs(undeadLettered))
	}
}

func firstIDs(ids []string) string {
	return strings.Join(ids[:min(len(ids), undeliveredShownMax)], ", ")
}

// describeUndelivered says where the first undelivered records are and
// what their partitions report (high watermark, committed offset, leases).
func (r *run) describeUndelivered(ctx context.Context, ids []string) string {
	_, acknowledged := r.ledger.snapshot()
	var parts []string
	for _, id := range ids[:min(len(ids), undeliveredShownMax)] {
		e := acknowledged[id]
		parts = append(parts, fmt.Sprintf("%s at %s/p%d@%d (%s)", id, e.Topic, e.Partition, e.Offset, r.partitionQueue(ctx, e.Topic, e.Partition)))
	}
	return strings.Join(parts, "; ")
}

// partitionQueue describes a partition's queue state.
func (r *run) partitionQueue(ctx context.Context, topic string, partition int) string {
	running := r.cluster.serving()
	if len(running) == 0 {
		return "no node serving"
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	described, err := running[0].client.GetTopic(ctx, topic, &partition)
	if err != nil || len(described.PartitionStats) != 1 {
		return fmt.Sprintf("stats unavailable: %v", err)
	}
	s := described.PartitionStats[0]
	return fmt.Sprintf("owner %s, hwm %d, next offset %d", s.OwnerNode, s.HighWatermark, s.NextOffset)
}

// collect gathers the delivery counts, the log summary and the failures.
func (r *run) collect() {
	report := r.report
	report.Load = r.load.snapshot()
	report.Attempted = len(r.attemptedIDs())
	report.Delivered, report.Deliveries, report.Redelivered, report.UnknownDeliveries = r.ledger.deliveryCounts()
	report.Undelivered = r.ledger.undelivered()
	report.LoadProblems = r.load.takeProblems()
	report.Refusals = r.load.refusalQuotes()
	if count := report.Load.Refused[http.StatusMisdirectedRequest]; count > 0 {
		report.Notes = append(report.Notes, fmt.Sprintf("finding: %d produce requests without a pinned partition were answered 421 "+
			"(a node's stale view of a moved partition surfaced to the client; the contract says 503, or reroute)", count))
	}
	if err := r.ledger.close(); err != nil {
		report.fail("ledger file: %v", err)
	}
	var paths []string
	for _, n := range r.cluster.allNodes() {
		paths = append(paths, n.logPath)
	}
	logs, err := summarizeLogs(paths)
	if err != nil {
		report.fail("reading the node logs: %v", err)
	}
	report.Logs = logs
	report.judge(r.opts.Scenario)
}

func (r *run) attemptedIDs() map[string]string {
	attempted, _ := r.ledger.snapshot()
	return attempted
}

// judge turns the findings into failures.
func (report *Report) judge(scenario string) {
	for _, s := range report.Steps {
		if s.Err != nil {
			report.fail("step %s: %v", s.Name, s.Err)
		}
	}
	audit := report.Audit
	if len(audit.Missing) > 0 {
		report.fail("%d of %d records answered 202 are missing from the partitions", len(audit.Missing), audit.Acknowledged)
	}
	if audit.Misplaced > 0 {
		report.fail("%d records were found at another offset than their 202 named", audit.Misplaced)
	}
	if audit.Foreign > 0 || len(audit.Unreadable) > 0 || report.UnknownDeliveries > 0 {
		report.fail("%d stored records are not the soak's, %d offsets below a high watermark are unreadable, %d consumed payloads are unknown",
			audit.Foreign, len(audit.Unreadable), report.UnknownDeliveries)
	}
	if len(report.Undelivered) > 0 {
		report.fail("%d acknowledged records were never consumed within %s of the load's end", len(report.Undelivered), deliveryDrainTimeout)
	}
	report.judgeCopies()
	if len(report.Logs.Panics) > 0 {
		report.fail("node logs hold %d panics or fatal errors", len(report.Logs.Panics))
	}
	if len(report.LoadProblems) > 0 {
		report.fail("the load saw %d unexpected answers", len(report.LoadProblems))
	}
	if scenario == ScenarioDecommission && (report.Load.refusedTotal() > 0 || report.Load.Unanswered > 0) {
		report.fail("a clean decommission refused %d produce requests and left %d without an answer (want 0)",
			report.Load.refusedTotal(), report.Load.Unanswered)
	}
}

func (report *Report) fail(format string, args ...any) {
	report.Failures = append(report.Failures, fmt.Sprintf(format, args...))
}
