package main

import (
	"context"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
	"narad/wire"
)

func TestClusterMembersTable(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/cluster/members", reply{200, `{"members":[
	  {"id":"n1","addr":"10.0.0.1:7943","status":"alive","draining":false,"voter":true,"owned_partitions":12,"outbound_moves":0},
	  {"id":"node-2","addr":"10.0.0.2:7943","status":"dead","draining":true,"disk_low":true,"owned_partitions":3,"outbound_moves":2,"inbound_moves":1}]}`})
	h.againstOK(broker, "cluster", "members")
	assert.Equal(t, strings.Join([]string{
		"ID      ADDR           STATUS  DRAINING  VOTER  DISK LOW  PARTITIONS  OUTBOUND MOVES  INBOUND MOVES",
		"n1      10.0.0.1:7943  alive   -         yes    -         12          0               0",
		"node-2  10.0.0.2:7943  dead    yes       -      yes       3           2               1",
		""}, "\n"), h.stdout.String())
	h.againstOK(broker, "cluster", "members", "--json")
	assert.Contains(t, h.stdout.String(), `"owned_partitions": 12`)
}

func TestClusterMovesTable(t *testing.T) {
	h := newHarness(t)
	started := time.Date(2024, 1, 1, 12, 0, 0, 0, time.UTC)
	moves := []client.Move{
		{Topic: "orders", Partition: 2, From: "n1", To: "n3", Phase: "catchup", BytesCopied: 25, BytesTotal: 100,
			StartedAtMs: started.UnixMilli()},
		{Topic: "logs", Partition: 10, From: "n2", To: "n1"},
	}
	h.app.printMoves(moves, started.Add(95*time.Second))
	assert.Equal(t, strings.Join([]string{
		"TOPIC   PARTITION  FROM  TO  PHASE    COPIED  AGE",
		"orders  2          n1    n3  catchup  25%     1m35s",
		"logs    10         n2    n1  -        -       -",
		""}, "\n"), h.stdout.String())
}

// Property: COPIED is a share of at most 100 %. bytes_copied counts every
// byte the destination copied, those of segments the source's retention
// removed since included, while bytes_total is the source's size now: a
// catch-up that copied segments retention then removed showed 150 %.
func TestClusterMovesCopiedShareIsAtMostWhole(t *testing.T) {
	h := newHarness(t)
	moves := []client.Move{
		{Topic: "orders", Partition: 0, From: "n1", To: "n3", Phase: "catchup", BytesCopied: 150, BytesTotal: 100},
		{Topic: "orders", Partition: 1, From: "n1", To: "n3", Phase: "catchup", BytesCopied: 99, BytesTotal: 100},
	}
	h.app.printMoves(moves, time.Now())
	assert.Equal(t, strings.Join([]string{
		"TOPIC   PARTITION  FROM  TO  PHASE    COPIED  AGE",
		"orders  0          n1    n3  catchup  100%    -",
		"orders  1          n1    n3  catchup  99%     -",
		""}, "\n"), h.stdout.String())
}

func TestClusterMovesCommand(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/cluster/moves", reply{200, `{"moves":[]}`})
	h.againstOK(broker, "cluster", "moves")
	assert.Equal(t, "no moves in flight\n", h.stdout.String())
	h.againstOK(broker, "cluster", "moves", "--json")
	assert.Equal(t, "[]\n", h.stdout.String())
}

func TestClusterDecommission(t *testing.T) {
	h := newHarness(t)
	route := "/v1/cluster/members/n3/decommission"
	broker := newFakeBroker(t).on("POST "+route, reply{204, ""}).on("DELETE "+route, reply{204, ""}).
		on("GET /v1/cluster/members", membersReply(2, 1, "alive", true, true))
	h.againstOK(broker, "cluster", "decommission", "n3")
	assert.Contains(t, h.stderr.String(), "n3 is draining")
	h.againstOK(broker, "cluster", "decommission", "n3", "--cancel")
	assert.Contains(t, h.stderr.String(), "decommission of n3 cancelled")
	requests := broker.seen("")
	require.Len(t, requests, 4)
	assert.Equal(t, "POST", requests[0].Method)
	assert.Equal(t, "GET", requests[1].Method, "the members, to tell a drain from a decommission complete already")
	assert.Equal(t, "GET", requests[2].Method, "the members, to tell a drain cancelled from none")
	assert.Equal(t, "DELETE", requests[3].Method)

	// A retry after the retired member was forgotten: 204, and it is not listed.
	forgotten := newFakeBroker(t).on("POST "+route, reply{204, ""}).
		on("GET /v1/cluster/members", reply{200, `{"members":[{"id":"n1","status":"alive","voter":true}]}`})
	h.againstOK(forgotten, "cluster", "decommission", "n3")
	assert.Contains(t, h.stderr.String(), "n3's decommission is complete: it left the voters and is no longer a member")
	// The members cannot be read: the drain is assumed.
	unread := newFakeBroker(t).on("POST "+route, reply{204, ""}).on("GET /v1/cluster/members", reply{403, `{"error":"forbidden"}`})
	h.againstOK(unread, "cluster", "decommission", "n3")
	assert.Contains(t, h.stderr.String(), "n3 is draining")

	unknown := newFakeBroker(t).on("POST /v1/cluster/members/n9/decommission", reply{404, `{"error":"not found"}`})
	assert.Equal(t, 1, h.against(unknown, "cluster", "decommission", "n9"))
	assert.Equal(t, "narad: http 404: not found\n", h.stderr.String())
}

func TestVersionText(t *testing.T) {
	assert.Equal(t, "narad v1.2.3", versionText("v1.2.3", nil))
	assert.Equal(t, "narad dev (unknown revision)", versionText("", nil))
	info := &debug.BuildInfo{Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "true"}}}
	assert.Equal(t, "narad dev (0123456789ab+dirty)", versionText("", info))
	info.Settings[1].Value = "false"
	assert.Equal(t, "narad dev (0123456789ab)", versionText("", info))
}

func TestVersionCommand(t *testing.T) {
	h := newHarness(t)
	h.runOK("version")
	assert.True(t, strings.HasPrefix(h.stdout.String(), "narad "), h.stdout.String())
	assert.Contains(t, h.stdout.String(), fmt.Sprintf("wire version %d (", wire.Version), "which releases can run side by side")
}

func TestCompletionScripts(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		h := newHarness(t)
		h.runOK("completion", shell)
		assert.Contains(t, h.stdout.String(), "narad", shell)
	}
}

func TestClusterMovesWatchPollsUntilInterrupted(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker := newFakeBroker(t).on("GET /v1/cluster/moves", reply{200, `{"moves":[{"topic":"orders","partition":1,"from":"n1","to":"n2"}]}`})
	broker.onRequest = func(count int) {
		if count == 2 {
			cancel()
		}
	}
	code := h.runContext(ctx, "-s", broker.server.URL, "cluster", "moves", "--watch")
	assert.Equal(t, 0, code, "an interrupt is a normal end: %s", h.stderr.String())
	assert.Len(t, broker.seen(""), 2)
	// The second poll races with the cancel: its table may or may not be
	// printed, but the first one always is.
	tables := strings.Count(h.stdout.String(), "TOPIC   PARTITION")
	assert.True(t, tables == 1 || tables == 2, "tables printed: %d", tables)
}

func TestClusterMovesWatchGoesOnPastARetryableFailure(t *testing.T) {
	h := newHarness(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	broker := newFakeBroker(t).on("GET /v1/cluster/moves",
		reply{503, `{"error":"the node is starting; retry"}`},
		reply{200, `{"moves":[{"topic":"orders","partition":1,"from":"n1","to":"n2"}]}`})
	broker.onRequest = func(count int) {
		if count == 3 {
			cancel()
		}
	}
	code := h.runContext(ctx, "-s", broker.server.URL, "cluster", "moves", "--watch")
	assert.Equal(t, 0, code, "a 503 is retried, and an interrupt is a normal end: %s", h.stderr.String())
	assert.GreaterOrEqual(t, len(broker.seen("")), 2, "polled again after the 503")
	assert.Contains(t, h.stderr.String(), "(retrying)")
	assert.Contains(t, h.stdout.String(), "orders", "the poll after the 503 printed its table")
}

func TestClusterMovesWatchStopsAtAFailureNoRetryMends(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/cluster/moves", reply{403, `{"error":"admin only"}`})
	code := h.runContext(context.Background(), "-s", broker.server.URL, "cluster", "moves", "--watch")
	assert.NotEqual(t, 0, code)
	assert.Len(t, broker.seen(""), 1, "a 403 is not polled again")
}
