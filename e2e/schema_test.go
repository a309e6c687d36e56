package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// The schemas of TestClusterEnforcesASchemaChangeOnEveryNode: version 2
// adds a short optional note, an additive change that refuses a record
// version 1 accepts.
const (
	schemaTopic       = "typed"
	schemaPartitions  = 3
	schemaVersion1    = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"}}}`
	schemaVersion2    = `{"type":"object","required":["id"],"properties":{"id":{"type":"string"},"note":{"type":"string","maxLength":3}}}`
	longNote          = `{"id":"a","note":"longer than three"}`
	schemaTestTimeout = 2 * time.Minute
)

// TestClusterEnforcesASchemaChangeOnEveryNode runs three processes: a
// topic with a schema is created through n1 and changed through n2. Each
// node, as soon as it reports the new version applied, refuses a record
// the new version forbids, on every partition (most of which it forwards
// to their owners), and reads both versions back.
func TestClusterEnforcesASchemaChangeOnEveryNode(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), schemaTestTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1, n2 := c.nodes[0], c.nodes[1]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: schemaTopic, Partitions: schemaPartitions, Schema: json.RawMessage(schemaVersion1)})
	for _, n := range c.nodes {
		waitSchemaVersion(ctx, t, n, 1)
		for partition := range schemaPartitions {
			_, err := n.client.Produce(ctx, schemaTopic, []byte(longNote), client.ProduceOptions{Partition: client.Ptr(partition)})
			require.NoError(t, err, "version 1 accepts the long note through %s, partition %d", n.id, partition)
			_, err = n.client.Produce(ctx, schemaTopic, []byte(`{"note":"x"}`), client.ProduceOptions{Partition: client.Ptr(partition)})
			require.True(t, client.IsStatus(err, 400), "version 1 requires id through %s: %v", n.id, err)
		}
	}

	altered := alterSchema(ctx, t, n2, schemaVersion2)
	require.Equal(t, 2, altered.SchemaVersion)
	for _, n := range c.nodes {
		waitSchemaVersion(ctx, t, n, 2)
		for partition := range schemaPartitions {
			_, err := n.client.Produce(ctx, schemaTopic, []byte(longNote), client.ProduceOptions{Partition: client.Ptr(partition)})
			require.True(t, client.IsStatus(err, 400), "%s applied version 2 but took the long note for partition %d: %v", n.id, partition, err)
			require.Contains(t, err.Error(), "(version 2): at /note")
			_, err = n.client.Produce(ctx, schemaTopic, []byte(`{"id":"b","note":"ok"}`), client.ProduceOptions{Partition: client.Ptr(partition)})
			require.NoError(t, err, "version 2 accepts a short note through %s, partition %d", n.id, partition)
		}
		latest, err := n.client.TopicSchema(ctx, schemaTopic, 0)
		require.NoError(t, err)
		require.Equal(t, 2, latest.Version)
		require.JSONEq(t, schemaVersion2, string(latest.Schema))
		first, err := n.client.TopicSchema(ctx, schemaTopic, 1)
		require.NoError(t, err)
		require.JSONEq(t, schemaVersion1, string(first.Schema))
	}

	_, err := n1.client.AlterTopic(ctx, schemaTopic, client.AlterTopicRequest{Schema: json.RawMessage(schemaVersion1)})
	require.True(t, client.IsStatus(err, 400), "removing a property is refused: %v", err)
	require.Contains(t, err.Error(), `property "note"`)
}

// waitSchemaVersion waits until n's topic object shows the schema version
// (the node applied it).
func waitSchemaVersion(ctx context.Context, t *testing.T, n *clusterNode, version int) {
	t.Helper()
	for {
		topic, err := n.client.GetTopic(ctx, schemaTopic, client.Ptr(0))
		if err == nil && topic.SchemaVersion == version {
			return
		}
		require.NoError(t, proc.SleepContext(ctx, clusterPollInterval),
			"%s never showed schema version %d (last: %+v, %v)", n.id, version, topic.SchemaVersion, err)
	}
}

// alterSchema adds a schema version through n, retrying while the
// metadata group has no leader (503).
func alterSchema(ctx context.Context, t *testing.T, n *clusterNode, schema string) client.Topic {
	t.Helper()
	for {
		topic, err := n.client.AlterTopic(ctx, schemaTopic, client.AlterTopicRequest{Schema: json.RawMessage(schema)})
		if err == nil {
			return topic
		}
		require.True(t, client.IsStatus(err, 503), fmt.Sprintf("alter schema through %s: %v", n.id, err))
		require.NoError(t, proc.SleepContext(ctx, retryPause), "alter schema through %s: still 503", n.id)
	}
}
