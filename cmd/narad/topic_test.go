package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/meta"
)

const ordersJSON = `{"name":"orders","partitions":6,"retention_ms":259200000,"visibility_timeout_ms":60000,
"max_in_flight_per_partition":1024,"max_acked_ahead_per_partition":1024,"created_at":1700000000}`

func TestTopicAddSendsSettingsAndPrintsJSON(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, ordersJSON})
	h.againstOK(broker, "topic", "add", "orders", "--partitions", "6", "--retention", "72h",
		"--visibility", "1m", "--max-in-flight", "10", "--max-acked-ahead", "20")
	requests := broker.seen("POST /v1/topics")
	require.Len(t, requests, 1)
	assert.JSONEq(t, `{"name":"orders","partitions":6,"retention_ms":259200000,"visibility_timeout_ms":60000,
	  "max_in_flight_per_partition":10,"max_acked_ahead_per_partition":20}`, requests[0].Body)
	assert.JSONEq(t, ordersJSON, h.stdout.String())
	assert.True(t, strings.HasPrefix(h.stdout.String(), "{\n  \"name\": \"orders\","), "pretty-printed")
}

func TestTopicAddMinimal(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, ordersJSON})
	h.againstOK(broker, "topic", "add", "orders")
	assert.JSONEq(t, `{"name":"orders"}`, broker.seen("")[0].Body)
}

// Property: a child's create sends no partition count unless given, and
// the help says the server then takes the parent's count (it said the
// server default, which the API applies only to a topic without parent).
func TestTopicAddChildTakesTheParentsCount(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, ordersJSON})
	h.againstOK(broker, "topic", "add", "audit", "--parent", "orders")
	assert.JSONEq(t, `{"name":"audit","parent":"orders"}`, broker.seen("")[0].Body)
	h.runOK("topic", "add", "--help")
	assert.Contains(t, h.stdout.String(), "0 = server default, or with --parent the parent's count")
}

// Property: the schema command's help says how many versions the
// server keeps (it said "the last few").
func TestTopicSchemaHelpSaysHowManyVersionsAreKept(t *testing.T) {
	h := newHarness(t)
	h.runOK("topic", "schema", "--help")
	assert.Contains(t, h.stdout.String(), fmt.Sprintf("keeps the last %d versions of each topic", meta.SchemaVersionsKept))
}

func TestTopicAddBadInput(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--delay", "1m"))
	assert.Contains(t, h.stderr.String(), "--delay needs --parent")
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--retention", "-1h"))
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--retention", "soon"))
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--schema", writeSchemaFile(t, " null\n")),
		"a null schema is none to the API: the topic was created without one, exit 0")
	assert.Contains(t, h.stderr.String(), "holds null, not a JSON Schema")
	assert.Equal(t, 2, h.against(broker, "topic", "edit", "orders", "--schema", writeSchemaFile(t, "null")))
	assert.Empty(t, broker.seen(""), "nothing is sent for bad input")
}

func TestTopicAddConflict(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{409, `{"error":"topic already exists"}`})
	assert.Equal(t, 1, h.against(broker, "topic", "add", "orders"))
	assert.Equal(t, "narad: http 409: topic already exists\n", h.stderr.String())
}

func TestTopicListTable(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics",
		reply{200, `{"topics":[{"name":"audit","partitions":3,"retention_ms":0},
		  {"name":"events","partitions":12,"retention_ms":604800000,"role":"parent"}],"next_page_token":"events"}`},
		reply{200, `{"topics":[{"name":"events-late","partitions":12,"retention_ms":5400000,"role":"child",
		  "parent":"events","fanout_delay_ms":90000},{"name":"events-now","partitions":12,"retention_ms":3600000,
		  "role":"child","parent":"events"}],"next_page_token":""}`})
	h.againstOK(broker, "topic", "ls")
	assert.Equal(t, strings.Join([]string{
		"NAME         PARTITIONS  RETENTION  ROLE",
		"audit        3           forever    -",
		"events       12          168h       parent",
		"events-late  12          1h30m      child of events (delay 1m30s)",
		"events-now   12          1h         child of events",
		""}, "\n"), h.stdout.String())
	requests := broker.seen("GET /v1/topics")
	require.Len(t, requests, 2, "pagination is followed")
	assert.Equal(t, "limit=1000&page_token=events", requests[1].Query)
}

func TestTopicListEmptyAndJSON(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics", reply{200, `{"topics":[],"next_page_token":""}`})
	h.againstOK(broker, "topic", "ls")
	assert.Equal(t, "no topics\n", h.stdout.String())
	h.againstOK(broker, "topic", "ls", "--json")
	assert.Equal(t, "[]\n", h.stdout.String())

	broker.on("GET /v1/topics", reply{200, `{"topics":[{"name":"a","partitions":3}],"next_page_token":""}`})
	h.againstOK(broker, "topic", "ls", "--json")
	var topics []map[string]any
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &topics))
	require.Len(t, topics, 1)
	assert.Equal(t, "a", topics[0]["name"])
}

func TestTopicInfo(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, `{"name":"orders","partitions":3,
	  "partition_stats":[{"index":2,"segments":1,"oldest_offset":0,"next_offset":5,"high_watermark":5,
	  "size_bytes":512,"owner_node":"n1","available":false}]}`})
	h.againstOK(broker, "topic", "info", "orders", "--partition", "2")
	assert.Equal(t, "partition=2", broker.seen("")[0].Query)
	assert.Contains(t, h.stdout.String(), `"available": false`)
	assert.Contains(t, h.stdout.String(), `"owner_node": "n1"`)
	h.againstOK(broker, "topic", "info", "orders")
	assert.Empty(t, broker.seen("")[1].Query)
}

func TestTopicEditSendsOnlyGivenFlags(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("PATCH /v1/topics/orders", reply{200, ordersJSON})
	h.againstOK(broker, "topic", "edit", "orders", "--visibility", "2m")
	assert.JSONEq(t, `{"visibility_timeout_ms":120000}`, broker.seen("")[0].Body)
	h.againstOK(broker, "topic", "edit", "orders", "--partitions", "12", "--retention", "0s")
	assert.JSONEq(t, `{"partitions":12,"retention_ms":0}`, broker.seen("")[1].Body)
	assert.JSONEq(t, ordersJSON, h.stdout.String())
}

func TestTopicEditNothingToChange(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "topic", "edit", "orders"))
	assert.Contains(t, h.stderr.String(), "nothing to change")
	assert.Empty(t, broker.seen(""))
}

func TestTopicRemove(t *testing.T) {
	cases := []struct {
		name        string
		args        []string
		terminal    bool
		stdin       string
		wantCode    int
		wantDeleted bool
		wantOutput  string
	}{
		{"forced", []string{"-f"}, false, "", 0, true, "deleted orders\n"},
		{"forced long", []string{"--force"}, true, "", 0, true, "deleted orders\n"},
		{"no terminal refuses", nil, false, "y\n", 2, false, ""},
		{"terminal yes", nil, true, "y\n", 0, true, "deleted orders\n"},
		{"terminal YES", nil, true, "YES\n", 0, true, "deleted orders\n"},
		{"terminal no", nil, true, "n\n", 1, false, ""},
		{"terminal empty answer", nil, true, "\n", 1, false, ""},
		{"terminal end of input", nil, true, "", 1, false, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.app.stdinIsTerminal = tc.terminal
			h.app.stdin = strings.NewReader(tc.stdin)
			broker := newFakeBroker(t).on("DELETE /v1/topics/orders", reply{204, ""})
			code := h.against(broker, append([]string{"topic", "rm", "orders"}, tc.args...)...)
			assert.Equal(t, tc.wantCode, code, h.stderr.String())
			assert.Equal(t, tc.wantDeleted, len(broker.seen("DELETE /v1/topics/orders")) == 1)
			assert.Equal(t, tc.wantOutput, h.stdout.String())
			if tc.terminal && len(tc.args) == 0 {
				assert.Contains(t, h.stderr.String(), `delete topic "orders" and all its data? [y/N]`)
			}
		})
	}
}

func TestTopicRemoveRefusalExplains(t *testing.T) {
	h := newHarness(t)
	assert.Equal(t, 2, h.run("topic", "rm", "orders"))
	assert.Contains(t, h.stderr.String(), "without --force: stdin is not a terminal")
}

func writeSchemaFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "schema.json")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o600))
	return path
}

func TestTopicAddAndEditSendTheSchemaFile(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, ordersJSON}).on("PATCH /v1/topics/orders", reply{200, ordersJSON})
	path := writeSchemaFile(t, `{"type": "object", "required": ["id"]}`)
	h.againstOK(broker, "topic", "add", "orders", "--schema", path)
	assert.JSONEq(t, `{"name":"orders","schema":{"type":"object","required":["id"]}}`, broker.seen("POST /v1/topics")[0].Body)
	h.againstOK(broker, "topic", "edit", "orders", "--schema", path)
	assert.JSONEq(t, `{"schema":{"type":"object","required":["id"]}}`, broker.seen("PATCH /v1/topics/orders")[0].Body)
}

func TestTopicSchemaFileBadInput(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--schema", writeSchemaFile(t, `{"type":`)))
	assert.Contains(t, h.stderr.String(), "is not valid JSON")
	assert.Equal(t, 2, h.against(broker, "topic", "edit", "orders", "--schema", filepath.Join(t.TempDir(), "missing.json")))
	big := `{"description":"` + strings.Repeat("x", schemaBytesMax) + `"}`
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--schema", writeSchemaFile(t, big)))
	assert.Contains(t, h.stderr.String(), "256 KiB")
	assert.Empty(t, broker.seen(""), "nothing is sent for bad input")
}

func TestTopicSchemaPrintsAVersion(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders/schema", reply{200, `{"version":2,"schema":{"type":"object"}}`})
	h.againstOK(broker, "topic", "schema", "orders")
	assert.JSONEq(t, `{"version":2,"schema":{"type":"object"}}`, h.stdout.String())
	h.againstOK(broker, "topic", "schema", "orders", "--version", "2")
	requests := broker.seen("GET /v1/topics/orders/schema")
	require.Len(t, requests, 2)
	assert.Equal(t, "version=2", requests[1].Query)
	assert.Equal(t, 2, h.against(broker, "topic", "schema", "orders", "--version", "0"), "version 0 is no version (it printed the latest)")
	assert.Len(t, broker.seen(""), 2, "nothing is sent for --version 0")
}

func TestTopicDeadLetterFlags(t *testing.T) {
	h := newHarness(t)
	withSetting := `{"name":"orders","partitions":3,"max_deliveries":5,"dead_letter_topic":"orders.dead"}`
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, withSetting}).
		on("PATCH /v1/topics/orders", reply{200, withSetting}).on("GET /v1/topics/orders", reply{200, withSetting})
	h.againstOK(broker, "topic", "add", "orders", "--max-deliveries", "5", "--dead-letter-topic", "orders.dead")
	assert.JSONEq(t, `{"name":"orders","max_deliveries":5,"dead_letter_topic":"orders.dead"}`, broker.seen("")[0].Body)
	h.againstOK(broker, "topic", "edit", "orders", "--max-deliveries", "0", "--dead-letter-topic", "")
	assert.JSONEq(t, `{"max_deliveries":0,"dead_letter_topic":""}`, broker.seen("")[1].Body, "turning it off sends both, empty")
	h.againstOK(broker, "topic", "edit", "orders", "--max-deliveries", "7")
	assert.JSONEq(t, `{"max_deliveries":7}`, broker.seen("")[2].Body)
	h.againstOK(broker, "topic", "edit", "--help")
	assert.Contains(t, h.stdout.String(), "or on edit the one the topic has", "the help does not ask for --dead-letter-topic again")
	h.againstOK(broker, "topic", "info", "orders")
	assert.Contains(t, h.stdout.String(), `"max_deliveries": 5`)
	assert.Contains(t, h.stdout.String(), `"dead_letter_topic": "orders.dead"`)
	assert.Equal(t, 2, h.against(broker, "topic", "add", "orders", "--max-deliveries", "-1"))
	assert.Len(t, broker.seen(""), 4, "nothing is sent for a negative --max-deliveries")
}

// A negative setting was refused as "topic settings must not be
// negative", naming no flag (review finding): the message names the one
// to mend, and nothing is sent.
func TestANegativeTopicSettingNamesItsFlag(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	for _, flag := range []string{"--partitions", "--retention", "--visibility", "--max-in-flight", "--max-acked-ahead", "--max-deliveries"} {
		value := "-1"
		if flag == "--retention" || flag == "--visibility" {
			value = "-1s"
		}
		for _, verb := range []string{"add", "edit"} {
			require.Equal(t, exitUsage, h.against(broker, "topic", verb, "orders", flag, value), "%s %s", verb, flag)
			assert.Contains(t, h.stderr.String(), "narad: "+flag+" must not be negative\n", "%s %s", verb, flag)
		}
	}
	assert.Empty(t, broker.seen(""), "nothing is sent")
}

// TestTopicInfoKeepsConsumerProgress: `narad topic info` prints the
// describe answer as JSON (docs/api.md#cli), and a describe carries
// committed_offset and in_flight per partition (docs/api.md#describe-a-topic,
// compatibility note 20). The CLI decodes the answer into client.Topic,
// whose PartitionStats had no such fields, so both were dropped.
func TestTopicInfoKeepsConsumerProgress(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{200, `{"name":"orders","partitions":3,
	  "partition_stats":[{"index":0,"segments":1,"oldest_offset":0,"next_offset":42,"high_watermark":42,
	  "size_bytes":4096,"owner_node":"n2","available":true,"committed_offset":40,"in_flight":2}]}`})
	h.againstOK(broker, "topic", "info", "orders", "--partition", "0")
	assert.Contains(t, h.stdout.String(), `"committed_offset": 40`)
	assert.Contains(t, h.stdout.String(), `"in_flight": 2`)
}

// TestTopicListLongRetention: the server takes any retention_ms of
// at least an hour (docs/api.md#create-a-topic; a topic cannot ask for
// "forever", 0 being the server default, so a very long retention is how
// one keeps records for good). `narad topic ls` turns retention_ms into a
// time.Duration, which overflows past about 292 years: it printed a
// negative retention.
func TestTopicListLongRetention(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics", reply{200, `{"topics":[
	  {"name":"archive","partitions":3,"retention_ms":10000000000000},
	  {"name":"ledger","partitions":3,"retention_ms":9223372036854775807}],"next_page_token":""}`})
	h.againstOK(broker, "topic", "ls")
	lines := strings.Split(strings.TrimSpace(h.stdout.String()), "\n")
	require.Len(t, lines, 3)
	for _, line := range lines[1:] {
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 3, line)
		assert.False(t, strings.HasPrefix(fields[2], "-"), "retention printed as a negative duration: %q", line)
	}
}

// --retention past the server's bound (msg.RetentionMsMax, 100 years) is
// refused before anything is sent, naming the flag and the bound; the
// bound itself is sent.
func TestTopicRetentionFlagIsBounded(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	for _, verb := range []string{"add", "edit"} {
		require.Equal(t, exitUsage, h.against(broker, "topic", verb, "orders", "--retention", "876001h"), verb)
		assert.Contains(t, h.stderr.String(), "narad: --retention must be at most 876000h (100 years)\n", verb)
	}
	assert.Empty(t, broker.seen(""), "nothing is sent")
	broker.on("POST /v1/topics", reply{201, `{"name":"orders","partitions":3,"retention_ms":3153600000000}`})
	h.againstOK(broker, "topic", "add", "orders", "--retention", "876000h")
	assert.Contains(t, broker.seen("POST /v1/topics")[0].Body, `"retention_ms":3153600000000`)
}

// Property: the help of topic add and topic edit says each numeric
// setting's range and what 0 means, as --retention and --max-deliveries
// did: --visibility, --max-in-flight and --max-acked-ahead said neither,
// and add's --partitions gave no upper bound, so a user learned them only
// from a 400.
func TestTopicSettingsHelpSaysEachRange(t *testing.T) {
	h := newHarness(t)
	for _, verb := range []string{"add", "edit"} {
		h.stdout.Reset()
		h.runOK("topic", verb, "--help")
		help := h.stdout.String()
		assert.Contains(t, help, "1ms to 12h; 0 = server default", verb)
		assert.Contains(t, help, "most unacknowledged messages per partition (1 to 1048576; 0 = server default)", verb)
		assert.Contains(t, help, "most out-of-order acks held per partition (1 to 1048576; 0 = server default)", verb)
	}
	h.stdout.Reset()
	h.runOK("topic", "add", "--help")
	assert.Contains(t, h.stdout.String(), "number of partitions (3 to the server's topic.max_partitions, 108 by default;")
}

// Property: topic info refuses a negative --partition as a usage error
// (exit 2) before any request, as sub, pub and replay do; it sent
// ?partition=-1 and ended with the server's 400 (exit 1).
func TestTopicInfoNegativePartitionIsAUsageError(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "topic", "info", "orders", "--partition", "-1"))
	assert.Contains(t, h.stderr.String(), "narad: --partition must not be negative\n")
	assert.Empty(t, broker.seen(""), "nothing is sent for bad input")
}

// Property: a --schema file that is not UTF-8 is a usage error naming the
// file (exit 2), before any request, like one that is not JSON:
// encoding/json's Valid takes bad bytes inside a string, so it was sent
// and refused by the server with "invalid json: the body is not valid
// UTF-8", exit 1, naming the request body instead of the file.
func TestTopicSchemaFileNotUTF8IsAUsageError(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	file := writeSchemaFile(t, "{\"description\":\"\xff\"}")
	for _, verb := range []string{"add", "edit"} {
		assert.Equal(t, 2, h.against(broker, "topic", verb, "orders", "--schema", file), verb)
		assert.Contains(t, h.stderr.String(), "is not valid UTF-8", verb)
	}
	assert.Empty(t, broker.seen(""), "nothing is sent for bad input")
}
