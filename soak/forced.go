package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"narad/client"
	"narad/proc"
)

// Forced recovery (docs/architecture.md#force-promote): a destination
// whose source died promotes its copy after ForcePromoteAfter only if the
// copy holds all of a final state of the source: one the source reported
// frozen (it accepts nothing after it), while the destination is still
// before finalize (a destination in finalize completes by itself, or
// waits for the source when it lacks the tail). A destination learns a
// frozen state before finalize only when its session starts again after
// the source froze. So the step is a double failure, with the instants
// found by stopping processes (SIGSTOP: a stall, like a long pause of the
// process) and reading the progress the destination reports meanwhile:
//
//  1. It decommissions a node that owns a partition of the cold topic
//     (larger than the CatchUp lag bound and no longer written, so the
//     copy ends complete), and watches the moves off it. When the cold
//     move's destination reports finalize (the source froze for it), the
//     destination is stopped; if the flip has not happened, it is killed
//     (SIGKILL) and restarted, and its new session copies the frozen
//     source from the start.
//  2. It then stops the source again and again and reads the
//     destination's progress while the source is stopped. Once the copy
//     is complete and the new freeze request not yet answered, it kills
//     the stopped source; otherwise it lets the source run a little
//     (SIGCONT) and looks again.
//
// The destination must then promote its copy after the source is
// declared dead and ForcePromoteAfter has passed; the source is restarted
// and finishes its drain, and the audit checks that the promoted copy
// lost nothing.

// ForcedOutcome is what one forced-recovery step did.
type ForcedOutcome struct {
	// Caught is set when a source was killed with a complete copy of its
	// frozen state at the restarted destination; the other fields are
	// then set. Reason says why not otherwise.
	Caught              bool
	Reason              string
	Topic               string
	Partition           int
	Source, Destination string
	Phase               string
	CopiedBytes         int64
	// DeclaredDead and Promoted are the times from the kill until the
	// source was listed dead and until the destination owned the
	// partition (0: did not happen).
	DeclaredDead, Promoted time.Duration
}

// interruption is a source killed mid-move, or why none was.
type interruption struct {
	source   *nodeProcess
	move     client.Move
	killedAt time.Time
	reason   string
}

// forcedRecovery runs the double failure above, waits for the
// force-promotion, restarts the source and lets the decommission finish.
func (r *run) forcedRecovery(ctx context.Context) (string, error) {
	source, skipped := r.coldOwnerVictim(ctx)
	if source == nil {
		return skipped, nil
	}
	began, wasLeader, err := r.startDecommission(ctx, source)
	if err != nil {
		return "", err
	}
	victim, reached, err := r.interruptColdMove(ctx, source)
	if err != nil || !reached {
		r.report.Forced = append(r.report.Forced, ForcedOutcome{Source: source.id, Reason: victim.reason})
		note, finishErr := r.finishDecommission(ctx, source, began, wasLeader)
		return fmt.Sprintf("not reached (%s); %s", victim.reason, note), errors.Join(err, finishErr)
	}
	promoted, err := r.awaitForcePromote(ctx, victim)
	if err != nil {
		return promoted, errors.Join(err, r.restart(ctx, source))
	}
	note, err := r.finishAfterPromotion(ctx, source, began, wasLeader)
	return promoted + "; " + note, err
}

// finishAfterPromotion ends the decommission of a source killed mid-move:
// if the promotion left it owning nothing, the leader removes it from the
// voters while it is down (a node removed so must not come back, and its
// decommission is complete); otherwise it is restarted to shed the rest.
func (r *run) finishAfterPromotion(ctx context.Context, source *nodeProcess, began time.Time, wasLeader bool) (string, error) {
	members, err := r.cluster.clusterMembers(ctx)
	if err != nil {
		return "", err
	}
	if !ownsNothing(members, source.id) {
		// A removal that lands while it restarts leaves it never ready.
		if err := r.restart(ctx, source); err != nil && !r.voterRemoved(source.id) {
			return "", err
		}
		return r.finishDecommission(ctx, source, began, wasLeader)
	}
	if err := r.awaitDrained(ctx, source.id); err != nil {
		return "", err
	}
	r.cluster.retire(source.id)
	placement, err := r.settle(ctx)
	return fmt.Sprintf("decommissioned %s (leader %t) while it was down: drained by the promotion and removed from the voters in %s; placement %v",
		source.id, wasLeader, time.Since(began).Round(time.Millisecond), placement), err
}

// coldOwnerVictim draws a running member that owns a partition of the
// cold topic (the only moves the step can interrupt), or says why there
// is none.
func (r *run) coldOwnerVictim(ctx context.Context) (*nodeProcess, string) {
	if members := r.cluster.running(); len(members) <= votersMin {
		return nil, fmt.Sprintf("skipped: only %d members, the voter set keeps %d", len(members), votersMin)
	}
	stats, err := availableStats(ctx, r.cluster, coldTopic)
	if err != nil {
		return nil, fmt.Sprintf("skipped: %v", err)
	}
	var owners []*nodeProcess
	for _, s := range stats {
		if n := r.cluster.node(s.OwnerNode); n != nil && n.Running() && !slices.Contains(owners, n) {
			owners = append(owners, n)
		}
	}
	if len(owners) == 0 {
		return nil, fmt.Sprintf("skipped: no running member owns a partition of %s", coldTopic)
	}
	return owners[r.rng.IntN(len(owners))], ""
}

// interruptColdMove runs both stages on the moves of the cold topic off
// source, one move after another, until one reached the kill of the
// source or none is left. It reports why not in the interruption.
func (r *run) interruptColdMove(ctx context.Context, source *nodeProcess) (interruption, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, forcedProbeTimeout)
	defer cancel()
	tried := map[int]bool{}
	why := interruption{reason: fmt.Sprintf("no move of %s off %s reached finalize while watched", coldTopic, source.id)}
	for sawMoves := false; ctx.Err() == nil; {
		observer := r.observerOtherThan(source)
		if observer == nil {
			return why, false, errors.New("no serving node besides the source to watch the moves")
		}
		moves, err := observer.client.ClusterMoves(ctx)
		if err != nil {
			_ = proc.SleepContext(ctx, pollInterval)
			continue
		}
		if candidate, found := coldMoveOff(moves, source.id, tried); found {
			tried[candidate.Partition] = true
			victim, killed, err := r.interruptMove(ctx, source, candidate)
			if killed || err != nil {
				return victim, killed, err
			}
			why = victim
			continue
		}
		off := movesOff(moves, source.id)
		if off == 0 && sawMoves {
			break
		}
		sawMoves = sawMoves || off > 0
		_ = proc.SleepContext(ctx, forcedPollInterval)
	}
	return why, false, nil
}

// interruptMove runs both stages on one move whose destination reported
// finalize.
func (r *run) interruptMove(ctx context.Context, source *nodeProcess, move client.Move) (interruption, bool, error) {
	destination := r.cluster.node(move.To)
	if destination == nil || !destination.Running() {
		return interruption{reason: "the destination was not running"}, false, nil
	}
	restarted, why, err := r.restartDestinationInFinalize(ctx, source, destination, move)
	if why != "" {
		r.logf("forced recovery: %s", why)
	}
	if !restarted || err != nil {
		return interruption{reason: why}, false, err
	}
	current, killed, err := r.stopWhenCopied(ctx, r.observerOtherThan(source, destination), source, move)
	err = errors.Join(err, destination.WaitReady(ctx, readyTimeout))
	if !killed {
		return interruption{reason: fmt.Sprintf("after %s restarted, the copy of %s/p%d was never seen complete before the freeze (last phase %q)",
			destination.id, move.Topic, move.Partition, current.Phase)}, false, err
	}
	r.logf("forced recovery: killed %s (-9) with the restarted %s's copy of %s/p%d complete (%d bytes, phase %s)",
		source.id, destination.id, move.Topic, move.Partition, current.BytesCopied, current.Phase)
	return interruption{source: source, move: current, killedAt: time.Now()}, true, err
}

// restartDestinationInFinalize stops the destination of move; if the
// source froze for the move and the move has not flipped, it kills the
// destination, stops the source (so that the new session moves only as
// fast as stopWhenCopied lets it) and starts the destination again: the
// source stays frozen for the move, so the new session copies a frozen
// state. It reports whether it restarted the destination, and why not
// otherwise.
func (r *run) restartDestinationInFinalize(ctx context.Context, source, destination *nodeProcess, move client.Move) (bool, string, error) {
	if err := destination.Pause(); err != nil {
		return false, "the destination was gone", nil
	}
	_ = proc.SleepContext(ctx, forcedStopSettle) // a freeze request already sent is answered meanwhile
	if !frozenFor(source.logPath, move) {
		return false, fmt.Sprintf("%s had not frozen %s/p%d when %s was stopped in %s", source.id, move.Topic, move.Partition,
			destination.id, move.Phase), destination.Resume()
	}
	owner, err := r.ownerSeenBy(ctx, r.observerOtherThan(source, destination), move)
	if err != nil || owner != source.id {
		return false, fmt.Sprintf("%s/p%d flipped to %s before its destination could be stopped (owner %q, %v)",
			move.Topic, move.Partition, destination.id, owner, err), destination.Resume()
	}
	if err := destination.Kill(); err != nil {
		return false, "", err
	}
	r.logf("forced recovery: killed the destination %s (-9) of %s/p%d in %s (%s froze for it); restarting it",
		destination.id, move.Topic, move.Partition, move.Phase, source.id)
	if err := source.Pause(); err != nil {
		return false, "the source was gone", errors.Join(err, r.restart(ctx, destination))
	}
	if err := destination.Start(); err != nil {
		return false, "", errors.Join(err, source.Resume())
	}
	return true, "", nil
}

// observerOtherThan returns a serving member that is none of excluded.
func (r *run) observerOtherThan(excluded ...*nodeProcess) *nodeProcess {
	for _, candidate := range r.cluster.serving() {
		if !slices.Contains(excluded, candidate) {
			return candidate
		}
	}
	return nil
}

// coldMoveOff returns a move of the cold topic off source, not tried yet,
// whose destination asked for the freeze (handoff) or has it (finalize).
func coldMoveOff(moves []client.Move, source string, tried map[int]bool) (client.Move, bool) {
	for _, m := range moves {
		if m.From == source && m.Topic == coldTopic && !tried[m.Partition] && (m.Phase == "handoff" || m.Phase == "finalize") {
			return m, true
		}
	}
	return client.Move{}, false
}

// frozenFor reports whether the source's log shows that it froze move's
// partition for move's destination since the move started (the start is
// the leader's clock; clockSlack covers the difference).
func frozenFor(sourceLog string, move client.Move) bool {
	const clockSlack = time.Second
	detail := fmt.Sprintf("topics/%s/p%05d for the move to %s", move.Topic, move.Partition, move.To)
	return logMentionsSince(sourceLog, "partition-frozen", detail, time.UnixMilli(move.StartedAtMs).Add(-clockSlack))
}

func movesOff(moves []client.Move, source string) int {
	count := 0
	for _, m := range moves {
		if m.From == source {
			count++
		}
	}
	return count
}

// copyComplete reports whether the destination holds every byte of the
// source's last reported state and its freeze request is not answered
// yet (in finalize a dead source no longer matters: the move completes).
func copyComplete(m client.Move) bool {
	return (m.Phase == "catchup" || m.Phase == "handoff") && m.BytesCopied > 0 && m.BytesCopied == m.BytesTotal
}

// stopWhenCopied stops and resumes source until the destination's copy
// of move is complete while the source is stopped, then kills it. It
// gives up when the move reaches finalize or ends.
func (r *run) stopWhenCopied(ctx context.Context, observer, source *nodeProcess, move client.Move) (client.Move, bool, error) {
	if observer == nil {
		return client.Move{}, false, errors.Join(errors.New("no serving node to watch the move"), source.Resume())
	}
	for range forcedStopsPerMoveMax {
		if err := source.Pause(); err != nil {
			return client.Move{}, false, nil // the source is gone (a crash is reported by the step)
		}
		_ = proc.SleepContext(ctx, forcedStopSettle)
		current, present, err := progressOf(ctx, observer, move)
		switch {
		case err == nil && present && copyComplete(current):
			return current, true, source.Kill()
		case err == nil && (!present || current.Phase == "finalize" || current.Phase == "flip"):
			return current, false, source.Resume()
		}
		if err := source.Resume(); err != nil {
			return current, false, err
		}
		_ = proc.SleepContext(ctx, forcedRunSlice)
	}
	return client.Move{}, false, nil
}

// progressOf reads the progress of move as observer lists it (with the
// progress its destination reports).
func progressOf(ctx context.Context, observer *nodeProcess, move client.Move) (client.Move, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	moves, err := observer.client.ClusterMoves(ctx)
	if err != nil {
		return client.Move{}, false, err
	}
	for _, m := range moves {
		if m.Topic == move.Topic && m.Partition == move.Partition && m.From == move.From && m.To == move.To {
			return m, true, nil
		}
	}
	return client.Move{}, false, nil
}

// awaitForcePromote waits until the killed source is declared dead and
// the destination owns the partition, within the nodes' delays plus
// forcedPromoteSlack.
func (r *run) awaitForcePromote(ctx context.Context, victim interruption) (string, error) {
	limit := r.timings.memberDeadAfter + r.timings.forcePromoteAfter + forcedPromoteSlack
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	outcome := ForcedOutcome{Caught: true, Topic: victim.move.Topic, Partition: victim.move.Partition, Source: victim.source.id,
		Destination: victim.move.To, Phase: victim.move.Phase, CopiedBytes: victim.move.BytesCopied}
	defer func() { r.report.Forced = append(r.report.Forced, outcome) }()
	for {
		if outcome.DeclaredDead == 0 && r.memberDead(ctx, victim.source.id) {
			outcome.DeclaredDead = time.Since(victim.killedAt)
		}
		if owner, err := r.ownerOf(ctx, victim.move); err == nil && owner == victim.move.To {
			outcome.Promoted = time.Since(victim.killedAt)
			return fmt.Sprintf("killed %s (-9) with the copy of %s/p%d complete at %s (%d bytes, phase %s); declared dead after %s; force-promoted after %s",
				outcome.Source, outcome.Topic, outcome.Partition, outcome.Destination, outcome.CopiedBytes, outcome.Phase,
				outcome.DeclaredDead.Round(time.Second), outcome.Promoted.Round(time.Second)), nil
		}
		if proc.SleepContext(ctx, pollInterval*5) != nil {
			return "", fmt.Errorf("%s/p%d was not force-promoted to %s within %s of killing its source %s with the copy complete "+
				"(%d bytes, phase %s; declared dead after %s)", outcome.Topic, outcome.Partition, outcome.Destination, limit,
				outcome.Source, outcome.CopiedBytes, outcome.Phase, outcome.DeclaredDead.Round(time.Second))
		}
	}
}

func (r *run) memberDead(ctx context.Context, id string) bool {
	members, err := r.cluster.clusterMembers(ctx)
	if err != nil {
		return false
	}
	for _, m := range members {
		if m.ID == id {
			return m.Status == "dead"
		}
	}
	return false
}

// ownerSeenBy reads the owner of move's partition from observer's
// replica.
func (r *run) ownerSeenBy(ctx context.Context, observer *nodeProcess, move client.Move) (string, error) {
	if observer == nil {
		return "", ErrNoNode
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	partition := move.Partition
	described, err := observer.client.GetTopic(ctx, move.Topic, &partition)
	if err != nil {
		return "", err
	}
	if len(described.PartitionStats) != 1 {
		return "", fmt.Errorf("stats of %s/p%d: %d entries", move.Topic, partition, len(described.PartitionStats))
	}
	return described.PartitionStats[0].OwnerNode, nil
}

// ownerOf reads the owner of move's partition.
func (r *run) ownerOf(ctx context.Context, move client.Move) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	partition := move.Partition
	var described client.Topic
	err := r.cluster.control(ctx, func(ctx context.Context, c *client.Client) error {
		var err error
		described, err = c.GetTopic(ctx, move.Topic, &partition)
		return err
	})
	if err != nil {
		return "", err
	}
	if len(described.PartitionStats) != 1 {
		return "", fmt.Errorf("stats of %s/p%d: %d entries", move.Topic, partition, len(described.PartitionStats))
	}
	return described.PartitionStats[0].OwnerNode, nil
}
