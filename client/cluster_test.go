package client

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClusterMembers(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"members":[
	 {"id":"n1","addr":"10.0.0.1:7943","status":"alive","draining":false,"owned_partitions":4,"outbound_moves":0},
	 {"id":"n2","addr":"10.0.0.2:7943","status":"dead","draining":true,"owned_partitions":1,"outbound_moves":1}]}`})
	members, err := server.client().ClusterMembers(context.Background())
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "GET", seen.Method)
	assert.Equal(t, "/v1/cluster/members", seen.Path)
	assert.Equal(t, []Member{
		{ID: "n1", Addr: "10.0.0.1:7943", Status: "alive", OwnedPartitions: 4},
		{ID: "n2", Addr: "10.0.0.2:7943", Status: "dead", Draining: true, OwnedPartitions: 1, OutboundMoves: 1},
	}, members)
}

func TestClusterMoves(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: `{"moves":[
	 {"topic":"orders","partition":2,"from":"n1","to":"n3","phase":"catchup",
	  "bytes_copied":100,"bytes_total":400,"started_at_ms":1700000000000},
	 {"topic":"logs","partition":0,"from":"n2","to":"n1"}]}`})
	moves, err := server.client().ClusterMoves(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "/v1/cluster/moves", server.only().Path)
	assert.Equal(t, []Move{
		{Topic: "orders", Partition: 2, From: "n1", To: "n3", Phase: "catchup", BytesCopied: 100,
			BytesTotal: 400, StartedAtMs: 1700000000000},
		{Topic: "logs", Partition: 0, From: "n2", To: "n1"},
	}, moves)
}

func TestDecommissionAndCancel(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 204})
	c := server.client()
	require.NoError(t, c.Decommission(context.Background(), "n2", false))
	require.NoError(t, c.Decommission(context.Background(), "n2", true))
	requests := server.all()
	require.Len(t, requests, 2)
	assert.Equal(t, "POST", requests[0].Method)
	assert.Equal(t, "DELETE", requests[1].Method)
	for _, seen := range requests {
		assert.Equal(t, "/v1/cluster/members/n2/decommission", seen.Path)
	}
}

func TestDecommissionUnknownMember(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 404, Body: `{"error":"not found"}`})
	err := server.client().Decommission(context.Background(), "n9", false)
	assert.EqualError(t, err, "http 404: not found")
}

func TestHealthAndReadiness(t *testing.T) {
	server := newRecorder(t,
		cannedReply{Status: 200, Body: `{"status":"ok"}`},
		cannedReply{Status: 503, Body: `{"error":"not ready: no raft leader"}`})
	c := server.client()
	health, err := c.Healthz(context.Background())
	require.NoError(t, err)
	assert.Equal(t, Health{Status: "ok"}, health)
	_, err = c.Readyz(context.Background())
	assert.True(t, IsStatus(err, 503))
	assert.ErrorContains(t, err, "no raft leader")
	requests := server.all()
	assert.Equal(t, "/healthz", requests[0].Path)
	assert.Equal(t, "/readyz", requests[1].Path)
}

const userJSON = `{"username":"bob","grants":[{"action":"produce","patterns":["orders*"]}],
"root":false,"created_at_ms":1,"updated_at_ms":2}`

func TestCreateUser(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 201, Body: userJSON})
	user, err := server.client().CreateUser(context.Background(), CreateUserRequest{
		Username: "bob", Password: "pw", Grants: []Grant{{Action: "produce", Patterns: []string{"orders*"}}},
	})
	require.NoError(t, err)
	seen := server.only()
	assert.Equal(t, "POST", seen.Method)
	assert.Equal(t, "/v1/users", seen.Path)
	assert.JSONEq(t, `{"username":"bob","password":"pw","grants":[{"action":"produce","patterns":["orders*"]}]}`, seen.Body)
	assert.Equal(t, User{Username: "bob", Grants: []Grant{{Action: "produce", Patterns: []string{"orders*"}}},
		CreatedAtMs: 1, UpdatedAtMs: 2}, user)
}

func TestCreateUserWithoutGrantsSendsEmptyList(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 201, Body: userJSON})
	_, err := server.client().CreateUser(context.Background(), CreateUserRequest{Username: "bob", Password: "pw"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"username":"bob","password":"pw","grants":[]}`, server.only().Body)
}

func TestListGetDeleteUsers(t *testing.T) {
	server := newRecorder(t,
		cannedReply{Status: 200, Body: `[` + userJSON + `]`},
		cannedReply{Status: 200, Body: userJSON},
		cannedReply{Status: 204})
	c := server.client()
	users, err := c.ListUsers(context.Background())
	require.NoError(t, err)
	require.Len(t, users, 1)
	assert.Equal(t, "bob", users[0].Username)
	_, err = c.GetUser(context.Background(), "bob")
	require.NoError(t, err)
	require.NoError(t, c.DeleteUser(context.Background(), "bob"))
	requests := server.all()
	assert.Equal(t, "GET /v1/users", requests[0].Method+" "+requests[0].Path)
	assert.Equal(t, "GET /v1/users/bob", requests[1].Method+" "+requests[1].Path)
	assert.Equal(t, "DELETE /v1/users/bob", requests[2].Method+" "+requests[2].Path)
}

func TestSetGrantsAndPassword(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 200, Body: userJSON}, cannedReply{Status: 204})
	c := server.client()
	_, err := c.SetGrants(context.Background(), "bob", []Grant{{Action: "admin"}})
	require.NoError(t, err)
	require.NoError(t, c.SetPassword(context.Background(), "bob", "", "new"))
	requests := server.all()
	assert.Equal(t, "PUT", requests[0].Method)
	assert.Equal(t, "/v1/users/bob/grants", requests[0].Path)
	assert.JSONEq(t, `{"grants":[{"action":"admin"}]}`, requests[0].Body)
	assert.Equal(t, "/v1/users/bob/password", requests[1].Path)
	assert.JSONEq(t, `{"new_password":"new"}`, requests[1].Body)
}

func TestUserForbidden(t *testing.T) {
	server := newRecorder(t, cannedReply{Status: 403, Body: `{"error":"forbidden"}`})
	_, err := server.client().SetGrants(context.Background(), "admin", nil)
	assert.True(t, IsStatus(err, 403))
	assert.JSONEq(t, `{"grants":[]}`, server.only().Body)
}

func TestMetricsReadsThePageTheFamiliesNamed(t *testing.T) {
	page := "# TYPE narad_storage_fsyncs_total counter\nnarad_storage_fsyncs_total 7\n"
	server := newRecorder(t, cannedReply{Status: 200, Body: page}, cannedReply{Status: 200, Body: page},
		cannedReply{Status: 503, Body: `{"error":"shutting down"}`})
	c := server.client()
	body, err := c.Metrics(context.Background(), "narad_storage_fsyncs_total", "narad_loop_gather_waits_total")
	require.NoError(t, err)
	assert.Equal(t, page, string(body))
	_, err = c.Metrics(context.Background())
	require.NoError(t, err)
	_, err = c.Metrics(context.Background())
	assert.True(t, IsStatus(err, 503))
	requests := server.all()
	assert.Equal(t, "/metrics", requests[0].Path)
	assert.Equal(t, "name%5B%5D=narad_storage_fsyncs_total&name%5B%5D=narad_loop_gather_waits_total", requests[0].Query)
	assert.Empty(t, requests[1].Query, "no filter: the whole page")
}
