package client

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// docs/api.md#batch-ack: a batch ack carries 1 to 1,000 handles, 413
// above. AckBatch refuses an out-of-range batch up front (as ProduceBatch
// and ConsumeBatch do), but its bound is 10,000: a batch of 1,001 to
// 10,000 handles is sent and the server refuses all of it (none acked).
func TestAckBatchRefusesMoreHandlesThanTheServerTakes(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 413, Body: `{"error":"batch ack has more than 1000 receipt handles"}`})
	handles := make([]string, 1001)
	for i := range handles {
		handles[i] = fmt.Sprintf("0:%d:1", i)
	}
	_, err := server.client().AckBatch(context.Background(), "orders", handles, AckModeCommit)
	assert.ErrorIs(t, err, ErrBatchTooLarge)
	assert.Equal(t, 0, len(server.all()), "a batch the server refuses whole is not sent")
}
