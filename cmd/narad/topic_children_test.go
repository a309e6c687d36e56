package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTopicAttachSendsTheChildAndDelay(t *testing.T) {
	h := newHarness(t)
	parentJSON := `{"name":"orders","partitions":3,"retention_ms":604800000,"visibility_timeout_ms":30000,
		"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":1024,"created_at":1700000000,"role":"parent","children":["later"]}`
	broker := newFakeBroker(t).on("POST /v1/topics/orders/children", reply{200, parentJSON})
	h.againstOK(broker, "topic", "attach", "orders", "later", "--delay", "15m")
	requests := broker.seen("POST /v1/topics/orders/children")
	require.Len(t, requests, 1)
	assert.JSONEq(t, `{"child":"later","delay_ms":900000}`, requests[0].Body)
	assert.JSONEq(t, parentJSON, h.stdout.String())
}

func TestTopicAttachBadInput(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "topic", "attach", "orders"))
	assert.Equal(t, 2, h.against(broker, "topic", "attach", "orders", "later", "--delay", "-1m"))
	assert.Empty(t, broker.seen(""), "nothing is sent for bad input")
}

func TestTopicAttachConflictIsReported(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics/orders/children",
		reply{409, `{"error":"fan-out role conflict: topic \"later\" is already a child of \"orders\""}`})
	assert.Equal(t, 1, h.against(broker, "topic", "attach", "orders", "later"))
	assert.Contains(t, h.stderr.String(), "narad: http 409: fan-out role conflict")
}

func TestTopicDetachIsSilent(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("DELETE /v1/topics/orders/children/later", reply{204, ""})
	h.againstOK(broker, "topic", "detach", "orders", "later")
	assert.Len(t, broker.seen("DELETE /v1/topics/orders/children/later"), 1)
	assert.Empty(t, h.stdout.String())
}

func TestTopicChildrenPrintsTheLag(t *testing.T) {
	h := newHarness(t)
	body := `{"parent":"orders","children":[{"name":"later","delay_ms":900000,"lag_messages":4,"lag_complete":true}]}`
	broker := newFakeBroker(t).on("GET /v1/topics/orders/children", reply{200, body})
	h.againstOK(broker, "topic", "children", "orders")
	assert.JSONEq(t, body, h.stdout.String())
}
