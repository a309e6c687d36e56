package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
)

// Settings of the secured test cluster.
const (
	securedAdminPassword = "e2e-root-pw"
	securedClusterSecret = "e2e-cluster-secret"
	// securedJoinWindow is how long a joiner with the wrong secret is
	// watched: longer than several join retries (2 s apart).
	securedJoinWindow = 8 * time.Second
)

// securityEnv turns authentication on with a root password and a cluster
// secret.
func securityEnv(clusterSecret string) []string {
	return []string{"NARAD_SECURITY_ENABLED=true", "NARAD_ADMIN_PASSWORD=" + securedAdminPassword,
		"NARAD_CLUSTER_SECRET=" + clusterSecret}
}

// as returns a client of node n with credentials.
func as(n *clusterNode, user, password string) *client.Client {
	return client.New("http://"+n.httpAddr, client.WithTimeout(clusterClientTimeout), client.WithBasicAuth(user, password))
}

// appliedIndex reads n's narad_meta_applied_index.
func appliedIndex(ctx context.Context, t *testing.T, n *clusterNode) uint64 {
	t.Helper()
	metrics, err := scrape(ctx, n)
	require.NoError(t, err)
	index, found := metrics.Value("narad_meta_applied_index")
	require.True(t, found, "%s exports narad_meta_applied_index", n.id)
	return uint64(index)
}

// waitApplied waits (bounded) until every running node applied index.
func (c *testCluster) waitApplied(ctx context.Context, index uint64) {
	c.t.Helper()
	for _, n := range c.running() {
		deadline := time.Now().Add(clusterReadyTimeout)
		for appliedIndex(ctx, c.t, n) < index {
			require.True(c.t, time.Now().Before(deadline), "%s did not apply index %d", n.id, index)
			time.Sleep(clusterPollInterval)
		}
	}
}

// TestSecuredClusterUsers: with security on, the root is seeded once; a
// user created through n1 authenticates on n3 as soon as n3 applied the
// write; a password change revokes the old password on every node; a node
// with the wrong cluster secret cannot join.
func TestSecuredClusterUsers(t *testing.T) {
	c := startTestClusterWith(t, 3, securityEnv(securedClusterSecret))
	ctx := context.Background()
	n1, n3 := c.nodes[0], c.nodes[2]
	_, err := n1.client.ClusterMembers(ctx)
	require.True(t, client.IsStatus(err, 401), "anonymous requests are refused: %v", err)

	root := as(n1, "admin", securedAdminPassword)
	for range 200 { // the leader seeds the root shortly after its election
		if _, err = root.ListUsers(ctx); !client.IsStatus(err, 401) {
			break
		}
		time.Sleep(clusterPollInterval)
	}
	users, err := root.ListUsers(ctx)
	require.NoError(t, err)
	require.Len(t, users, 1, "exactly one root seeded")

	_, err = root.CreateUser(ctx, client.CreateUserRequest{Username: "ann", Password: "pw1",
		Grants: []client.Grant{{Action: "create", Patterns: []string{"ann-*"}}}})
	require.NoError(t, err)
	c.waitApplied(ctx, appliedIndex(ctx, t, n1))
	_, err = as(n3, "ann", "pw1").CreateTopic(ctx, client.CreateTopicRequest{Name: "ann-orders"})
	require.NoError(t, err, "the user works on n3 at its first request after n3 applied the write")
	_, err = as(n3, "ann", "pw1").CreateTopic(ctx, client.CreateTopicRequest{Name: "orders"})
	require.True(t, client.IsStatus(err, 403), "outside the grant: %v", err)

	require.NoError(t, as(n1, "ann", "pw1").SetPassword(ctx, "ann", "pw1", "pw2"))
	c.waitApplied(ctx, appliedIndex(ctx, t, n1))
	for _, n := range c.nodes {
		_, err = as(n, "ann", "pw1").ListTopics(ctx, 0, "")
		require.True(t, client.IsStatus(err, 401), "%s refuses the old password: %v", n.id, err)
		_, err = as(n, "ann", "pw2").ListTopics(ctx, 0, "")
		require.NoError(t, err, "%s accepts the new password", n.id)
	}

	c.security = securityEnv("not-the-cluster-secret")
	stranger := c.addJoiningNode("n4")
	time.Sleep(securedJoinWindow)
	members, err := as(n1, "admin", securedAdminPassword).ClusterMembers(ctx)
	require.NoError(t, err)
	require.Len(t, members, 3, "a node with the wrong cluster secret is not a member")
	_, err = stranger.client.Readyz(ctx)
	require.Error(t, err, "the stranger never becomes ready")
	metrics, err := scrape(ctx, n1)
	require.NoError(t, err)
	failures, _ := metrics.Value("narad_peer_inbound_auth_failures_total")
	require.Positive(t, failures, "n1 refused the stranger's handshakes")
}
