package e2e

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Bounds of TestClusterDecommissionedNodeReportsNotReady.
const (
	decommissionTopic      = "drained"
	decommissionPartitions = 4
	// removedNotReadyTimeout is how long the removed node has to start
	// answering /readyz with 503 once its removal was proposed.
	removedNotReadyTimeout  = 15 * time.Second
	decommissionTestTimeout = 2 * time.Minute
)

// TestClusterDecommissionedNodeReportsNotReady decommissions a node of a
// four-node cluster through the HTTP API (an unknown member is 404, a known
// one 204), waits until it owns nothing and the leader removed it from the
// voter set, and then expects its /readyz to answer 503:
// docs/api.md#health-and-metrics says a node removed from the cluster reports
// not ready, so that a load balancer stops sending it clients.
func TestClusterDecommissionedNodeReportsNotReady(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), decommissionTestTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1, n2 := c.nodes[0], c.nodes[1]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: decommissionTopic, Partitions: decommissionPartitions})
	n4 := c.addJoiningNode("n4")
	c.waitReady(n4)
	waitPlacement(ctx, t, n1, scaleRebalanceTimeout, "placement balanced over n1..n4", func(p placement) bool {
		return p.balancedOver(decommissionPartitions, "n1", "n2", "n3", "n4")
	})

	err := n1.client.Decommission(ctx, "n9", false)
	require.True(t, client.IsStatus(err, http.StatusNotFound), "decommission of an unknown member: want 404, got %v", err)
	require.NoError(t, n1.client.Decommission(ctx, n2.id, false), "decommission n2 (204)")
	waitPlacement(ctx, t, n1, scaleRebalanceTimeout, "n2 drained", func(p placement) bool {
		m, ok := p.member(n2.id)
		return ok && m.Draining && p.balancedOver(decommissionPartitions, "n1", "n3", "n4")
	})
	removal := c.waitEvent(ctx, "voter-removal-proposed", n2.id+" ", scaleVoterRemovalTimeout)
	t.Logf("%s proposed the removal of n2 from the voter set at %s", removal.Node, removal.Time.Format("15:04:05.000"))

	notReady, answer, view := waitNotReady(ctx, t, n2)
	c.proveVoterRemoved(ctx, n2, n4)
	assert.True(t, notReady, "n2 was removed from the voter set, yet its /readyz still answered %s %s after the removal was proposed "+
		"(docs/api.md#health-and-metrics: a removed node reports not ready); n2's own view of the members then: %s", answer, removedNotReadyTimeout, view)
}

// waitNotReady polls n's /readyz for up to removedNotReadyTimeout until it
// answers 503. It returns whether it did, the last answer, and n's own
// view of the members (for the failure message).
func waitNotReady(ctx context.Context, t *testing.T, n *clusterNode) (bool, string, string) {
	t.Helper()
	deadline := time.Now().Add(removedNotReadyTimeout)
	answer := "nothing"
	for time.Now().Before(deadline) {
		_, err := n.client.Readyz(ctx)
		if client.IsStatus(err, http.StatusServiceUnavailable) {
			return true, err.Error(), ""
		}
		answer = "200 ready"
		if err != nil {
			answer = err.Error()
		}
		require.NoError(t, proc.SleepContext(ctx, placementPollInterval))
	}
	view, err := readPlacement(ctx, n)
	if err != nil {
		return false, answer, err.Error()
	}
	return false, answer, view.String()
}

// TestClusterJoinerThatKnowsOneFollowerJoins starts a node told of a
// single member, a follower: the follower relays its join to the leader,
// and the leader tells it the voters' addresses, so it becomes ready and
// receives its share of partitions.
func TestClusterJoinerThatKnowsOneFollowerJoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), decommissionTestTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1 := c.nodes[0]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: decommissionTopic, Partitions: decommissionPartitions})
	via := c.follower(ctx)
	n4 := c.addJoiningNodeVia("n4", via)
	c.waitReady(n4)
	waitPlacement(ctx, t, n1, scaleRebalanceTimeout, "placement balanced over n1..n4", func(p placement) bool {
		return p.balancedOver(decommissionPartitions, "n1", "n2", "n3", "n4")
	})
	members, err := n4.client.ClusterMembers(ctx)
	require.NoError(t, err, "the joiner answers for the cluster")
	require.Len(t, members, 4, "the joiner sees every member, not only %s", via.id)
}
