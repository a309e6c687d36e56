package client

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const topicJSON = `{"name":"orders","partitions":3,"retention_ms":604800000,
"visibility_timeout_ms":30000,"max_in_flight_per_partition":1024,
"max_acked_ahead_per_partition":1024,"created_at":1700000000,"owner":"admin",
"role":"standalone"}`

func TestCreateTopicSendsOnlyGivenFields(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 201, Body: topicJSON})
	topic, err := server.client().CreateTopic(context.Background(), CreateTopicRequest{
		Name: "orders", Partitions: 6, VisibilityTimeoutMs: 45000,
	})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "POST", seen.Method)
	assert.Equal(t, "/v1/topics", seen.Path)
	assert.Equal(t, "application/json", seen.ContentType)
	assert.JSONEq(t, `{"name":"orders","partitions":6,"visibility_timeout_ms":45000}`, seen.Body)
	assert.Equal(t, Topic{
		Name: "orders", Partitions: 3, RetentionMs: 604800000, VisibilityTimeoutMs: 30000,
		MaxInFlightPerPartition: 1024, MaxAckedAheadPerPartition: 1024, CreatedAt: 1700000000,
		Owner: "admin", Role: "standalone",
	}, topic)
}

func TestCreateTopicConflict(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 409, Body: `{"error":"topic already exists"}`})
	_, err := server.client().CreateTopic(context.Background(), CreateTopicRequest{Name: "orders"})
	assert.True(t, IsStatus(err, 409))
	assert.EqualError(t, err, "http 409: topic already exists")
}

func TestListTopicsQuery(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200,
		Body: `{"topics":[` + topicJSON + `],"next_page_token":"orders"}`})
	page, err := server.client().ListTopics(context.Background(), 50, "a b")
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "GET", seen.Method)
	assert.Equal(t, "/v1/topics", seen.Path)
	assert.Equal(t, "limit=50&page_token=a+b", seen.Query)
	require.Len(t, page.Topics, 1)
	assert.Equal(t, "orders", page.Topics[0].Name)
	assert.Equal(t, "orders", page.NextPageToken)
}

func TestListTopicsDefaultsSendNoQuery(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"topics":[],"next_page_token":""}`})
	_, err := server.client().ListTopics(context.Background(), 0, "")
	require.NoError(t, err)
	assert.Empty(t, server.only().Query)
}

func TestAllTopicsFollowsPagination(t *testing.T) {
	server := newRecorder(t,
		cannedReply{Status: 200, Body: `{"topics":[{"name":"a"},{"name":"b"}],"next_page_token":"b"}`},
		cannedReply{Status: 200, Body: `{"topics":[{"name":"c"}],"next_page_token":"c"}`},
		cannedReply{Status: 200, Body: `{"topics":[],"next_page_token":""}`},
	)
	topics, err := server.client().AllTopics(context.Background())
	require.NoError(t, err)
	names := []string{}
	for _, topic := range topics {
		names = append(names, topic.Name)
	}
	assert.Equal(t, []string{"a", "b", "c"}, names)
	requests := server.all()
	require.Len(t, requests, 3)
	assert.Equal(t, "limit=1000", requests[0].Query)
	assert.Equal(t, "limit=1000&page_token=b", requests[1].Query)
	assert.Equal(t, "limit=1000&page_token=c", requests[2].Query)
}

func TestAllTopicsStopsOnStuckToken(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"topics":[{"name":"a"}],"next_page_token":"a"}`})
	_, err := server.client().AllTopics(context.Background())
	assert.ErrorIs(t, err, ErrPageTokenStuck)
	assert.Len(t, server.all(), 2, "one page, then the repeated token is detected")
}

func TestGetTopicWithPartitionStats(t *testing.T) {
	body := `{"name":"orders","partitions":3,"partition_stats":[
	 {"index":0,"segments":2,"oldest_offset":5,"next_offset":90,"high_watermark":90,
	  "size_bytes":4096,"oldest_segment_at":1700000001,"owner_node":"n1","available":true},
	 {"index":1,"segments":0,"oldest_offset":0,"next_offset":0,"high_watermark":0,
	  "size_bytes":0,"owner_node":"n2","available":false},
	 {"index":2,"segments":1,"oldest_offset":0,"next_offset":3,"high_watermark":3,
	  "size_bytes":100,"owner_node":"n3"}]}`
	server := newRecorder(t, cannedReply{Status: 200, Body: body})
	topic, err := server.client().GetTopic(context.Background(), "orders", nil)
	require.NoError(t, err)
	assert.Equal(t, "/v1/topics/orders", server.only().Path)
	require.Len(t, topic.PartitionStats, 3)
	first := topic.PartitionStats[0]
	assert.Equal(t, PartitionStats{Index: 0, Segments: 2, OldestOffset: 5, NextOffset: 90, HighWatermark: 90,
		SizeBytes: 4096, OldestSegmentAt: 1700000001, OwnerNode: "n1", Available: Ptr(true)}, first)
	assert.True(t, first.IsAvailable())
	assert.False(t, topic.PartitionStats[1].IsAvailable())
	assert.True(t, topic.PartitionStats[2].IsAvailable(), "absent available means available")
}

func TestGetTopicOnePartitionAndEscaping(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"name":"a b"}`})
	_, err := server.client().GetTopic(context.Background(), "a b", Ptr(2))
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "/v1/topics/a%20b", seen.Path)
	assert.Equal(t, "partition=2", seen.Query)
}

func TestAlterTopicSendsOnlySetFields(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: topicJSON})
	_, err := server.client().AlterTopic(context.Background(), "orders", AlterTopicRequest{
		VisibilityTimeoutMs: Ptr(int64(60000)), Partitions: Ptr(6),
	})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "PATCH", seen.Method)
	assert.Equal(t, "/v1/topics/orders", seen.Path)
	assert.JSONEq(t, `{"visibility_timeout_ms":60000,"partitions":6}`, seen.Body)
}

func TestAlterTopicSendsExplicitZero(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: topicJSON})
	_, err := server.client().AlterTopic(context.Background(), "orders", AlterTopicRequest{RetentionMs: Ptr(int64(0))})
	require.NoError(t, err)
	assert.JSONEq(t, `{"retention_ms":0}`, server.only().Body, "a set zero means server default, so it must be sent")
}

func TestAlterTopicRequestIsEmpty(t *testing.T) {
	assert.True(t, AlterTopicRequest{}.IsEmpty())
	assert.False(t, AlterTopicRequest{MaxAckedAheadPerPartition: Ptr(1)}.IsEmpty())
	assert.False(t, AlterTopicRequest{Schema: []byte(`{}`)}.IsEmpty())
}

func TestDeleteTopic(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 204})
	require.NoError(t, server.client().DeleteTopic(context.Background(), "orders"))
	seen := server.only()
	assert.Equal(t, "DELETE", seen.Method)
	assert.Equal(t, "/v1/topics/orders", seen.Path)
	assert.Empty(t, seen.Body)
}

func TestDeleteTopicNotFound(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 404, Body: `{"error":"topic not found"}`})
	err := server.client().DeleteTopic(context.Background(), "nope")
	assert.True(t, IsStatus(err, 404))
}

func TestTopicSchema(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"version":2,"schema":{"type":"object"}}`})
	schema, err := server.client().TopicSchema(context.Background(), "orders", 0)
	require.NoError(t, err)
	assert.Equal(t, TopicSchema{Version: 2, Schema: []byte(`{"type":"object"}`)}, schema)
	seen := server.only()
	assert.Equal(t, "GET", seen.Method)
	assert.Equal(t, "/v1/topics/orders/schema", seen.Path)
	assert.Empty(t, seen.Query, "version 0 asks for the latest")
}

func TestTopicSchemaVersion(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 404, Body: `{"error":"topic orders has no schema version 1"}`})
	_, err := server.client().TopicSchema(context.Background(), "orders", 1)
	assert.True(t, IsStatus(err, 404))
	assert.Equal(t, "version=1", server.only().Query)
}
