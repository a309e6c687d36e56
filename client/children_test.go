package client

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAttachChildSendsTheBody(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"name":"orders","partitions":3,"role":"parent","children":["a b"]}`})
	parent, err := server.client().AttachChild(context.Background(), "orders", AttachChildRequest{Child: "a b", DelayMs: 60_000})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "POST", seen.Method)
	assert.Equal(t, "/v1/topics/orders/children", seen.Path)
	assert.JSONEq(t, `{"child":"a b","delay_ms":60000}`, seen.Body)
	assert.Equal(t, []string{"a b"}, parent.Children)
}

func TestDetachChildEscapesTheChild(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 204})
	require.NoError(t, server.client().DetachChild(context.Background(), "orders", "a/b"))
	seen := server.only()
	assert.Equal(t, "DELETE", seen.Method)
	assert.Equal(t, "/v1/topics/orders/children/a%2Fb", seen.Path)
}

func TestDetachChildNotAttached(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 404, Body: `{"error":"not attached"}`})
	err := server.client().DetachChild(context.Background(), "orders", "audit")
	assert.True(t, IsStatus(err, 404))
}

func TestListChildrenDecodesLag(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200,
		Body: `{"parent":"orders","children":[{"name":"audit","delay_ms":0,"lag_messages":7,"lag_complete":true}]}`})
	children, err := server.client().ListChildren(context.Background(), "orders")
	require.NoError(t, err)
	assert.Equal(t, "GET", server.only().Method)
	assert.Equal(t, Children{Parent: "orders", Children: []ChildLag{{Name: "audit", LagMessages: 7, LagComplete: true}}}, children)
}
