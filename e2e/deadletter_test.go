package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/proc"
)

// Bounds of TestClusterDeadLettersSurviveADecommission.
const (
	deadSource     = "payments"
	deadTopic      = "payments-dead"
	deadPartitions = 3
	// deadMaxDeliveries is the source's max_deliveries: a record nacked
	// once before the move and once after it is exhausted.
	deadMaxDeliveries = 2
	// deadRecordsBefore are produced before the decommission,
	// deadRecordsDuring while it runs; every deadPoisonEvery-th record
	// is poison (always nacked).
	deadRecordsBefore = 60
	deadRecordsDuring = 30
	deadPoisonEvery   = 3
	// deadConsumeWait is the long poll of the test's consumes; an empty
	// answer with nothing left to see ends a phase.
	deadConsumeWait = time.Second
	// deadDrainTimeout bounds the consumption after the move, until every
	// record is acked or dead-lettered.
	deadDrainTimeout = time.Minute
	deadTestTimeout  = 4 * time.Minute
)

// deadPartition is the source partition every record is pinned to: its
// owner is the node decommissioned.
var deadPartition = 0

// TestClusterDeadLettersSurviveADecommission runs three real processes
// with a source topic (max_deliveries 2) and its dead-letter topic. Every
// third record is poison: its consumer nacks it. Each poison record is
// nacked once (delivery 1 of 2), then the owner of the source partition is
// decommissioned while more records arrive, so the partition moves with
// its delivery counts. After the move each of those poison records must
// come back as its second delivery (a count started over would say 1),
// and its nack must move it to the dead-letter topic: every poison record
// is there exactly once with a dead_letter origin naming its place in the
// source and 2 deliveries, the source acknowledges it (nothing is left to
// consume), every other record was acked, and no dead letter is
// unexpected (docs/api.md#dead-letters).
func TestClusterDeadLettersSurviveADecommission(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), deadTestTimeout)
	defer cancel()
	c := startTestCluster(t, 3)
	n1 := c.nodes[0]
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: deadTopic, Partitions: deadPartitions})
	createTopic(ctx, t, n1, client.CreateTopicRequest{Name: deadSource, Partitions: deadPartitions,
		MaxDeliveries: deadMaxDeliveries, DeadLetterTopic: deadTopic})
	victim := partitionOwner(ctx, t, n1, deadSource, deadPartition)
	talker := c.nodes[0]
	if talker.id == victim {
		talker = c.nodes[1]
	}
	audit := &deadAudit{placed: map[string]client.Placement{}, deliveries: map[string][]int{}}
	for i := range deadRecordsBefore {
		audit.produce(ctx, t, talker, fmt.Sprintf("d%03d", i))
	}
	nackedOnce := audit.deliverOnce(ctx, t, talker)
	require.Len(t, nackedOnce, deadRecordsBefore/deadPoisonEvery, "every poison record nacked once before the move")

	require.NoError(t, talker.client.Decommission(ctx, victim, false), "decommission %s, owner of %s/%d", victim, deadSource, deadPartition)
	for i := range deadRecordsDuring {
		audit.produce(ctx, t, talker, fmt.Sprintf("d%03d", deadRecordsBefore+i))
	}
	waitPlacement(ctx, t, talker, scaleRebalanceTimeout, victim+" drained", func(p placement) bool {
		m, ok := p.member(victim)
		return ok && m.Draining && m.OwnedPartitions == 0
	})
	require.NotEqual(t, victim, partitionOwner(ctx, t, talker, deadSource, deadPartition), "the source partition moved")

	letters := audit.drain(ctx, t, talker)
	for _, id := range nackedOnce {
		require.Equal(t, []int{1, deadMaxDeliveries}, audit.deliveries[id],
			"%s: nacked at delivery 1 before the move, it must come back once, as delivery %d (a count started over says 1)", id, deadMaxDeliveries)
	}
	audit.check(t, letters)
}

// deadAudit is what the test produced and what its consumer saw; only the
// test goroutine uses it.
type deadAudit struct {
	// placed holds where each record's 202 placed it.
	placed map[string]client.Placement
	// deliveries holds the delivery_count of each delivery of a record,
	// in order; acked the records acked.
	deliveries map[string][]int
	acked      []string
}

func deadPoison(id string) bool {
	var n int
	_, err := fmt.Sscanf(id, "d%03d", &n)
	return err == nil && n%deadPoisonEvery == 0
}

// produce writes record id to the source partition through n, again
// until it is answered 202 (a retry may store it twice).
func (a *deadAudit) produce(ctx context.Context, t *testing.T, n *clusterNode, id string) {
	t.Helper()
	for {
		placed, err := n.client.Produce(ctx, deadSource, []byte(id), client.ProduceOptions{Partition: &deadPartition})
		if err == nil {
			a.placed[id] = placed
			return
		}
		require.NoError(t, ctx.Err(), "produce %s: %v", id, err)
		require.NoError(t, proc.SleepContext(ctx, retryPause))
	}
}

// consume reserves what the source partition has (nil once a long poll
// comes back empty) and notes each delivery.
func (a *deadAudit) consume(ctx context.Context, t *testing.T, n *clusterNode) []client.Message {
	t.Helper()
	for {
		messages, err := n.client.ConsumeBatch(ctx, deadSource, consumeBatch, client.ConsumeOptions{Wait: deadConsumeWait, Partition: &deadPartition})
		if err != nil {
			require.NoError(t, ctx.Err(), "consume: %v", err)
			require.NoError(t, proc.SleepContext(ctx, retryPause))
			continue
		}
		for _, m := range messages {
			id := messageID(t, m)
			a.deliveries[id] = append(a.deliveries[id], m.DeliveryCount)
		}
		return messages
	}
}

// settle acks the messages that are not poison and applies poisonMode to
// the poison ones; it returns the poison ids.
func (a *deadAudit) settle(ctx context.Context, t *testing.T, n *clusterNode, messages []client.Message, poisonMode client.AckMode) []string {
	t.Helper()
	var good, bad, poison []string
	for _, m := range messages {
		if id := messageID(t, m); deadPoison(id) {
			bad, poison = append(bad, m.ReceiptHandle), append(poison, id)
		} else {
			good, a.acked = append(good, m.ReceiptHandle), append(a.acked, id)
		}
	}
	for mode, handles := range map[client.AckMode][]string{client.AckModeCommit: good, poisonMode: bad} {
		if len(handles) == 0 {
			continue
		}
		results, err := n.client.AckBatch(ctx, deadSource, handles, mode)
		require.NoError(t, err, "ack (mode %q)", mode)
		for _, result := range results {
			require.Equal(t, 204, result.Status, "ack (mode %q) of %s: %s", mode, result.ReceiptHandle, result.Error)
		}
	}
	return poison
}

// deliverOnce consumes every record once, acks the good ones and holds
// the poison ones until all were seen, then nacks them together (so none
// comes back before the move) and returns their ids.
func (a *deadAudit) deliverOnce(ctx context.Context, t *testing.T, n *clusterNode) []string {
	t.Helper()
	var held []client.Message
	for seen := 0; seen < deadRecordsBefore; {
		messages := a.consume(ctx, t, n)
		require.NotEmpty(t, messages, "consumed %d of %d records, then nothing", seen, deadRecordsBefore)
		seen += len(messages)
		for _, m := range messages {
			require.Equal(t, 1, m.DeliveryCount, "%s: first delivery", messageID(t, m))
			if deadPoison(messageID(t, m)) {
				held = append(held, m)
			}
		}
		a.settle(ctx, t, n, messages, client.AckModeExtend)
	}
	return a.settle(ctx, t, n, held, client.AckModeRelease)
}

// drain consumes until every record is acked or read back from the
// dead-letter topic, nacking the poison ones; it returns the dead letters.
func (a *deadAudit) drain(ctx context.Context, t *testing.T, n *clusterNode) []client.Message {
	t.Helper()
	deadline := time.Now().Add(deadDrainTimeout)
	var letters []client.Message
	for {
		messages := a.consume(ctx, t, n)
		a.settle(ctx, t, n, messages, client.AckModeRelease)
		letters = readDeadLetters(ctx, t, n)
		if len(messages) == 0 && len(letters)+len(a.acked) >= len(a.placed) {
			return letters
		}
		require.True(t, time.Now().Before(deadline), "after %s: %d acked and %d dead letters of %d records", deadDrainTimeout,
			len(a.acked), len(letters), len(a.placed))
	}
}

// check compares the dead letters with the records: each poison record
// once, from its place in the source with its deliveries; every other
// record acked; and the source has nothing left to deliver.
func (a *deadAudit) check(t *testing.T, letters []client.Message) {
	t.Helper()
	lettered := map[string]int{}
	for _, m := range letters {
		id := messageID(t, m)
		lettered[id]++
		require.True(t, deadPoison(id), "%s is in %s but was never nacked", id, deadTopic)
		require.NotNil(t, m.DeadLetter, "%s: a dead letter names its origin", id)
		want := client.DeadLetter{Topic: deadSource, Partition: a.placed[id].Partition, Offset: a.placed[id].Offset, DeliveryCount: deadMaxDeliveries}
		require.Equal(t, want, *m.DeadLetter, "%s: dead_letter origin", id)
	}
	for _, id := range slices.Sorted(maps.Keys(a.placed)) {
		if deadPoison(id) {
			require.Equal(t, 1, lettered[id], "%s: poison, in %s once", id, deadTopic)
		} else {
			require.Contains(t, a.acked, id, "%s: acked", id)
		}
	}
}

// readDeadLetters replays every partition of the dead-letter topic.
func readDeadLetters(ctx context.Context, t *testing.T, n *clusterNode) []client.Message {
	t.Helper()
	var letters []client.Message
	for partition := range deadPartitions {
		for offset := int64(0); ; offset++ {
			m, err := n.client.Replay(ctx, deadTopic, partition, offset)
			if err != nil {
				require.NoError(t, ctx.Err(), "replay %s/%d@%d: %v", deadTopic, partition, offset, err)
				require.NoError(t, proc.SleepContext(ctx, retryPause))
				offset--
				continue
			}
			if m == nil {
				break
			}
			letters = append(letters, *m)
		}
	}
	return letters
}

// messageID is the record's payload: the test's records are their ids.
func messageID(t *testing.T, m client.Message) string {
	t.Helper()
	payload, err := m.Payload()
	require.NoError(t, err)
	var id string
	if json.Valid(payload) && json.Unmarshal(payload, &id) == nil {
		return id
	}
	return string(payload)
}
