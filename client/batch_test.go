package client

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs/api.md#batch-produce caps a batch at 1,000 records and 8 MiB of
// payload; the raw NDJSON body may be 16 MiB (operations.md, fixed
// bounds). Seven text records of 1,000,000 bytes are 7,000,000 bytes of
// payload, under the cap, but travel base64-encoded (about 9.3 MB of
// body). ProduceBatch compares the encoded body with the payload cap and
// refuses the batch without sending it.
func TestProduceBatchAcceptsABatchWithinThePayloadCap(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202, Body: `{"accepted":7}`})
	record := NewBatchRecord(bytes.Repeat([]byte("y"), 1_000_000), ProduceOptions{})
	records := []BatchRecord{record, record, record, record, record, record, record}
	result, err := server.client().ProduceBatch(context.Background(), "t", records)
	require.NoError(t, err, "7,000,000 bytes of payload is within the 8 MiB payload cap")
	assert.Equal(t, 7, result.Accepted)
	require.Len(t, server.all(), 1, "the batch is sent")
}
