package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Bounds of TestClusterFanoutSurvivesADecommission.
const (
	fanoutParent     = "orders"
	fanoutChild      = "orders-audit"
	fanoutDelayed    = "orders-later"
	fanoutDelayMs    = 2_000
	fanoutRecords    = 600
	fanoutBatch      = 10
	fanoutPartitions = 3
	// fanoutDrainTimeout is how long the children have, once the load
	// stopped and the moves settled, to hold every acknowledged record.
	fanoutDrainTimeout = time.Minute
	fanoutTestTimeout  = 4 * time.Minute
)

// TestClusterFanoutSurvivesADecommission runs three real processes with a
// parent topic, a fan-out child and a delay child; while a producer
// writes to the parent, the owner of parent partition 0 is decommissioned,
// so its parent partitions move with their cursors. Then every record the
// parent answered 202 must be in both children, and none in the delay
// child earlier than its commit in the parent plus the delay
// (docs/api.md#fan-out-children).
func TestClusterFanoutSurvivesADecommission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), fanoutTestTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1 := c.nodes[0]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: fanoutParent, Partitions: fanoutPartitions, RetentionMs: 24 * 3_600_000})
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: fanoutChild, Parent: fanoutParent})
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: fanoutDelayed, Parent: fanoutParent, FanoutDelayMs: fanoutDelayMs})
	victim := partitionOwner(ctx, t, n1, fanoutParent, 0)
	talker := c.nodes[0]
	if talker.id == victim {
		talker = c.nodes[1]
	}
	load := &fanoutLoad{}
	var producing sync.WaitGroup
	producing.Go(func() { load.produce(ctx, talker) })
	require.NoError(t, load.waitAcknowledged(ctx, fanoutRecords/3))
	require.NoError(t, talker.client.Decommission(ctx, victim, false), "decommission %s, owner of %s/0", victim, fanoutParent)
	producing.Wait()
	waitPlacement(ctx, t, talker, scaleRebalanceTimeout, victim+" drained", func(p placement) bool {
		m, ok := p.member(victim)
		return ok && m.Draining && m.OwnedPartitions == 0
	})
	require.NotEqual(t, victim, partitionOwner(ctx, t, talker, fanoutParent, 0), "parent partition 0 moved")
	acked := load.ids()
	parent := readTopic(ctx, t, talker, fanoutParent, nil, 0)
	for _, child := range []string{fanoutChild, fanoutDelayed} {
		seen := readTopic(ctx, t, talker, child, acked, fanoutDrainTimeout)
		for _, id := range acked {
			require.Contains(t, seen, id, "%s answered 202 in %s never reached %s", id, fanoutParent, child)
		}
		if child == fanoutDelayed {
			for _, id := range acked {
				require.GreaterOrEqual(t, seen[id], parent[id]+fanoutDelayMs, "%s reached %s before its commit in %s plus %d ms", id, child, fanoutParent, fanoutDelayMs)
			}
		}
	}
}

// partitionOwner is the node that owns partition index of topic, as n
// describes it.
func partitionOwner(ctx context.Context, t *testing.T, n *clusterNode, topic string, index int) string {
	t.Helper()
	described, err := n.client.GetTopic(ctx, topic, &index)
	require.NoError(t, err)
	require.Len(t, described.PartitionStats, 1)
	return described.PartitionStats[0].OwnerNode
}

// fanoutLoad produces fanoutRecords records with unique payloads in
// batches, retrying a failed batch (its records may land twice).
type fanoutLoad struct {
	mu sync.Mutex
	// acked lists the ids of the batches answered 202, in order.
	acked []string
}

func (l *fanoutLoad) produce(ctx context.Context, n *clusterNode) {
	for next := 0; next < fanoutRecords && ctx.Err() == nil; {
		ids, records := make([]string, fanoutBatch), make([]client.BatchRecord, fanoutBatch)
		for i := range records {
			ids[i] = fmt.Sprintf("r%05d", next+i)
			records[i] = client.BatchRecord{Payload: json.RawMessage(fmt.Sprintf("%q", ids[i]))}
		}
		if _, err := n.client.ProduceBatch(ctx, fanoutParent, records); err != nil {
			_ = proc.SleepContext(ctx, retryPause)
			continue
		}
		l.mu.Lock()
		l.acked = append(l.acked, ids...)
		l.mu.Unlock()
		next += fanoutBatch
	}
}

func (l *fanoutLoad) ids() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.acked)
}

// waitAcknowledged waits until count records were answered 202.
func (l *fanoutLoad) waitAcknowledged(ctx context.Context, count int) error {
	for len(l.ids()) < count {
		if err := proc.SleepContext(ctx, placementPollInterval); err != nil {
			return err
		}
	}
	return nil
}

// readTopic reads every partition of topic by replay and returns the
// earliest commit time of each payload id. With want set it reads again
// until every id of want was seen or timeout passed.
func readTopic(ctx context.Context, t *testing.T, n *clusterNode, topic string, want []string, timeout time.Duration) map[string]int64 {
	t.Helper()
	seen, cursors := map[string]int64{}, make([]int64, fanoutPartitions)
	deadline := time.Now().Add(timeout)
	for {
		for partition := range fanoutPartitions {
			readPartition(ctx, t, n, topic, partition, &cursors[partition], seen)
		}
		missing := slices.ContainsFunc(want, func(id string) bool { _, ok := seen[id]; return !ok })
		if !missing || time.Now().After(deadline) {
			return seen
		}
		require.NoError(t, proc.SleepContext(ctx, placementPollInterval))
	}
}

// readPartition replays a partition from *cursor to its end.
func readPartition(ctx context.Context, t *testing.T, n *clusterNode, topic string, partition int, cursor *int64, seen map[string]int64) {
	t.Helper()
	for {
		m, err := n.client.Replay(ctx, topic, partition, *cursor)
		if err != nil {
			require.NoError(t, proc.SleepContext(ctx, retryPause), "replay %s/%d@%d: %v", topic, partition, *cursor, err)
			continue
		}
		if m == nil {
			return
		}
		var id string
		require.NoError(t, json.Unmarshal(m.RawPayload, &id), "payload of %s/%d@%d", topic, partition, *cursor)
		if first, ok := seen[id]; !ok || m.TimestampMs < first {
			seen[id] = m.TimestampMs
		}
		*cursor++
	}
}
