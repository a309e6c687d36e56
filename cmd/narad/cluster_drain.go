package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"narad/client"
	"narad/proc"
)

// drainPollInterval is how often decommission --wait reads the members.
const drainPollInterval = time.Second

// voterRemovalPolls bounds how many polls decommission --wait gives the
// leader, once the member drained, to take it out of the voters (30 s at
// drainPollInterval: the leader does at its next planning round, within a
// few seconds, unless too few live voters would be left).
const voterRemovalPolls = 30

// votersMin is the metastore's floor of voters: the leader never takes a
// drained member out of the voters when that would leave fewer.
const votersMin = 3

// drainState is what decommission --wait shows of the draining member at
// one poll; a line is printed when it changes.
type drainState struct {
	owned, outbound, inbound int
	status                   string
	voter                    bool
	// noRoom: every other member that could take partitions (alive, not
	// draining) is short of disk, so the planner moves nothing for now.
	noRoom bool
}

func drainStateOf(member client.Member, members []client.Member) drainState {
	receivers, roomy := 0, 0
	for _, other := range members {
		if other.ID == member.ID || other.Status != "alive" || other.Draining {
			continue
		}
		receivers++
		if !other.DiskLow {
			roomy++
		}
	}
	return drainState{owned: member.OwnedPartitions, outbound: member.OutboundMoves, inbound: member.InboundMoves,
		status: member.Status, voter: member.Voter, noRoom: receivers > 0 && roomy == 0}
}

// drained reports whether the member owns nothing and nothing moves out
// of it or into it (a move from a dead owner may still end there): its
// decommission has done what the caller waits for (the leader takes it
// out of the voters next, where the cluster allows it).
func (s drainState) drained() bool { return s.owned == 0 && s.outbound == 0 && s.inbound == 0 }

func (s drainState) line(id string, elapsed time.Duration) string {
	text := fmt.Sprintf("%s: %d partition(s) left, %d moving out (%s)", id, s.owned, s.outbound, shortDuration(elapsed.Round(time.Second)))
	if s.inbound > 0 {
		text += fmt.Sprintf("; %d still moving in (from a dead owner)", s.inbound)
	}
	if s.status == "dead" {
		text += "; it is dead: its partitions wait for it to come back"
	}
	if s.noRoom && s.owned > 0 {
		text += "; every other member is short of disk (disk_low): the moves wait for room"
	}
	return text
}

// errDrainCancelled ends a wait whose member stopped draining.
var errDrainCancelled = errors.New("the decommission was cancelled")

// waitForDrain polls the members until id owns no partition and has no
// move out, printing a line on stderr whenever that changes (and every
// progressInterval while it does not). A poll that fails in a way a retry
// may mend is reported and retried; ctx ending (Ctrl-C, --timeout) is an
// error, since the node has not drained: the drain itself goes on.
func (a *app) waitForDrain(ctx context.Context, broker *client.Client, id string, poll time.Duration) error {
	start := time.Now()
	var latest, printed drainState
	var seen, sawDraining bool
	var printedAt time.Time
	drainedPolls := 0 // polls since the member drained, while it stays a voter
	for {
		members, err := broker.ClusterMembers(ctx)
		switch {
		case ctx.Err() != nil:
			return drainUnfinished(ctx, id, latest, seen)
		case err != nil && !retryable(err):
			return err
		case err != nil:
			fmt.Fprintf(a.stderr, "reading the members failed: %v (retrying)\n", err)
		default:
			member, found := findMember(members, id)
			if !found {
				fmt.Fprintf(a.stderr, "%s is no longer a member\n", id)
				return nil
			}
			if !member.Draining && sawDraining {
				return fmt.Errorf("%s: %w", id, errDrainCancelled)
			}
			sawDraining = sawDraining || member.Draining
			latest = drainStateOf(member, members)
			if latest.drained() {
				if ended, err := a.drainEnded(id, latest, voterCount(members), drainedPolls, time.Since(start)); ended {
					return err
				}
				drainedPolls++
				break
			}
			drainedPolls = 0
			if !seen || latest != printed || time.Since(printedAt) >= progressInterval {
				fmt.Fprintln(a.stderr, latest.line(id, time.Since(start)))
				printed, printedAt = latest, time.Now()
			}
			seen = true
		}
		if proc.SleepContext(ctx, poll) != nil {
			return drainUnfinished(ctx, id, latest, seen)
		}
	}
}

// sayDecommissioned reports a decommission the broker accepted: the
// member drains, or its decommission was complete already (a retry after
// it left the voters, listed or already forgotten by the leader). When
// the members cannot be read, it says the member drains.
func (a *app) sayDecommissioned(ctx context.Context, broker *client.Client, id string) {
	members, err := broker.ClusterMembers(ctx)
	member, listed := findMember(members, id)
	switch {
	case err == nil && !listed:
		fmt.Fprintf(a.stderr, "%s's decommission is complete: it left the voters and is no longer a member\n", id)
		return
	case err == nil && member.Draining && !member.Voter && drainStateOf(member, members).drained():
		// A retried decommission of a node that left the voters (still
		// listed until it is marked dead): it drains no more.
		fmt.Fprintf(a.stderr, "%s's decommission is complete: it left the voters; stop its process (never start it again under this id)%s\n", id, clientsWindow(id))
		return
	case err == nil && member.Draining && drainStateOf(member, members).drained() && staysVoter(voterCount(members)):
		fmt.Fprintf(a.stderr, "%s is drained and stays a voter, since the cluster has %d voters and keeps at least %d: keep it running\n",
			id, voterCount(members), votersMin)
		return
	}
	fmt.Fprintf(a.stderr, "%s is draining (follow it with --wait, or with: narad cluster moves --watch)\n", id)
}

// cancelDecommission cancels a member's drain and says whether one was
// stopped. The API answers 204 either way (a cancel is idempotent), so
// the member's draining flag is read first; when the members cannot be
// read, the message claims neither.
func (a *app) cancelDecommission(ctx context.Context, broker *client.Client, id string) error {
	members, membersErr := broker.ClusterMembers(ctx)
	member, listed := findMember(members, id)
	if err := broker.Decommission(ctx, id, true); err != nil {
		return err
	}
	switch {
	case membersErr == nil && listed && member.Draining:
		fmt.Fprintf(a.stderr, "decommission of %s cancelled: it drains no more (moves off it that had started copying go on), "+
			"and the planner now moves partitions back onto it until it holds its share\n", id)
	case membersErr == nil && listed:
		fmt.Fprintf(a.stderr, "%s was not draining: there was no decommission to cancel\n", id)
	default:
		fmt.Fprintf(a.stderr, "%s is not draining (decommission cancelled, or none was under way)\n", id)
	}
	return nil
}

// clientsWindow is what a decommission's last line says of the clients
// still sending to the removed node: it forwards their requests to the
// owners for cluster.dead_after_ms after it learned of its removal, then
// answers them 503. The CLI cannot read the setting (no API shows it), so
// it names it with its default.
func clientsWindow(id string) string {
	return fmt.Sprintf("; clients still sending to %s are served (forwarded to the owners) only for cluster.dead_after_ms "+
		"(NARAD_CLUSTER_DEAD_AFTER_MS, 30s by default) after its removal, then refused 503: move them to other nodes before that", id)
}

func findMember(members []client.Member, id string) (client.Member, bool) {
	for _, member := range members {
		if member.ID == id {
			return member, true
		}
	}
	return client.Member{}, false
}

// drainEnded says what a drained member's wait has come to, and whether
// the wait ends, with the error it ends with: nil (exit 0) only once the
// member is out of the voters, with the line that says to stop it. A
// member that stays a voter may not be stopped (the metastore would be
// one failure from losing its quorum), so a script that stops the node
// when the wait succeeds must not see a success: a voter of a cluster
// with votersMin voters stays one (the normal case, said at once), and
// any other voter is waited for up to voterRemovalPolls polls (polls:
// those since it drained), for the leader to take it out, then the wait
// ends saying why it may not have.
func (a *app) drainEnded(id string, state drainState, voters, polls int, elapsed time.Duration) (bool, error) {
	took := shortDuration(elapsed.Round(time.Second))
	switch {
	case !state.voter:
		fmt.Fprintf(a.stderr, "%s drained in %s and is not a voter: stop its process (never start it again under this id)%s\n", id, took, clientsWindow(id))
		return true, nil
	case staysVoter(voters):
		return true, fmt.Errorf("%s drained in %s: it owns no partition and stays a voter, since the cluster has %d voters and keeps at least %d: "+
			"keep it running (stopped, it leaves the metastore one failure from losing its quorum)", id, took, voters, votersMin)
	case polls == 0:
		fmt.Fprintf(a.stderr, "%s drained in %s: it owns no partition; waiting for the leader to take it out of the voters\n", id, took)
		return false, nil
	case polls < voterRemovalPolls:
		return false, nil
	}
	return true, fmt.Errorf("%s drained, but is still a voter after %s: the leader does not take it out while too few live voters would be left "+
		"(see narad cluster members and the leader's voter-removal-refused warning); it owns no partition: keep it running", id, took)
}

// staysVoter reports whether a drained voter of a cluster of voters
// voters stays one: the leader never goes below votersMin.
func staysVoter(voters int) bool { return voters <= votersMin }

// voterCount counts the metastore's voters among members.
func voterCount(members []client.Member) int {
	voters := 0
	for _, member := range members {
		if member.Voter {
			voters++
		}
	}
	return voters
}

// drainUnfinished is the error of a wait that ended before the drain did.
func drainUnfinished(ctx context.Context, id string, latest drainState, seen bool) error {
	reason := "interrupted"
	if errors.Is(context.Cause(ctx), errDrainTimeout) {
		reason = "timed out"
	}
	where := "before the members could be read"
	if seen {
		where = fmt.Sprintf("with %d partition(s) left on %s and %d moving out", latest.owned, id, latest.outbound)
	}
	return fmt.Errorf("%s %s: the drain goes on (follow it with narad cluster members, or stop it with --cancel)", reason, where)
}

// errDrainTimeout is the cause of a wait's context ended by --timeout.
var errDrainTimeout = errors.New("decommission --timeout reached")
