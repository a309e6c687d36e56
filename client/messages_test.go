package client

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProduceRequestAndPlacement(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202, Body: `{"partition":2,"offset":41}`})
	placement, err := server.client().Produce(context.Background(), "orders", []byte("hello world"),
		ProduceOptions{Key: "user-7", Partition: Ptr(2)})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "POST", seen.Method)
	assert.Equal(t, "/v1/topics/orders/produce", seen.Path)
	assert.Equal(t, "key=user-7&partition=2", seen.Query)
	assert.Equal(t, "hello world", seen.Body)
	assert.Equal(t, "application/octet-stream", seen.ContentType)
	assert.Equal(t, Placement{Partition: 2, Offset: 41}, placement)
}

func TestProduceKeylessSendsNoQuery(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202, Body: `{"partition":0,"offset":0}`})
	_, err := server.client().Produce(context.Background(), "orders", []byte("x"), ProduceOptions{})
	require.NoError(t, err)
	assert.Empty(t, server.only().Query)
}

func TestProduceEmptyAcceptedBody(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202})
	placement, err := server.client().Produce(context.Background(), "orders", []byte("x"), ProduceOptions{})
	require.NoError(t, err)
	assert.Equal(t, Placement{Partition: -1, Offset: -1}, placement)
}

func TestProduceErrors(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 413, Body: `{"error":"request body too large"}`})
	_, err := server.client().Produce(context.Background(), "orders", []byte("x"), ProduceOptions{})
	assert.True(t, IsStatus(err, 413))
	assert.EqualError(t, err, "http 413: request body too large")
}

func TestProduceBatchSendsNDJSON(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202,
		Body: `{"accepted":2,"records":[{"partition":1,"offset":7},{"partition":0,"offset":3}]}`})
	records := []BatchRecord{
		NewBatchRecord([]byte(`{"id":1}`), ProduceOptions{Key: "k1"}),
		NewBatchRecord([]byte("plain <text>"), ProduceOptions{Partition: Ptr(0)}),
	}
	result, err := server.client().ProduceBatch(context.Background(), "orders", records)
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "POST", seen.Method)
	assert.Equal(t, "/v1/topics/orders/produce", seen.Path)
	assert.Equal(t, "application/x-ndjson", seen.ContentType)
	lines := strings.Split(strings.TrimSuffix(seen.Body, "\n"), "\n")
	require.Len(t, lines, 2)
	assert.JSONEq(t, `{"key":"k1","payload":{"id":1}}`, lines[0])
	encoded := base64.StdEncoding.EncodeToString([]byte("plain <text>"))
	assert.JSONEq(t, `{"partition":0,"payload_base64":"`+encoded+`"}`, lines[1])
	assert.Equal(t, BatchResult{Accepted: 2, Records: []Placement{{1, 7}, {0, 3}}}, result)
}

func TestNewBatchRecordKeepsBytesExact(t *testing.T) {
	cases := []struct {
		body       string
		wantInline bool
	}{
		{`{"a":1}`, true},
		{`[1,2]`, true},
		{`{"a": 1}`, false}, // spacing would be lost by compaction
		{`"quoted"`, false}, // a JSON string could be read as its text
		{`42`, false},
		{"not json", false},
		{"{broken", false},
	}
	for _, tc := range cases {
		record := NewBatchRecord([]byte(tc.body), ProduceOptions{})
		if tc.wantInline {
			assert.Equal(t, tc.body, string(record.Payload), tc.body)
			assert.Nil(t, record.PayloadBase64, tc.body)
		} else {
			assert.Equal(t, tc.body, string(record.PayloadBase64), tc.body)
			assert.Nil(t, record.Payload, tc.body)
		}
	}
}

func TestProduceBatchRefusesBadBatches(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 202, Body: `{"accepted":0}`})
	c := server.client()
	_, err := c.ProduceBatch(context.Background(), "t", nil)
	assert.ErrorIs(t, err, ErrBatchEmpty)
	tooMany := make([]BatchRecord, batchRecordsMax+1)
	for i := range tooMany {
		tooMany[i] = NewBatchRecord([]byte("x"), ProduceOptions{})
	}
	_, err = c.ProduceBatch(context.Background(), "t", tooMany)
	assert.ErrorIs(t, err, ErrBatchTooLarge)
	big := NewBatchRecord(bytes.Repeat([]byte("y"), 1<<20), ProduceOptions{})
	tooBig := []BatchRecord{big, big, big, big, big, big, big, big, big} // 9 MiB of payload: over the 8 MiB cap
	_, err = c.ProduceBatch(context.Background(), "t", tooBig)
	assert.ErrorIs(t, err, ErrBatchTooLarge)
	_, err = c.ProduceBatch(context.Background(), "t", []BatchRecord{{Key: "no payload"}})
	assert.ErrorContains(t, err, "exactly one of payload")
	assert.Empty(t, server.all(), "refused batches are never sent")
}

const messageJSON = `{"topic":"orders","partition":1,"offset":42,"key":"user-7",
"payload":{"id":7},"timestamp":1700000000,"timestamp_ms":1700000000123,
"receipt_handle":"1:42:3","delivery_count":2}`

func TestConsumeRequestAndMessage(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: messageJSON})
	message, err := server.client().Consume(context.Background(), "orders",
		ConsumeOptions{Wait: 1500 * time.Millisecond, Partition: Ptr(1)})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "GET", seen.Method)
	assert.Equal(t, "/v1/topics/orders/consume", seen.Path)
	assert.Equal(t, "partition=1&wait=1.5s", seen.Query)
	require.NotNil(t, message)
	assert.Equal(t, Message{Topic: "orders", Partition: 1, Offset: 42, Key: "user-7",
		RawPayload: []byte(`{"id":7}`), Timestamp: 1700000000, TimestampMs: 1700000000123,
		ReceiptHandle: "1:42:3", DeliveryCount: 2}, *message)
}

func TestConsumeNothingAvailable(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 204})
	message, err := server.client().Consume(context.Background(), "orders", ConsumeOptions{Wait: 10 * time.Second})
	require.NoError(t, err)
	assert.Nil(t, message)
	assert.Equal(t, "wait=10s", server.only().Query)
}

func TestConsumeBatch(t *testing.T) {
	server := newRecorder(t,
		cannedReply{Status: 200, Body: `{"messages":[` + messageJSON + `,` + messageJSON + `]}`},
		cannedReply{Status: 200, Body: `{"messages":[]}`})
	c := server.client()
	messages, err := c.ConsumeBatch(context.Background(), "orders", 50, ConsumeOptions{Wait: 2 * time.Second})
	require.NoError(t, err)
	assert.Len(t, messages, 2)
	assert.Equal(t, "1:42:3", messages[1].ReceiptHandle)
	messages, err = c.ConsumeBatch(context.Background(), "orders", 1, ConsumeOptions{})
	require.NoError(t, err)
	assert.Empty(t, messages)
	requests := server.all()
	assert.Equal(t, "max=50&wait=2s", requests[0].Query)
	assert.Equal(t, "max=1&wait=0s", requests[1].Query)
}

func TestConsumeBatchRefusesBadMax(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"messages":[]}`})
	for _, max := range []int{0, -1, 101} {
		_, err := server.client().ConsumeBatch(context.Background(), "t", max, ConsumeOptions{})
		assert.ErrorIs(t, err, ErrConsumeMax, max)
	}
	assert.Empty(t, server.all())
}

func TestReplay(t *testing.T) {
	server := newRecorder(t,
		cannedReply{Status: 200, Body: `{"topic":"orders","partition":2,"offset":9,"payload":"hi","timestamp":1}`},
		cannedReply{Status: 204},
		cannedReply{Status: 410, Body: `{"error":"offset 1 aged out of retention (oldest retained: 5)"}`})
	c := server.client()
	message, err := c.Replay(context.Background(), "orders", 2, 9)
	require.NoError(t, err)
	require.NotNil(t, message)
	assert.Empty(t, message.ReceiptHandle)
	message, err = c.Replay(context.Background(), "orders", 2, 10)
	require.NoError(t, err)
	assert.Nil(t, message, "204 past the high watermark")
	_, err = c.Replay(context.Background(), "orders", 2, 1)
	assert.True(t, IsStatus(err, 410))
	assert.ErrorContains(t, err, "oldest retained: 5")
	requests := server.all()
	assert.Equal(t, "offset=9&partition=2", requests[0].Query)
	assert.Equal(t, "/v1/topics/orders/consume", requests[0].Path)
}

func TestAckExtendNackQueryForms(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 204})
	c := server.client()
	require.NoError(t, c.Ack(context.Background(), "orders", "1:42:3"))
	require.NoError(t, c.Extend(context.Background(), "orders", "1:42:3"))
	require.NoError(t, c.Nack(context.Background(), "orders", "1:42:3"))
	requests := server.all()
	require.Len(t, requests, 3)
	for _, seen := range requests {
		assert.Equal(t, "POST", seen.Method)
		assert.Equal(t, "/v1/topics/orders/ack", seen.Path)
		assert.Empty(t, seen.Body)
	}
	assert.Equal(t, "receipt_handle=1%3A42%3A3", requests[0].Query)
	assert.Equal(t, "extend=true&receipt_handle=1%3A42%3A3", requests[1].Query)
	assert.Equal(t, "extend=0&receipt_handle=1%3A42%3A3", requests[2].Query)
}

func TestAckStale(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 410, Body: `{"error":"receipt handle is stale"}`})
	err := server.client().Ack(context.Background(), "orders", "1:42:3")
	assert.True(t, IsStatus(err, 410))
}

func TestAckBatch(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200,
		Body: `{"results":[{"receipt_handle":"1:1:1","status":204},{"receipt_handle":"1:2:1","status":410}]}`})
	c := server.client()
	results, err := c.AckBatch(context.Background(), "orders", []string{"1:1:1", "1:2:1"}, AckModeCommit)
	require.NoError(t, err)
	assert.Equal(t, []AckResult{{ReceiptHandle: "1:1:1", Status: 204}, {ReceiptHandle: "1:2:1", Status: 410}}, results)
	_, err = c.AckBatch(context.Background(), "orders", []string{"1:1:1"}, AckModeRelease)
	require.NoError(t, err)
	requests := server.all()
	assert.Equal(t, "/v1/topics/orders/ack", requests[0].Path)
	assert.Empty(t, requests[0].Query)
	assert.Equal(t, "application/json", requests[0].ContentType)
	assert.JSONEq(t, `{"receipt_handles":["1:1:1","1:2:1"]}`, requests[0].Body)
	assert.JSONEq(t, `{"receipt_handles":["1:1:1"],"extend":"0"}`, requests[1].Body)
	_, err = c.AckBatch(context.Background(), "orders", nil, AckModeExtend)
	assert.ErrorIs(t, err, ErrBatchTooLarge)
	assert.Len(t, server.all(), 2)
}

func TestMessagePayloadDecoding(t *testing.T) {
	binary := []byte{0x00, 0xff, 0x10}
	cases := []struct {
		name     string
		message  Message
		want     string
		wantFail bool
	}{
		{"json object", Message{RawPayload: []byte(`{"a":1}`)}, `{"a":1}`, false},
		{"json number", Message{RawPayload: []byte(`12`)}, `12`, false},
		{"json string", Message{RawPayload: []byte(`"h\u00e9llo\n"`)}, "héllo\n", false},
		{"base64", Message{RawPayload: []byte(`"` + base64.StdEncoding.EncodeToString(binary) + `"`),
			PayloadEncoding: "base64"}, string(binary), false},
		{"bad base64", Message{RawPayload: []byte(`"!!"`), PayloadEncoding: "base64"}, "", true},
		{"base64 not a string", Message{RawPayload: []byte(`12`), PayloadEncoding: "base64"}, "", true},
		{"unknown encoding", Message{RawPayload: []byte(`"x"`), PayloadEncoding: "rot13"}, "", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			payload, err := tc.message.Payload()
			if tc.wantFail {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(payload))
		})
	}
	assert.True(t, Message{PayloadEncoding: "base64"}.IsBinary())
	assert.False(t, Message{}.IsBinary())
}

func TestMessageTime(t *testing.T) {
	withMillis := Message{Timestamp: 1700000000, TimestampMs: 1700000000123}
	assert.Equal(t, int64(1700000000123), withMillis.Time().UnixMilli())
	secondsOnly := Message{Timestamp: 1700000000}
	assert.Equal(t, int64(1700000000000), secondsOnly.Time().UnixMilli())
}
