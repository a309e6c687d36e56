//go:build plantedbugs

package sim

import (
	"testing"

	"narad/chaos"
)

// plantedSeedsMax bounds the seeds a sweep may need to catch a planted
// bug. A simulator that never fails is not evidence. The rarest catch is
// recovery-serves-unsynced on three nodes: 6 of seeds 1-100 (8 before
// the leader gathered heartbeats into rounds), so a change that moves the
// simulator's draws puts its first catch past seed 30 about one time in
// six, past 50 (the cluster bugs' bound, planted_cluster_test.go) about
// one in twenty. The seeds are fixed: a pass or a failure is repeatable.
const plantedSeedsMax = 50

// TestPlantedBugsAreCaught plants each bug in turn and sweeps seeds until
// a checker fails; it fails if a bug survives plantedSeedsMax seeds. The
// sweep runs twice: with every checker, and with only the black-box
// checkers (client histories: accounting and porcupine), which must catch
// the bugs that lose or change acknowledged data on their own. Forgetting
// the committed offset only causes redeliveries, which at-least-once
// allows, so only the state checker can see it; a repeated ack answered
// 410 loses nothing either, and only the ack checker, which hears which
// acks landed from the nodes, can see it; serving unsynced frames after a
// recovery risks only records that were never acknowledged, so only the
// state checker can see it; the same holds for making visible the
// records appended while a sync round was in flight. Every bug must also be
// caught in three-node worlds, where the answer to a client may come from
// a node that forwarded the records to their owner.
func TestPlantedBugsAreCaught(t *testing.T) {
	for _, bug := range chaos.Bugs {
		t.Run(bug.String(), func(t *testing.T) {
			chaos.Plant(bug)
			defer chaos.Plant(0)
			catch(t, bug, false, 1)
			if bug != chaos.BugForgetCommitted && bug != chaos.BugRepeatedAckStale && bug != chaos.BugRecoveryServesUnsynced &&
				bug != chaos.BugRoundCoversLaterAppends {
				catch(t, bug, true, 1)
			}
			catch(t, bug, false, 3)
		})
	}
}

func catch(t *testing.T, bug chaos.Bug, blackBox bool, nodes int) {
	t.Helper()
	for seed := uint64(1); seed <= plantedSeedsMax; seed++ {
		opts := DefaultOptions(seed)
		opts.SafetyMs = 10_000
		opts.BlackBox = blackBox
		opts.Nodes = nodes
		report := Run(opts)
		if report.Failure != nil && report.Failure.Checker == "client" {
			continue // an answer no server should give: not this bug's signature
		}
		if report.Failure != nil {
			t.Logf("%s (black-box only: %v, %d nodes) caught after %d seed(s) by %s", bug, blackBox, nodes, seed, report.Failure)
			return
		}
	}
	t.Fatalf("%s (black-box only: %v, %d nodes) survived %d seeds", bug, blackBox, nodes, plantedSeedsMax)
}
