package client

import (
	"context"
	"net/http"
	"net/url"
)

// AttachChildRequest is the body of POST /v1/topics/{parent}/children
// (docs/api.md#fan-out-children).
type AttachChildRequest struct {
	Child string `json:"child"`
	// DelayMs makes the child a delay child: a record reaches it no
	// earlier than its commit in the parent plus the delay.
	DelayMs int64 `json:"delay_ms,omitempty"`
}

// ChildLag is one fan-out child with how far its cursors lag.
type ChildLag struct {
	Name        string `json:"name"`
	DelayMs     int64  `json:"delay_ms"`
	LagMessages uint64 `json:"lag_messages"`
	// LagComplete is false when some partition's cursor did not report:
	// LagMessages is then a lower bound.
	LagComplete bool `json:"lag_complete"`
}

// Children is the answer of GET /v1/topics/{parent}/children.
type Children struct {
	Parent   string     `json:"parent"`
	Children []ChildLag `json:"children"`
}

// AttachChild makes child a fan-out child of parent (POST
// /v1/topics/{parent}/children, 200) and returns the parent.
func (c *Client) AttachChild(ctx context.Context, parent string, req AttachChildRequest) (Topic, error) {
	var topic Topic
	err := c.sendJSON(ctx, http.MethodPost, topicPath(parent, "/children"), req, &topic, http.StatusOK)
	return topic, err
}

// DetachChild removes the link from parent to child (DELETE
// /v1/topics/{parent}/children/{child}, 204); both topics stay.
func (c *Client) DetachChild(ctx context.Context, parent, child string) error {
	return c.sendJSON(ctx, http.MethodDelete, topicPath(parent, "/children/"+url.PathEscape(child)), nil, nil, http.StatusNoContent)
}

// ListChildren lists a parent's children with their lag (GET
// /v1/topics/{parent}/children).
func (c *Client) ListChildren(ctx context.Context, parent string) (Children, error) {
	var children Children
	err := c.getJSON(ctx, topicPath(parent, "/children"), nil, &children)
	return children, err
}
