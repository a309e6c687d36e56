package client

import (
	"context"
	"net/http"
	"net/url"
)

// ClusterMembers lists the cluster's members (GET /v1/cluster/members).
func (c *Client) ClusterMembers(ctx context.Context) ([]Member, error) {
	var reply struct {
		Members []Member `json:"members"`
	}
	err := c.getJSON(ctx, "/v1/cluster/members", nil, &reply)
	return reply.Members, err
}

// ClusterMoves lists the partition moves in flight (GET /v1/cluster/moves).
func (c *Client) ClusterMoves(ctx context.Context) ([]Move, error) {
	var reply struct {
		Moves []Move `json:"moves"`
	}
	err := c.getJSON(ctx, "/v1/cluster/moves", nil, &reply)
	return reply.Moves, err
}

// Decommission marks a member as draining (POST), or with cancel clears the
// mark (DELETE) on /v1/cluster/members/{id}/decommission; 204 either way.
func (c *Client) Decommission(ctx context.Context, memberID string, cancel bool) error {
	method := http.MethodPost
	if cancel {
		method = http.MethodDelete
	}
	path := "/v1/cluster/members/" + url.PathEscape(memberID) + "/decommission"
	return c.sendJSON(ctx, method, path, nil, nil, http.StatusNoContent)
}

// Healthz checks liveness (GET /healthz). A node shutting down answers 503,
// returned as *Error with the status text as message.
func (c *Client) Healthz(ctx context.Context) (Health, error) {
	var health Health
	err := c.getJSON(ctx, "/healthz", nil, &health)
	return health, err
}

// Readyz checks readiness (GET /readyz). Not ready is a 503 *Error.
func (c *Client) Readyz(ctx context.Context) (Health, error) {
	var health Health
	err := c.getJSON(ctx, "/readyz", nil, &health)
	return health, err
}

// Metrics reads the node's Prometheus exposition (GET /metrics, which
// needs no credentials), only the families named when names are given
// (its name[] filter). The page is returned as text, at most the reply
// bound of every answer.
func (c *Client) Metrics(ctx context.Context, names ...string) ([]byte, error) {
	var query url.Values
	if len(names) > 0 {
		query = url.Values{"name[]": names}
	}
	_, body, err := c.send(ctx, request{method: http.MethodGet, path: "/metrics", query: query}, http.StatusOK)
	return body, err
}

// CreateUser creates a user (POST /v1/users, 201).
func (c *Client) CreateUser(ctx context.Context, req CreateUserRequest) (User, error) {
	if req.Grants == nil {
		req.Grants = []Grant{} // the server wants a list, not null
	}
	var user User
	err := c.sendJSON(ctx, http.MethodPost, "/v1/users", req, &user, http.StatusCreated)
	return user, err
}

// ListUsers lists every user (GET /v1/users).
func (c *Client) ListUsers(ctx context.Context) ([]User, error) {
	var users []User
	err := c.getJSON(ctx, "/v1/users", nil, &users)
	return users, err
}

// GetUser returns one user (GET /v1/users/{u}).
func (c *Client) GetUser(ctx context.Context, username string) (User, error) {
	var user User
	err := c.getJSON(ctx, userPath(username, ""), nil, &user)
	return user, err
}

// DeleteUser deletes a user (DELETE /v1/users/{u}, 204).
func (c *Client) DeleteUser(ctx context.Context, username string) error {
	return c.sendJSON(ctx, http.MethodDelete, userPath(username, ""), nil, nil, http.StatusNoContent)
}

// SetGrants replaces a user's grants (PUT /v1/users/{u}/grants, 200).
func (c *Client) SetGrants(ctx context.Context, username string, grants []Grant) (User, error) {
	if grants == nil {
		grants = []Grant{} // the server wants a list, not null
	}
	body := struct {
		Grants []Grant `json:"grants"`
	}{grants}
	var user User
	err := c.sendJSON(ctx, http.MethodPut, userPath(username, "/grants"), body, &user, http.StatusOK)
	return user, err
}

// SetPassword changes a user's password (PUT /v1/users/{u}/password, 204).
// currentPassword may be "" when an admin resets another user's password.
func (c *Client) SetPassword(ctx context.Context, username, currentPassword, newPassword string) error {
	body := struct {
		CurrentPassword string `json:"current_password,omitempty"`
		NewPassword     string `json:"new_password"`
	}{currentPassword, newPassword}
	return c.sendJSON(ctx, http.MethodPut, userPath(username, "/password"), body, nil, http.StatusNoContent)
}

func userPath(username, suffix string) string {
	return "/v1/users/" + url.PathEscape(username) + suffix
}
