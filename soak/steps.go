package soak

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"narad/client"
	"narad/proc"
)

// ErrNotSettled is returned when the placement does not settle in time.
var ErrNotSettled = errors.New("placement did not settle")

// downtime draws how long a killed node stays down.
func (r *run) downtime() time.Duration {
	if r.pacing.longDowntimePercent > 0 && r.rng.IntN(100) < r.pacing.longDowntimePercent {
		return r.timings.memberDeadAfter + r.between(5*time.Second, 15*time.Second)
	}
	return r.between(r.pacing.downtimeMin, r.pacing.downtimeMax)
}

// killFollower kills -9 a node that does not lead the metadata group,
// keeps it down, and restarts it on its data.
func (r *run) killFollower(ctx context.Context) (string, error) {
	leader, err := r.cluster.leader(ctx)
	if err != nil {
		return "", err
	}
	var followers []*nodeProcess
	for _, n := range r.cluster.running() {
		if n != leader {
			followers = append(followers, n)
		}
	}
	if len(followers) == 0 {
		return "", errors.New("no follower running")
	}
	victim := followers[r.rng.IntN(len(followers))]
	down := r.downtime()
	if err := victim.Kill(); err != nil {
		return "", err
	}
	_ = proc.SleepContext(ctx, down)
	return fmt.Sprintf("killed %s (-9), down %s", victim.id, down.Round(time.Millisecond)), r.restart(ctx, victim)
}

// killLeader kills -9 the metadata leader, measures how long until a
// survivor leads, keeps the old leader down and restarts it.
func (r *run) killLeader(ctx context.Context) (string, error) {
	leader, err := r.cluster.leader(ctx)
	if err != nil {
		return "", err
	}
	down := r.downtime()
	killedAt := time.Now()
	if err := leader.Kill(); err != nil {
		return "", err
	}
	successor, err := r.cluster.leader(ctx)
	if err != nil {
		return "", errors.Join(err, r.restart(ctx, leader))
	}
	failover := time.Since(killedAt)
	_ = proc.SleepContext(ctx, down-failover)
	note := fmt.Sprintf("killed leader %s (-9), %s leads after %s, down %s", leader.id, successor.id, failover.Round(time.Millisecond),
		down.Round(time.Millisecond))
	return note, r.restart(ctx, leader)
}

func (r *run) restart(ctx context.Context, n *nodeProcess) error {
	if err := n.Start(); err != nil {
		return err
	}
	return n.WaitReady(ctx, readyTimeout)
}

// rollingRestart stops every node in turn with SIGTERM (graceful), starts
// it again and waits until it is ready before the next.
func (r *run) rollingRestart(ctx context.Context) (string, error) {
	nodes := r.cluster.running()
	r.rng.Shuffle(len(nodes), func(i, j int) { nodes[i], nodes[j] = nodes[j], nodes[i] })
	var stops []string
	var errs []error
	for _, n := range nodes {
		took, err := n.Terminate(terminateTimeout)
		stops = append(stops, fmt.Sprintf("%s stopped in %s", n.id, took.Round(time.Millisecond)))
		errs = append(errs, err, r.restart(ctx, n))
		_ = proc.SleepContext(ctx, r.pacing.pauseMin)
	}
	return strings.Join(stops, ", "), errors.Join(errs...)
}

// scaleUp starts a new node that joins the cluster, and waits until the
// placement settles with partitions on it.
func (r *run) scaleUp(ctx context.Context) (string, error) {
	n, err := r.cluster.join(ctx)
	if err != nil {
		return "", err
	}
	placement, err := r.settle(ctx)
	if err != nil {
		return "", err
	}
	if placement[n.id] == 0 {
		return "", fmt.Errorf("%s joined but received no partition (placement %v)", n.id, placement)
	}
	installed, err := r.snapshotsInstalled(ctx, n)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s joined from %d metastore snapshot(s) and holds %d partitions; placement %v",
		n.id, installed, placement[n.id], placement), nil
}

// snapshotsInstalled reads how many metastore snapshots the joiner n
// installed. With a small snapshot interval asked of the nodes the
// metadata log was compacted long before, so a joiner that installed
// none did not start the way it must.
func (r *run) snapshotsInstalled(ctx context.Context, n *nodeProcess) (int, error) {
	metrics, err := n.Metrics(ctx)
	if err != nil {
		return 0, fmt.Errorf("metrics of joiner %s: %w", n.id, err)
	}
	installed, found := metrics.Value(snapshotsInstalledMetric)
	if r.timings.metaSnapshotEntries > 0 && (!found || installed < 1) {
		return 0, fmt.Errorf("%s joined a cluster that snapshots every %d metadata entries but installed no snapshot (%s %v, found %t)",
			n.id, r.timings.metaSnapshotEntries, snapshotsInstalledMetric, installed, found)
	}
	return int(installed), nil
}

// snapshotsInstalledMetric counts the metastore snapshots a node
// received from the leader and installed since it started.
const snapshotsInstalledMetric = "narad_meta_snapshots_installed_total"

// decommission drains a seeded member under load, waits until it owns
// nothing and has left the voter set, takes it out of the rotation and
// stops it.
func (r *run) decommission(ctx context.Context) (string, error) {
	victim, skipped := r.decommissionVictim()
	if victim == nil {
		return skipped, nil
	}
	began, wasLeader, err := r.startDecommission(ctx, victim)
	if err != nil {
		return "", err
	}
	return r.finishDecommission(ctx, victim, began, wasLeader)
}

// decommissionVictim draws a running member, or says why there is none:
// the voter set keeps votersMin.
func (r *run) decommissionVictim() (*nodeProcess, string) {
	members := r.cluster.running()
	if len(members) <= votersMin {
		return nil, fmt.Sprintf("skipped: only %d members, the voter set keeps %d", len(members), votersMin)
	}
	return members[r.rng.IntN(len(members))], ""
}

// startDecommission marks victim draining; it reports whether victim led
// the metadata group then.
func (r *run) startDecommission(ctx context.Context, victim *nodeProcess) (time.Time, bool, error) {
	leader, err := r.cluster.leader(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	began := time.Now()
	err = r.cluster.control(ctx, func(ctx context.Context, c *client.Client) error { return c.Decommission(ctx, victim.id, false) })
	if err != nil {
		return began, false, fmt.Errorf("decommission %s: %w", victim.id, err)
	}
	return began, victim == leader, nil
}

// finishDecommission waits until victim is drained and removed from the
// voters, takes it out of the rotation, stops it for good and waits for
// the placement to settle.
func (r *run) finishDecommission(ctx context.Context, victim *nodeProcess, began time.Time, wasLeader bool) (string, error) {
	if err := r.awaitDrained(ctx, victim.id); err != nil {
		return "", err
	}
	drained := time.Since(began)
	r.cluster.setRotation(victim.id, false)
	_ = proc.SleepContext(ctx, consumeWait+time.Second) // requests already sent to it finish
	took, err := victim.Terminate(terminateTimeout)
	r.cluster.retire(victim.id)
	note := fmt.Sprintf("decommissioned %s (leader %t): drained and removed from the voters in %s, stopped in %s",
		victim.id, wasLeader, drained.Round(time.Millisecond), took.Round(time.Millisecond))
	if err != nil {
		return note, err
	}
	placement, err := r.settle(ctx)
	return note + fmt.Sprintf("; placement %v", placement), err
}

// awaitDrained waits until member id owns and targets nothing and a
// leader logged its removal from the voter set.
func (r *run) awaitDrained(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(ctx, drainedTimeout)
	defer cancel()
	for {
		members, err := r.cluster.clusterMembers(ctx)
		if err == nil && ownsNothing(members, id) && r.voterRemoved(id) {
			return nil
		}
		if proc.SleepContext(ctx, time.Second) != nil {
			return fmt.Errorf("%s not drained and removed from the voters within %s (members %v, last error %v)",
				id, drainedTimeout, members, err)
		}
	}
}

// ownsNothing reports whether the draining member id owns nothing and
// nothing moves to or from it. A member no longer listed was forgotten
// once its decommission completed and it was dead, which the leader does
// only for a member placed nowhere (a node stopped before its drain ended
// goes soon after its removal from the voters).
func ownsNothing(members []client.Member, id string) bool {
	for _, m := range members {
		if m.ID == id {
			return m.Draining && m.OwnedPartitions == 0 && m.OutboundMoves == 0 && m.InboundMoves == 0
		}
	}
	return true
}

// voterRemoved reports whether some node logged the removal of id from
// the voter set.
func (r *run) voterRemoved(id string) bool {
	var paths []string
	for _, n := range r.cluster.allNodes() {
		paths = append(paths, n.logPath)
	}
	return logsMention(paths, "voter-removal-proposed", id+" ")
}

// settle waits until no move is in flight, every member is alive and
// every receiver holds within one partition of the others; it returns the
// placement (partitions per member).
func (r *run) settle(ctx context.Context) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, settleTimeout)
	defer cancel()
	for {
		placement, settled, err := r.placement(ctx)
		if err == nil && settled {
			return placement, nil
		}
		if proc.SleepContext(ctx, pollInterval*5) != nil {
			return placement, fmt.Errorf("%w within %s: placement %v (last error %v)", ErrNotSettled, settleTimeout, placement, err)
		}
	}
}

// placement reads the members and moves and judges whether they settled.
func (r *run) placement(ctx context.Context) (map[string]int, bool, error) {
	members, err := r.cluster.clusterMembers(ctx)
	if err != nil {
		return nil, false, err
	}
	moves, err := r.cluster.clusterMoves(ctx)
	if err != nil {
		return nil, false, err
	}
	placement := map[string]int{}
	low, high, settled := -1, 0, len(moves) == 0
	for _, m := range members {
		if r.cluster.isRetired(m.ID) {
			continue
		}
		placement[m.ID] = m.OwnedPartitions
		settled = settled && m.Status == "alive" && !m.Draining
		if low < 0 || m.OwnedPartitions < low {
			low = m.OwnedPartitions
		}
		high = max(high, m.OwnedPartitions)
	}
	return placement, settled && high-low <= 1, nil
}
