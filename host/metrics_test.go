package host

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/node"
)

// A partition's produced and consumed counters, kept after their first
// use, add to the series of their own labels only.
func TestFlowCountersAddToTheirOwnSeries(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.Produced("orders", 1, 2, 20)
	m.Produced("orders", 1, 3, 30)
	m.Produced("orders", 2, 1, 10)
	m.Consumed("orders", 1, 4, 40)
	require.Equal(t, 5.0, counterValue(t, m.producedMessages.WithLabelValues("orders", "1")))
	require.Equal(t, 50.0, counterValue(t, m.producedBytes.WithLabelValues("orders", "1")))
	require.Equal(t, 1.0, counterValue(t, m.producedMessages.WithLabelValues("orders", "2")))
	require.Equal(t, 4.0, counterValue(t, m.consumedMessages.WithLabelValues("orders", "1")))
	require.Equal(t, 40.0, counterValue(t, m.consumedBytes.WithLabelValues("orders", "1")))
	require.Len(t, m.flows, 3)
}

func counterValue(t *testing.T, counter prometheus.Counter) float64 {
	t.Helper()
	var metric dto.Metric
	require.NoError(t, counter.Write(&metric))
	return metric.GetCounter().GetValue()
}

// A deleted topic leaves no metric series behind (topic churn must not
// grow the scrape forever), other topics keep theirs, and a topic
// re-created under the name counts from zero.
func TestADeletedTopicLeavesNoSeries(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"create orders", postJSON("/v1/topics", `{"name":"orders","partitions":3,"schema":`+orderSchema+`}`), 201, ""},
		{"create audit", postJSON("/v1/topics", `{"name":"audit","partitions":3}`), 201, ""},
		{"produce orders", postJSON("/v1/topics/orders/produce?partition=0", `{"id":"a","qty":1}`), 202, ""},
		{"produce orders again", postJSON("/v1/topics/orders/produce?partition=0", `{"id":"b","qty":2}`), 202, ""},
		{"a record the schema refuses", postJSON("/v1/topics/orders/produce?partition=0", `{"qty":3}`), 400, "does not match"},
		{"produce audit", post("/v1/topics/audit/produce?partition=0", "text/plain", "z"), 202, ""},
		{"consume orders", get("/v1/topics/orders/consume"), 200, ""},
	})
	_, before := call(t, h, get("/metrics"))
	require.Contains(t, before, `narad_messages_produced_total{partition="0",topic="orders"} 2`)
	require.Contains(t, before, `narad_consume_polls_total{outcome="hit",topic="orders"} 1`)
	require.Contains(t, before, `narad_produce_rejections_total{reason="schema",topic="orders"} 1`)

	runSteps(t, h, []step{{"delete orders", del("/v1/topics/orders"), 204, ""}})
	_, after := call(t, h, get("/metrics"))
	require.Empty(t, seriesOfTopic(after, "orders"))
	require.Contains(t, after, `narad_messages_produced_total{partition="0",topic="audit"} 1`)

	runSteps(t, h, []step{
		{"re-create orders", postJSON("/v1/topics", `{"name":"orders","partitions":3}`), 201, ""},
		{"produce to the new orders", post("/v1/topics/orders/produce?partition=0", "text/plain", "w"), 202, ""},
	})
	_, recreated := call(t, h, get("/metrics"))
	require.Contains(t, recreated, `narad_messages_produced_total{partition="0",topic="orders"} 1`)
}

// seriesOfTopic returns the lines of a scrape that carry the topic label.
func seriesOfTopic(scrape, topic string) []string {
	var lines []string
	for _, line := range strings.Split(scrape, "\n") {
		if strings.Contains(line, `topic="`+topic+`"`) {
			lines = append(lines, line)
		}
	}
	return lines
}

// The loop's queues show their depth at each scrape, beside their
// capacity: a queue near full is a node that cannot keep up.
func TestInboxGaugesShowTheQueuesDepth(t *testing.T) {
	l := &loop{inbox: make(chan input, 8), peerInbox: make(chan msg.Envelope, 4)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(newInboxGauges(l)...)
	values := func() map[string]float64 {
		families, err := reg.Gather()
		require.NoError(t, err)
		got := map[string]float64{}
		for _, family := range families {
			for _, metric := range family.GetMetric() {
				name := family.GetName()
				if labels := metric.GetLabel(); len(labels) > 0 {
					name += "/" + labels[0].GetValue()
				}
				got[name] = metric.GetGauge().GetValue()
			}
		}
		return got
	}
	require.Equal(t, map[string]float64{"narad_loop_inbox_capacity/peers": 4, "narad_loop_inbox_capacity/requests": 8,
		"narad_loop_inbox_depth/peers": 0, "narad_loop_inbox_depth/requests": 0,
		"narad_loop_peer_inbox_bytes": 0, "narad_loop_peer_inbox_bytes_max": peerInboxBytesMax}, values())
	for range 3 {
		l.inbox <- input{}
	}
	l.peerInbox <- msg.Envelope{}
	l.peerInboxBytes.Add(700)
	got := values()
	require.Equal(t, 3.0, got["narad_loop_inbox_depth/requests"])
	require.Equal(t, 1.0, got["narad_loop_inbox_depth/peers"])
	require.Equal(t, 700.0, got["narad_loop_peer_inbox_bytes"])
	<-l.inbox
	require.Equal(t, 2.0, values()["narad_loop_inbox_depth/requests"])
}

// Property: a routine node event (a move completed) is logged at info and
// counted in narad_node_events_total only; any other (a log that failed)
// is a warning and an operational error as well. (Every event used to be
// a warning and an error: a rebalance filled the error count.)
func TestRoutineEventsAreNoErrors(t *testing.T) {
	var logged strings.Builder
	m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(&logged, nil)))
	m.Event("move-completed", "orders/1 to n3")
	m.Event("log-failed", "orders/2: fsync failed")
	require.Equal(t, 1.0, counterValue(t, m.events.WithLabelValues("move-completed")))
	require.Equal(t, 1.0, counterValue(t, m.events.WithLabelValues("log-failed")))
	require.Equal(t, 0.0, counterValue(t, m.errors.WithLabelValues("node", "move-completed")))
	require.Equal(t, 1.0, counterValue(t, m.errors.WithLabelValues("node", "log-failed")))
	lines := strings.Split(strings.TrimSpace(logged.String()), "\n")
	require.Len(t, lines, 2)
	require.Contains(t, lines[0], "level=INFO")
	require.Contains(t, lines[0], "kind=move-completed")
	require.Contains(t, lines[1], "level=WARN")
	// The drained member of a three-voter cluster staying a voter is the
	// documented normal case: every decommission there counted an error.
	m.Event("voter-removal-deferred", "n3 is drained and stays a voter while the cluster has three")
	require.Equal(t, 0.0, counterValue(t, m.errors.WithLabelValues("node", "voter-removal-deferred")))
}

// A produce to a topic nobody created waits, on the single node that
// leads the metastore, for a read its sole vote confirms, then is 404:
// the scrape shows the read confirmed, none outstanding, their bound, and
// no request refused at either bound of the held requests.
func TestTheLeadersReadBarrierShowsInTheScrape(t *testing.T) {
	h := testHost(t)
	runSteps(t, h, []step{
		{"produce to a topic nobody created", post("/v1/topics/nobody/produce", "text/plain", "x"), 404, ""},
	})
	polled := make(chan struct{}) // the inventory poll, without waiting for its ticker
	h.loop.post(func(n *node.Node) {
		h.loop.metrics.setInventory(n.Stats(), n.PartitionBacklogs(), h.loop.metrics.seriesDropped.Load())
		close(polled)
	})
	<-polled
	_, scrape := call(t, h, get("/metrics"))
	body := linesStarting(scrape, "narad_meta_reads_", "narad_held_requests")
	for _, metric := range []string{
		"narad_meta_reads_confirmed_total 1\n",
		"narad_meta_reads_outstanding 0\n",
		"narad_meta_reads_outstanding_max 16\n",
		`narad_held_requests_refused_total{reason="held_full"} 0` + "\n",
		"narad_held_requests 0\n",
		"narad_held_requests_max 4096\n",
	} {
		require.Contains(t, body, metric)
	}
}

// linesStarting returns the lines of a scrape that start with one of the
// prefixes, each ended by a newline.
func linesStarting(scrape string, prefixes ...string) string {
	var kept strings.Builder
	for _, line := range strings.Split(scrape, "\n") {
		for _, prefix := range prefixes {
			if strings.HasPrefix(line, prefix) {
				kept.WriteString(line + "\n")
				break
			}
		}
	}
	return kept.String()
}

// The read and refusal counters follow the node's running totals: each
// inventory poll adds what the node counted since the one before, so a
// total published twice counts once.
func TestReadCountersAddOnlyWhatIsNew(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.reads.set(node.Stats{MetaReadsConfirmed: 3, HeldRefusedFull: 1})
	m.reads.set(node.Stats{MetaReadsConfirmed: 5, HeldRefusedFull: 1})
	m.reads.set(node.Stats{MetaReadsConfirmed: 5, HeldRefusedFull: 4})
	require.Equal(t, 5.0, counterValue(t, m.reads.confirmed))
	require.Equal(t, 4.0, counterValue(t, m.reads.refused.WithLabelValues("held_full")))
}

// The gauges the loop publishes from the node's inventory are samples,
// taken at start and every inventoryPollInterval; their help says so
// rather than "now" or "exact at every moment" (metrics audit finding 4).
func TestInventoryGaugesSayTheyAreSampled(t *testing.T) {
	require.Equal(t, 5*time.Second, inventoryPollInterval, "sampledNote names the interval")
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.setInventory(node.Stats{}, []node.PartitionState{{Topic: "t"}}, 0)
	m.setFanoutLags([]node.FanoutLinkLag{{Parent: "p", Child: "c"}}, 0)
	families, err := reg.Gather()
	require.NoError(t, err)
	help := map[string]string{}
	for _, family := range families {
		help[family.GetName()] = family.GetHelp()
	}
	for _, name := range []string{"moves_inflight", "moves_sessions", "moves_frozen_partitions", "moves_resting_destinations",
		"topics_total", "partitions_total", "topics_max", "owned_partitions", "owned_partitions_max",
		"users", "users_max", "users_bytes", "users_bytes_max", "schema_bytes", "schema_bytes_max",
		"open_partition_logs", "open_partition_logs_max", "storage_zero_tail_bytes", "storage_kept_closed_logs",
		"storage_kept_closed_log_bytes", "storage_kept_closed_log_bytes_max", "storage_open_log_index_bytes",
		"leases_held", "leases_max", "fanout_cursors", "consume_parked_polls", "relays_in_flight", "relays_in_flight_max",
		"relay_bytes_in_flight", "relay_bytes_in_flight_max", "held_requests", "held_requests_max",
		"meta_reads_outstanding", "meta_reads_outstanding_max", "disk_free_bytes", "disk_reserve_bytes", "disk_low",
		"consumer_lag_messages", "inflight_size", "acked_ahead_size", "fanout_lag_messages"} {
		require.Contains(t, help, "narad_"+name)
		require.Contains(t, help["narad_"+name], "every 5 s", name)
		require.NotRegexp(t, `\bnow\b`, help["narad_"+name], name)
	}
}

// HELP texts say what the docs say and name no internals (metrics audit
// finding 6): relays carry fan-out copies too, an ack may be rejected
// for an error, the lease bound first delivers released records again,
// and the scrape bound is a number, not a constant's name.
func TestHelpTextsMatchTheDocs(t *testing.T) {
	h := testHost(t)
	_, scrape := call(t, h, get("/metrics"))
	help := map[string]string{}
	for _, line := range strings.Split(scrape, "\n") {
		if rest, ok := strings.CutPrefix(line, "# HELP "); ok {
			name, text, _ := strings.Cut(rest, " ")
			help[name] = text
		}
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	m.Acked("t", msg.AckCommit, "error") // a vector's help shows once it holds a series
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, family := range families {
		help[family.GetName()] = family.GetHelp()
	}
	require.Contains(t, help["narad_relays_in_flight"], "fan-out copies")
	require.Contains(t, help["narad_ack_rejected_total"], "error (")
	require.Contains(t, help["narad_leases_max"], "released since")
	require.Contains(t, help["narad_http_scrapes_refused_total"], "4 being rendered, 2 of the client")
	for name, text := range help {
		require.NotContains(t, text, "scrapesMax", name)
	}
}

// A sample of the partitions taken before a topic was deleted, and set
// after the delete dropped the topic's series, does not bring them back;
// likewise a fan-out lag sample older than its link's detach. The next
// sample rebuilds the series.
func TestASampleOlderThanADropDoesNotBringItsSeriesBack(t *testing.T) {
	m := NewMetrics(prometheus.NewRegistry(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	old := []node.PartitionState{{Topic: "gone", HWM: 7}, {Topic: "kept", HWM: 3}}
	m.setInventory(node.Stats{}, old, m.seriesDropped.Load())
	require.Equal(t, 2, seriesCount(m.consumerLag))

	sampledAt := m.seriesDropped.Load() // the sample below is taken here, on the loop
	m.TopicDropped("gone")
	m.setInventory(node.Stats{Topics: 1}, old, sampledAt)
	require.Equal(t, 1, seriesCount(m.consumerLag), "the deleted topic's series stays dropped")
	require.Equal(t, 1.0, gaugeValue(t, m.topics), "the other gauges take the sample")
	m.setInventory(node.Stats{}, old[1:], m.seriesDropped.Load())
	require.Equal(t, 1, seriesCount(m.consumerLag), "a sample taken after the drop rebuilds the series")

	m.setFanoutLags([]node.FanoutLinkLag{{Parent: "p", Child: "c", Messages: 4}}, m.seriesDropped.Load())
	sampledAt = m.seriesDropped.Load()
	m.FanoutLinkGone("p", "c")
	m.setFanoutLags([]node.FanoutLinkLag{{Parent: "p", Child: "c", Messages: 4}}, sampledAt)
	require.Equal(t, 0, seriesCount(m.fanout.lag), "the detached link's series stays dropped")
}

// seriesCount is how many series a collector has.
func seriesCount(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 64)
	go func() { c.Collect(ch); close(ch) }()
	count := 0
	for range ch {
		count++
	}
	return count
}

// gaugeValue reads a gauge.
func gaugeValue(t *testing.T, g prometheus.Gauge) float64 {
	var m dto.Metric
	require.NoError(t, g.Write(&m))
	return m.GetGauge().GetValue()
}
