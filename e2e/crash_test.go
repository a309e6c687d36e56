package e2e

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
)

// TestKillNineLosesNothingAcknowledged produces records with several
// concurrent producers (every one answered 202), kills the server with
// SIGKILL, restarts it on the same data directory and consumes: every
// acknowledged record must come back.
func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	const producers, perProducer = 8, 100
	dataDir := t.TempDir()
	first := startServer(t, dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err := first.client.CreateTopic(ctx, client.CreateTopicRequest{Name: "crash", Partitions: 4})
	require.NoError(t, err)

	acknowledged := produceConcurrently(ctx, t, first.client, producers, perProducer)
	require.Len(t, acknowledged, producers*perProducer)
	first.kill()

	second := startServer(t, dataDir)
	consumed := drain(ctx, t, second.client, len(acknowledged))
	for payload := range acknowledged {
		require.True(t, consumed[payload], "record %s was answered 202 before kill -9 and is gone", payload)
	}
}

func produceConcurrently(ctx context.Context, t *testing.T, c *client.Client, producers, perProducer int) map[string]bool {
	var mu sync.Mutex
	acknowledged := map[string]bool{}
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range perProducer {
				payload := fmt.Sprintf("p%d-%d", p, i)
				if _, err := c.Produce(ctx, "crash", []byte(payload), client.ProduceOptions{}); err != nil {
					t.Errorf("produce %s: %v", payload, err)
					return
				}
				mu.Lock()
				acknowledged[payload] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return acknowledged
}

// drain consumes and acks until want distinct records were seen or the
// queue stays empty for a few polls.
func drain(ctx context.Context, t *testing.T, c *client.Client, want int) map[string]bool {
	consumed := map[string]bool{}
	for empty := 0; len(consumed) < want && empty < 3; {
		messages, err := c.ConsumeBatch(ctx, "crash", 100, client.ConsumeOptions{Wait: 500 * time.Millisecond})
		require.NoError(t, err)
		if len(messages) == 0 {
			empty++
			continue
		}
		var handles []string
		for _, m := range messages {
			payload, err := m.Payload()
			require.NoError(t, err)
			consumed[string(payload)] = true
			handles = append(handles, m.ReceiptHandle)
		}
		_, err = c.AckBatch(ctx, "crash", handles, client.AckModeCommit)
		require.NoError(t, err)
	}
	return consumed
}
