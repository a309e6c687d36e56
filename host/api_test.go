package host

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/node"
)

func TestTopicRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"orders","partitions":4,"visibility_timeout_ms":5000}`), 201, `"visibility_timeout_ms":5000`},
		{"create exists", postJSON("/v1/topics", `{"name":"orders"}`), 409, `{"error":"topic already exists"}`},
		{"create unknown field", postJSON("/v1/topics", `{"name":"x","colour":1}`), 400, `unknown field`},
		{"create trailing value", postJSON("/v1/topics", `{"name":"x"} {}`), 400, `"error"`},
		{"create too few partitions", postJSON("/v1/topics", `{"name":"x","partitions":2}`), 400, `partitions`},
		{"create short retention", postJSON("/v1/topics", `{"name":"x","retention_ms":1000}`), 400, `retention_ms`},
		{"create negative visibility", postJSON("/v1/topics", `{"name":"x","visibility_timeout_ms":-1}`), 400, `"error"`},
		{"create bad name", postJSON("/v1/topics", `{"name":"a/b"}`), 400, `"error"`},
		{"create dot name", postJSON("/v1/topics", `{"name":".."}`), 400, `"error"`},
		{"create huge body", postJSON("/v1/topics", `{"name":"`+strings.Repeat("a", 1<<20)+`"}`), 413, `request body too large`},
		{"list", get("/v1/topics"), 200, `"name":"orders"`},
		{"list limit 0", get("/v1/topics?limit=0"), 400, `"error"`},
		{"list limit junk", get("/v1/topics?limit=abc"), 400, `"error"`},
		{"get", get("/v1/topics/orders"), 200, `"partition_stats":[{"index":0`},
		{"get one partition", get("/v1/topics/orders?partition=3"), 200, `"index":3`},
		{"get bad partition", get("/v1/topics/orders?partition=9"), 400, `invalid partition 9: topic orders has 4 partitions`},
		{"consume bad partition", get("/v1/topics/orders/consume?partition=9"), 400, `invalid partition 9: topic orders has 4 partitions`},
		{"replay bad partition", get("/v1/topics/orders/consume?partition=9&offset=0"), 400, `invalid partition 9: topic orders has 4 partitions`},
		{"get missing", get("/v1/topics/nope"), 404, `"error"`},
		{"alter visibility", patch("/v1/topics/orders", `{"visibility_timeout_ms":7000}`), 200, `"visibility_timeout_ms":7000`},
		{"alter grow", patch("/v1/topics/orders", `{"partitions":5}`), 200, `"partitions":5`},
		{"alter shrink", patch("/v1/topics/orders", `{"partitions":3}`), 400, `"error"`},
		{"alter nothing", patch("/v1/topics/orders", `{}`), 400, `"error"`},
		{"alter unknown field", patch("/v1/topics/orders", `{"name":"y"}`), 400, `unknown field`},
		{"alter missing", patch("/v1/topics/nope", `{"partitions":9}`), 404, `"error"`},
		{"delete", del("/v1/topics/orders"), 204, ""},
		{"delete again", del("/v1/topics/orders"), 404, `"error"`},
		{"get deleted", get("/v1/topics/orders"), 404, `"error"`},
	})
}

func TestProduceRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"orders"}`), 201, ""},
		{"produce", post("/v1/topics/orders/produce?partition=1", "text/plain", "hello"), 202, `{"partition":1,"offset":0}`},
		{"produce keyed", post("/v1/topics/orders/produce?key=k1", "text/plain", "hi"), 202, `"offset"`},
		{"produce empty", post("/v1/topics/orders/produce", "text/plain", ""), 400, `"error"`},
		{"produce too large", post("/v1/topics/orders/produce", "application/octet-stream", strings.Repeat("x", 1<<20+1)), 413, `request body too large`},
		{"produce missing topic", post("/v1/topics/nope/produce", "text/plain", "x"), 404, `"error"`},
		{"produce duplicate key", post("/v1/topics/orders/produce?key=a&key=b", "text/plain", "x"), 400, `"error"`},
		{"produce bad partition", post("/v1/topics/orders/produce?partition=x", "text/plain", "x"), 400, `"error"`},
		{"produce partition out of range", post("/v1/topics/orders/produce?partition=3", "text/plain", "x"), 400, `"error"`},
		{"batch", post("/v1/topics/orders/produce", "application/x-ndjson", "{\"payload\":{\"a\":1},\"partition\":2}\n{\"payload_base64\":\"//4=\",\"partition\":2}\n"), 202,
			`{"accepted":2,"records":[{"partition":2,"offset":0},{"partition":2,"offset":1}]}`},
		{"batch bad line", post("/v1/topics/orders/produce", "application/x-ndjson", "{\"payload\":1}\nnot json\n"), 400, `line 2`},
		{"batch empty", post("/v1/topics/orders/produce", "application/x-ndjson", "\n"), 400, `"error"`},
		{"batch too many", post("/v1/topics/orders/produce", "application/x-ndjson", strings.Repeat("{\"payload\":1}\n", 1001)), 413, `"error"`},
		{"replay batch record", get("/v1/topics/orders/consume?partition=2&offset=0"), 200, `"payload":{"a":1}`},
		{"replay binary record", get("/v1/topics/orders/consume?partition=2&offset=1"), 200, `"payload_encoding":"base64"`},
	})
}

func TestConsumeAndAckRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"orders"}`), 201, ""},
		{"empty consume", get("/v1/topics/orders/consume"), 204, ""},
		{"empty batch consume", get("/v1/topics/orders/consume?max=5"), 200, `{"messages":[]}`},
		{"bad wait", get("/v1/topics/orders/consume?wait=soon"), 400, `"error"`},
		{"bad max", get("/v1/topics/orders/consume?max=101"), 400, `"error"`},
		{"offset without partition", get("/v1/topics/orders/consume?offset=0"), 400, `partition required for replay-mode consume`},
		{"consume missing topic", get("/v1/topics/nope/consume"), 404, `"error"`},
		{"produce", post("/v1/topics/orders/produce?partition=0&key=k", "text/plain", "plain text"), 202, ""},
		{"replay past hwm", get("/v1/topics/orders/consume?partition=0&offset=1"), 204, ""},
		{"replay", get("/v1/topics/orders/consume?partition=0&offset=0"), 200, `"payload":"plain text"`},
	})
	status, body := call(t, h, get("/v1/topics/orders/consume"))
	require.Equal(t, 200, status)
	var message map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &message))
	for _, field := range []string{"topic", "partition", "offset", "key", "payload", "timestamp", "timestamp_ms", "receipt_handle", "delivery_count"} {
		require.Contains(t, message, field)
	}
	handle := message["receipt_handle"].(string)
	require.Regexp(t, regexp.MustCompile(`^0:0:[0-9]+:[0-9a-f]{16}$`), handle)
	ack := func(query string) apiCall { return post("/v1/topics/orders/ack?"+query, "", "") }
	runSteps(t, h, []step{
		{"extend", ack("receipt_handle=" + handle + "&extend=true"), 204, ""},
		{"bad extend", ack("receipt_handle=" + handle + "&extend=maybe"), 400, `invalid extend`},
		{"ack", ack("receipt_handle=" + handle), 204, ""},
		{"ack again", ack("receipt_handle=" + handle), 204, ""},
		{"extend after ack", ack("receipt_handle=" + handle + "&extend=true"), 410, `already acked`},
		{"nack after ack", ack("receipt_handle=" + handle + "&extend=0"), 410, `already acked`},
		{"malformed", ack("receipt_handle=zzz"), 400, `receipt handle is malformed`},
		{"missing handle", ack(""), 400, `receipt_handle required`},
		{"batch ack", postJSON("/v1/topics/orders/ack", `{"receipt_handles":["`+handle+`","0:5:99:0123456789abcdef"]}`), 200,
			`{"results":[{"receipt_handle":"` + handle + `","status":204},{"receipt_handle":"0:5:99:0123456789abcdef","status":410,"error":`},
		{"batch ack malformed", postJSON("/v1/topics/orders/ack", `{"receipt_handles":["zzz"]}`), 400, `malformed`},
	})
}

// A guessed handle, or a handle of another topic, acks nothing: another
// consumer's reservation stays in flight and its own handle still works.
func TestForgedAndCrossTopicHandlesAckNothing(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create rh", postJSON("/v1/topics", `{"name":"rh","partitions":3}`), 201, ""},
		{"create rh2", postJSON("/v1/topics", `{"name":"rh2","partitions":3}`), 201, ""},
		{"produce rh", post("/v1/topics/rh/produce?partition=0", "text/plain", "mine"), 202, ""},
		{"produce rh2", post("/v1/topics/rh2/produce?partition=0", "text/plain", "theirs"), 202, ""},
	})
	handleOf := func(topic string) string {
		status, body := call(t, h, get("/v1/topics/"+topic+"/consume?partition=0"))
		require.Equal(t, 200, status, body)
		var message map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &message))
		return message["receipt_handle"].(string)
	}
	mine, theirs := handleOf("rh"), handleOf("rh2")
	counter := theirs[:strings.LastIndexByte(theirs, ':')]
	ack := func(topic, handle string) apiCall {
		return post("/v1/topics/"+topic+"/ack?receipt_handle="+handle, "", "")
	}
	runSteps(t, h, []step{
		{"a guessed tag", ack("rh2", counter+":0000000000000000"), 410, "stale"},
		{"a handle of rh on rh2", ack("rh2", mine), 410, "stale"},
		{"a malformed guess", ack("rh2", counter), 400, "malformed"},
		{"their own handle", ack("rh2", theirs), 204, ""},
		{"mine on rh", ack("rh", mine), 204, ""},
	})
}

func TestClusterHealthAndMetricsRoutes(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"members", get("/v1/cluster/members"), 200, `"status":"alive"`},
		{"moves", get("/v1/cluster/moves"), 200, `{"moves":[]}`},
		{"decommission unknown", apiCall{method: http.MethodPost, path: "/v1/cluster/members/nobody/decommission"}, 404, `member \"nobody\" not found`},
		{"healthz", get("/healthz"), 200, `{"status":"ok"}`},
		{"readyz", get("/readyz"), 200, `{"status":"ready"}`},
		{"unknown path", get("/v1/nothing"), 404, `404 page not found`},
		{"wrong method", apiCall{method: http.MethodPut, path: "/v1/topics"}, 405, ""},
		{"create", postJSON("/v1/topics", `{"name":"m"}`), 201, ""},
		{"produce", post("/v1/topics/m/produce", "text/plain", "x"), 202, ""},
		{"consume", get("/v1/topics/m/consume"), 200, ""},
	})
	polled := make(chan struct{}) // the inventory poll, without waiting for its ticker
	h.loop.post(func(n *node.Node) {
		h.loop.metrics.setInventory(n.Stats(), n.PartitionBacklogs(), h.loop.metrics.seriesDropped.Load())
		close(polled)
	})
	<-polled
	status, body := call(t, h, get("/metrics"))
	require.Equal(t, 200, status)
	for _, metric := range []string{
		`narad_http_requests_total{method="POST",route="POST /v1/topics/{topic}/produce",status="202"} 1`,
		`narad_messages_produced_total{partition=`,
		`narad_storage_sync_round_duration_seconds_count`,
		`narad_storage_round_records_sum 1`,                           // the one record produced, in one round
		`narad_consume_wait_seconds_count{outcome="hit",topic="m"} 1`, // the consume delivered the record
		`narad_inflight_size{partition=`,
		`narad_consumer_lag_messages{partition=`,
		`narad_topics_total 1`,
		`narad_topics_max 10000`,
		`narad_owned_partitions 3`, // m's three partitions, all on this node
		`narad_owned_partitions_max 20000`,
		`narad_moves_inflight 0`,
		`narad_moves_sessions 0`,
		`narad_moves_frozen_partitions 0`,
		`narad_moves_total{outcome="force_promoted"} 0`,
		`narad_moves_bytes_total 0`,
		`narad_moves_freeze_duration_seconds_count 0`,
		`narad_open_partition_logs 1`, // the partition written to: a look at one never written opens none
		`narad_open_partition_logs_max 1024`,
		`narad_partition_log_evictions_total 0`,
	} {
		require.Contains(t, body, metric)
	}
	require.Regexp(t, `narad_storage_fsyncs_total [1-9]`, body)
	require.Regexp(t, `narad_storage_open_log_index_bytes [1-9]`, body, "the produced record's log holds an index")
	require.Contains(t, body, "narad_leases_held 1\n", "the consumed record is leased")
	require.Contains(t, body, "narad_leases_max 4.194304e+06\n")
}

func TestLongPollAcrossHTTP(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"q"}`), 201, ""}})
	done := make(chan string, 1)
	go func() {
		resp, err := http.Get("http://" + h.Addr() + "/v1/topics/q/consume?wait=2s")
		if err != nil {
			done <- err.Error()
			return
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		done <- string(body)
	}()
	// The produce may land before or after the poll parks; either way the
	// poll must come back with the record, not empty.
	runSteps(t, h, []step{{"produce", post("/v1/topics/q/produce", "text/plain", "late"), 202, ""}})
	require.Contains(t, <-done, `"payload":"late"`)
}

func TestDataSurvivesGracefulRestart(t *testing.T) {
	dir := t.TempDir()
	h := testHostAt(t, dir)
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"d"}`), 201, ""}})
	for i := range 30 {
		runSteps(t, h, []step{{"produce", post("/v1/topics/d/produce", "text/plain", fmt.Sprint(i)), 202, ""}})
	}
	require.NoError(t, h.Shutdown())
	h2 := testHostAt(t, dir)
	seen := map[string]bool{}
	for range 30 {
		status, body := call(t, h2, get("/v1/topics/d/consume"))
		require.Equal(t, 200, status)
		var m struct {
			Payload json.RawMessage `json:"payload"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &m))
		seen[string(m.Payload)] = true
	}
	require.Len(t, seen, 30, "every record produced before the restart is consumed after it")
}

// TestAckIsIdempotentOverHTTP: a retried ack of a record already acked
// answers 204, also after the node restarted; each repeat is counted.
func TestAckIsIdempotentOverHTTP(t *testing.T) {
	dir := t.TempDir()
	h := testHostAt(t, dir)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"orders"}`), 201, ""},
		{"produce", post("/v1/topics/orders/produce?partition=0", "text/plain", "x"), 202, ""},
	})
	status, body := call(t, h, get("/v1/topics/orders/consume"))
	require.Equal(t, 200, status)
	var message struct {
		Handle string `json:"receipt_handle"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &message))
	ack := post("/v1/topics/orders/ack?receipt_handle="+message.Handle, "", "")
	runSteps(t, h, []step{{"ack", ack, 204, ""}, {"ack again", ack, 204, ""}})
	_, metrics := call(t, h, get("/metrics"))
	require.Contains(t, metrics, `narad_ack_repeated_total{topic="orders"} 1`)
	require.NoError(t, h.Shutdown())

	restarted := testHostAt(t, dir)
	runSteps(t, restarted, []step{
		{"ack after restart", ack, 204, ""},
		{"batch ack after restart", postJSON("/v1/topics/orders/ack", `{"receipt_handles":["`+message.Handle+`"]}`), 200,
			`{"results":[{"receipt_handle":"` + message.Handle + `","status":204}]}`},
		{"extend after restart", post("/v1/topics/orders/ack?receipt_handle="+message.Handle+"&extend=true", "", ""), 410, `already acked`},
		{"empty", get("/v1/topics/orders/consume"), 204, ""},
	})
}

// TestParkedPollOfDepartedClientIsCancelled: a long poll whose client
// closes its connection is cancelled (its parked slot freed) rather than
// left to time out: the connection server watches parked requests. The
// poll may wait 60 s, so a timeout cannot pass for the cancel.
func TestParkedPollOfDepartedClientIsCancelled(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Codec.ConsumeWaitMaxMs, opts.Node.ConsumeWaitMaxMs = 60_000, 60_000
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"q"}`), 201, ""}})
	conn, err := net.Dial("tcp", h.Addr())
	require.NoError(t, err)
	_, err = io.WriteString(conn, "GET /v1/topics/q/consume?wait=60s HTTP/1.1\r\nHost: test\r\n\r\n")
	require.NoError(t, err)
	require.NoError(t, conn.Close())
	outcome := regexp.MustCompile(`narad_consume_polls_total\{outcome="([a-z_]+)",topic="q"\} 1`)
	var found []string
	require.Eventually(t, func() bool {
		code, body := call(t, h, apiCall{method: http.MethodGet, path: "/metrics"})
		found = outcome.FindStringSubmatch(body)
		return code == http.StatusOK && found != nil
	}, 30*time.Second, 10*time.Millisecond, "the poll is answered long before its wait ends")
	require.Equal(t, "cancelled", found[1])
}
