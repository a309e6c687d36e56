package soak

import (
	"context"
	"errors"
	"fmt"
	"time"

	"narad/proc"
)

// pacing is how long the load runs between the faults.
type pacing struct {
	// warmup is the load before the first step; cooldown the load after
	// the last one.
	warmup, cooldown time.Duration
	// pauseMin and pauseMax bound the load between two steps.
	pauseMin, pauseMax time.Duration
	// downtimeMin and downtimeMax bound how long a killed node stays down;
	// longDowntimePercent of the kills instead outlast the member
	// dead-after, so the node is declared dead and comes back.
	downtimeMin, downtimeMax time.Duration
	longDowntimePercent      int
}

// pacingFor returns the short pacing of the CI version (duration 0) or
// the pacing of a long run.
func pacingFor(duration time.Duration) pacing {
	if duration == 0 {
		return pacing{warmup: 3 * time.Second, cooldown: 2 * time.Second, pauseMin: time.Second, pauseMax: 2 * time.Second,
			downtimeMin: 3 * time.Second, downtimeMax: 5 * time.Second}
	}
	return pacing{warmup: 15 * time.Second, cooldown: 15 * time.Second, pauseMin: 5 * time.Second, pauseMax: 20 * time.Second,
		downtimeMin: 3 * time.Second, downtimeMax: 15 * time.Second, longDowntimePercent: 25}
}

// warmup is the load before the first step: for the clean decommission,
// Duration (the partitions grow meanwhile, so the moves have data to
// copy), else the pacing's.
func (r *run) warmup() time.Duration {
	if r.opts.Scenario == ScenarioDecommission && r.opts.Duration > 0 {
		return r.opts.Duration
	}
	return r.pacing.warmup
}

// between draws a duration in [low, high].
func (r *run) between(low, high time.Duration) time.Duration {
	if high <= low {
		return low
	}
	return low + time.Duration(r.rng.Int64N(int64(high-low)+1))
}

// step is one scripted action of the scenario. run returns a note for the
// report, or an error when the step failed.
type step struct {
	name string
	run  func(ctx context.Context) (string, error)
}

// StepResult is what one step did.
type StepResult struct {
	Name string
	// At is the step's start since the run began; Took its duration.
	At, Took time.Duration
	Note     string
	Err      error
	// Refused and Unanswered count the produce requests refused or left
	// without an answer while the step ran; NotConnected, those of the
	// unanswered that found the node down (LoadCounters).
	Refused, Unanswered, NotConnected int
}

// scenario runs the steps: cycles of every fault until the duration is
// spent (at least one), or the clean decommission.
func (r *run) scenario(ctx context.Context) {
	producing, stopProducing := context.WithCancel(ctx)
	defer stopProducing()
	consuming, stopConsuming := context.WithCancel(ctx)
	r.stopConsumers = stopConsuming
	r.load.startConsumers(consuming)
	producersBegan := time.Now()
	r.load.startProducers(producing)
	r.pause(ctx, "warmup", r.warmup())
	faultsBegan := time.Now()
	for cycle := 1; ctx.Err() == nil; cycle++ {
		for _, s := range r.cycle() {
			r.runStep(ctx, cycle, s)
			r.pause(ctx, "load", r.between(r.pacing.pauseMin, r.pacing.pauseMax))
		}
		if r.opts.Scenario == ScenarioDecommission || time.Since(faultsBegan) >= r.opts.Duration {
			break
		}
	}
	r.report.Faults = time.Since(faultsBegan)
	r.pause(ctx, "cooldown", r.pacing.cooldown)
	r.ledger.setStep("stopping")
	stopProducing()
	r.load.producers.Wait()
	r.report.Producing = time.Since(producersBegan)
}

// cycle returns the steps of one cycle, in order: the seed shuffles the
// kills and the rolling restart; scale-up comes before the decommission,
// which needs a voter to spare.
func (r *run) cycle() []step {
	if r.opts.Scenario == ScenarioDecommission {
		return []step{{"decommission", r.decommission}}
	}
	steps := []step{{"kill-follower", r.killFollower}, {"kill-leader", r.killLeader}, {"rolling-restart", r.rollingRestart}}
	r.rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	steps = append(steps, step{"scale-up", r.scaleUp}, step{"decommission", r.decommission})
	if r.forcedRecoveryEnabled() {
		steps = append(steps, step{"scale-up", r.scaleUp}, step{"forced-recovery", r.forcedRecovery})
	}
	return steps
}

// forcedRecoveryEnabled: a short run needs the shortened timings (the
// defaults would take minutes); a long run waits out the defaults.
func (r *run) forcedRecoveryEnabled() bool {
	if r.opts.Duration > 0 || r.timings.honoured {
		return true
	}
	if !r.report.forcedSkipNoted {
		r.report.forcedSkipNoted = true
		note := fmt.Sprintf("forced-recovery step skipped: this narad serve does not read %s, %s and %s, so force-promote would take "+
			"the default %s after the member is declared dead (%s); the short run cannot wait that long",
			EnvHeartbeatInterval, EnvMemberDeadAfter, EnvForcePromoteAfter, r.timings.forcePromoteAfter, r.timings.memberDeadAfter)
		r.report.Notes = append(r.report.Notes, note)
		r.logf("%s", note)
	}
	return false
}

// pause lets the load run for d.
func (r *run) pause(ctx context.Context, what string, d time.Duration) {
	r.ledger.setStep(what)
	_ = proc.SleepContext(ctx, d)
}

// runStep runs one step and records its outcome, the produce refusals
// while it ran, and any broker process that exited on its own (which is
// restarted).
func (r *run) runStep(ctx context.Context, cycle int, s step) {
	name := fmt.Sprintf("%d/%s", cycle, s.name)
	r.ledger.setStep(name)
	before, began := r.load.snapshot(), time.Now()
	r.logf("step %s", name)
	note, err := s.run(ctx)
	after := r.load.snapshot()
	if crashes := r.cluster.crashes(); len(crashes) > 0 {
		err = errors.Join(err, fmt.Errorf("broker processes exited on their own: %v", crashes))
		err = errors.Join(err, r.restartStopped(ctx))
	}
	result := StepResult{Name: name, At: began.Sub(r.began), Took: time.Since(began), Note: note, Err: err,
		Refused: after.refusedTotal() - before.refusedTotal(), Unanswered: after.Unanswered - before.Unanswered,
		NotConnected: after.NotConnected - before.NotConnected}
	r.report.Steps = append(r.report.Steps, result)
	r.logf("step %s done in %s: %s; produce refused %d, unanswered %d (%d found the node down); error: %v", name,
		result.Took.Round(time.Millisecond), note, result.Refused, result.Unanswered, result.NotConnected, err)
	if err := r.ledger.flush(); err != nil {
		r.report.fail("ledger file: %v", err)
	}
}

// restartStopped starts again every member that has no process.
func (r *run) restartStopped(ctx context.Context) error {
	var errs []error
	for _, n := range r.cluster.members() {
		if !n.Running() {
			errs = append(errs, n.Start(), n.WaitReady(ctx, readyTimeout))
		}
	}
	return errors.Join(errs...)
}
