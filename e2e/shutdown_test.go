package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
)

// TestSIGTERMShutsDownGracefully: a SIGTERM answers a parked long poll,
// exits 0, and persists acknowledgements, so nothing acked is delivered
// again after the restart.
func TestSIGTERMShutsDownGracefully(t *testing.T) {
	dataDir := t.TempDir()
	first := startServer(t, dataDir)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := first.client.CreateTopic(ctx, client.CreateTopicRequest{Name: "crash"})
	require.NoError(t, err)
	for i := range 20 {
		_, err := first.client.Produce(ctx, "crash", []byte(fmt.Sprint(i)), client.ProduceOptions{})
		require.NoError(t, err)
	}
	acked := map[string]bool{}
	for range 10 {
		m, err := first.client.Consume(ctx, "crash", client.ConsumeOptions{})
		require.NoError(t, err)
		require.NotNil(t, m)
		require.NoError(t, first.client.Ack(ctx, "crash", m.ReceiptHandle))
		payload, err := m.Payload()
		require.NoError(t, err)
		acked[string(payload)] = true
	}
	// Reserve the other ten without acking, then park a long poll.
	_, err = first.client.ConsumeBatch(ctx, "crash", 10, client.ConsumeOptions{})
	require.NoError(t, err)
	parked := make(chan error, 1)
	go func() {
		_, err := first.client.Consume(ctx, "crash", client.ConsumeOptions{Wait: 30 * time.Second})
		parked <- err
	}()
	time.Sleep(200 * time.Millisecond) // let the poll park; either way it must not hang
	_, err = first.process.Terminate(serverStopTimeout)
	require.NoError(t, err, "a SIGTERM stops the server within %s", serverStopTimeout)
	require.NoError(t, first.process.ExitErr(), "a graceful stop exits 0")
	select {
	case <-parked: // answered or refused at shutdown
	case <-time.After(20 * time.Second):
		t.Fatal("a parked long poll kept the stop waiting")
	}

	second := startServer(t, dataDir)
	rest := drain(ctx, t, second.client, 20)
	for payload := range acked {
		require.False(t, rest[payload], "record %s was acked before SIGTERM and came back", payload)
	}
	require.Len(t, rest, 10, "the ten records reserved but not acked before the stop are delivered after it")
}
