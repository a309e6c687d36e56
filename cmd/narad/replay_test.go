package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// replayed returns a replay reply for partition 0 at offset.
func replayed(offset int) reply {
	return reply{200, fmt.Sprintf(`{"topic":"orders","partition":0,"offset":%d,"payload":"m%d",
	  "timestamp":1700000000,"timestamp_ms":%d}`, offset, offset, 1700000000000+offset)}
}

func offsetsRead(t *testing.T, broker *fakeBroker) []string {
	t.Helper()
	var queries []string
	for _, request := range broker.seen(consumeRoute) {
		queries = append(queries, request.Query)
	}
	return queries
}

func TestReplayDefaultsToTheRetainedRange(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).
		on("GET /v1/topics/orders", reply{200, `{"name":"orders","partition_stats":[{"index":0,"oldest_offset":3,"high_watermark":6}]}`}).
		on(consumeRoute, replayed(3), replayed(4), replayed(5))
	h.againstOK(broker, "replay", "orders", "--partition", "0")
	assert.Equal(t, "partition=0", broker.seen("GET /v1/topics/orders")[0].Query)
	assert.Equal(t, []string{"offset=3&partition=0", "offset=4&partition=0", "offset=5&partition=0"}, offsetsRead(t, broker))
	assert.Equal(t, "[p0 @3] 22:13:20.003 m3\n[p0 @4] 22:13:20.004 m4\n[p0 @5] 22:13:20.005 m5\n", h.stdout.String())
	assert.Equal(t, "3 message(s) replayed from p0 [3, 6)\n", h.stderr.String())
}

func TestReplayExplicitRangeRaw(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, replayed(10), replayed(11))
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "10", "--to", "12", "--raw")
	assert.Empty(t, broker.seen("GET /v1/topics/orders"), "no stats needed when both bounds are given")
	assert.Equal(t, "m10\nm11\n", h.stdout.String())
	assert.Equal(t, "2 message(s) replayed from p0 [10, 12)\n", h.stderr.String())
}

func TestReplayStopsAtTheFirstEmptyRead(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute, replayed(0), reply{204, ""})
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "0", "--to", "100")
	assert.Len(t, broker.seen(consumeRoute), 2)
	assert.Equal(t, "1 message(s) replayed from p0 [0, 100)\n", h.stderr.String())
}

func TestReplaySkipsAgedOutOffsets(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).
		on("GET /v1/topics/orders", reply{200, `{"name":"orders","partition_stats":[{"index":0,"oldest_offset":4,"high_watermark":6}]}`}).
		on(consumeRoute, reply{410, `{"error":"offset 1 aged out of retention (oldest retained: 4)"}`}, replayed(4), replayed(5))
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "1", "--to", "6")
	assert.Equal(t, []string{"offset=1&partition=0", "offset=4&partition=0", "offset=5&partition=0"}, offsetsRead(t, broker))
	assert.Equal(t, "p0: skipped 3 offset(s) [1, 4): aged out of retention\n"+
		"2 message(s) replayed from p0 [1, 6)\n3 offset(s) skipped: aged out of retention or unreadable\n", h.stderr.String())
}

func TestReplayErrors(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	assert.Equal(t, 2, h.against(broker, "replay", "orders"))
	assert.Contains(t, h.stderr.String(), "replay needs --partition")
	assert.Equal(t, 2, h.against(broker, "replay", "orders", "--partition", "0", "--from", "5", "--to", "2"))
	assert.Contains(t, h.stderr.String(), "--from 5 is past --to 2")
	assert.Empty(t, broker.seen(""))

	broker.on("GET /v1/topics/orders", reply{200, `{"name":"orders","partition_stats":[{"index":0,"available":false}]}`})
	assert.Equal(t, 1, h.against(broker, "replay", "orders", "--partition", "0"))
	assert.Contains(t, h.stderr.String(), "partition 0 of orders is unavailable")

	failing := newFakeBroker(t).on(consumeRoute, reply{400, `{"error":"invalid partition"}`})
	assert.Equal(t, 1, h.against(failing, "replay", "orders", "--partition", "9", "--from", "0", "--to", "1"))
	require.Contains(t, h.stderr.String(), "0 message(s) replayed from p9 [0, 1)\n")
	assert.Contains(t, h.stderr.String(), "narad: http 400: invalid partition\n")
}

// A --from at or past the partition's end says so, instead of printing an
// inverted range ("[50, 6)").
func TestReplayFromPastTheEndSaysSo(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).
		on("GET /v1/topics/orders", reply{200, `{"name":"orders","partition_stats":[{"index":0,"oldest_offset":3,"high_watermark":6}]}`})
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "50")
	assert.Empty(t, h.stdout.String())
	assert.Equal(t, "0 message(s) replayed from p0: --from 50 is at or past its end (6)\n", h.stderr.String())
}

// An empty partition replayed without --from says it holds nothing, not
// that a --from the user never gave is past its end. It said "it retains
// no record below offset 0", which says nothing useful (external audit
// finding): the summary says the partition is empty, or that its records
// aged out, or that none it retains is below --to.
func TestReplayOfAnEmptyPartitionNamesNoFlag(t *testing.T) {
	stats := func(oldest, highWatermark int) reply {
		return reply{200, fmt.Sprintf(`{"name":"orders","partition_stats":[{"index":0,"oldest_offset":%d,"high_watermark":%d}]}`,
			oldest, highWatermark)}
	}
	cases := []struct {
		stats reply
		flags []string
		want  string
	}{
		{stats(0, 0), nil, "it is empty (no record was ever produced to it)"},
		{stats(0, 0), []string{"--from", "0"}, "it is empty (no record was ever produced to it)"},
		{stats(7, 7), nil, "it holds no record: its 7 record(s) aged out of retention"},
		{stats(7, 9), []string{"--to", "5"}, "it retains no record below --to 5 (the oldest it retains is at offset 7)"},
		{stats(3, 6), []string{"--from", "6"}, "--from 6 is at or past its end (6)"},
	}
	for _, c := range cases {
		h := newHarness(t)
		broker := newFakeBroker(t).on("GET /v1/topics/orders", c.stats)
		h.againstOK(broker, append([]string{"replay", "orders", "--partition", "0"}, c.flags...)...)
		assert.Empty(t, h.stdout.String())
		assert.Equal(t, "0 message(s) replayed from p0: "+c.want+"\n", h.stderr.String(), "%v", c)
		assert.Empty(t, broker.seen(consumeRoute), "nothing to read")
	}
}

// A replay says on stderr which offsets it skipped and why, one line per
// run of skipped offsets (not per offset), and goes on: it said only a
// total at the end, and sub --peek said nothing at all.
func TestReplaySaysEachSkippedRange(t *testing.T) {
	h := newHarness(t)
	unreadable := func(offset int) reply {
		return reply{410, fmt.Sprintf(`{"error":"offset %d is unreadable (corrupt record skipped by recovery)"}`, offset)}
	}
	broker := newFakeBroker(t).
		on("GET /v1/topics/orders", reply{200, `{"name":"orders","partition_stats":[{"index":0,"oldest_offset":4,"high_watermark":10}]}`}).
		on(consumeRoute, reply{410, `{"error":"offset 1 aged out of retention (oldest retained: 4)"}`}, replayed(4),
			unreadable(5), unreadable(6), unreadable(7), replayed(8), replayed(9))
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "1", "--to", "10")
	assert.Equal(t, "[p0 @4] 22:13:20.004 m4\n[p0 @8] 22:13:20.008 m8\n[p0 @9] 22:13:20.009 m9\n", h.stdout.String())
	assert.Equal(t, "p0: skipped 3 offset(s) [1, 4): aged out of retention\n"+
		"p0: skipped 3 offset(s) [5, 8): unreadable (corrupt, skipped by recovery)\n"+
		"3 message(s) replayed from p0 [1, 10)\n6 offset(s) skipped: aged out of retention or unreadable\n", h.stderr.String())
}

// A replay read answered 503 (the owner's reads of its round spent, say)
// is read again after its Retry-After (a second at least), not the end of
// the replay: under consume load it stopped partway.
func TestReplayRetriesAnUnavailableRead(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(consumeRoute,
		reply{503, `{"error":"this node read 67108864 bytes of records for the consumes and replays of this round, its bound: retry"}`},
		replayed(0))
	h.againstOK(broker, "replay", "orders", "--partition", "0", "--from", "0", "--to", "1")
	assert.Equal(t, []string{"offset=0&partition=0", "offset=0&partition=0"}, offsetsRead(t, broker))
	assert.Equal(t, "1 message(s) replayed from p0 [0, 1)\n", h.stderr.String())
}
