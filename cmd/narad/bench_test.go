package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
)

const produceRoute = "POST /v1/topics/orders/produce"

var produceLine = regexp.MustCompile(`(?m)^produce: (\d+) ok, (\d+) failed in \S+ — \d+ msg/s; latency p50=\S+ p95=\S+ p99=\S+$`)
var consumeLine = regexp.MustCompile(`(?m)^consume\+ack: (\d+) ok, (\d+) failed in \S+ — \d+ msg/s; latency p50=\S+ p99=\S+$`)

func TestBenchProduce(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	h.againstOK(broker, "bench", "orders", "--count", "20", "--workers", "4", "--size", "32")
	requests := broker.seen(produceRoute)
	require.Len(t, requests, 20)
	assert.Equal(t, strings.Repeat("x", 32), requests[0].Body)
	match := produceLine.FindStringSubmatch(strings.TrimSpace(h.stdout.String()))
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, []string{"20", "0"}, match[1:])
	if processCPU() > 0 {
		assert.Regexp(t, `(?m)^client CPU: produce \d+ µs/msg$`, h.stdout.String())
	}
}

func TestBenchBatches(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"accepted":4}`})
	h.againstOK(broker, "bench", "orders", "--count", "10", "--batch", "4", "--workers", "16", "--size", "8")
	requests := broker.seen(produceRoute)
	require.Len(t, requests, 3)
	var lineCounts []int
	for _, request := range requests {
		assert.Equal(t, "application/x-ndjson", request.Header.Get("Content-Type"))
		lineCounts = append(lineCounts, strings.Count(request.Body, "\n"))
	}
	slices.Sort(lineCounts)
	assert.Equal(t, []int{2, 4, 4}, lineCounts)
	match := produceLine.FindStringSubmatch(strings.TrimSpace(h.stdout.String()))
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, "10", match[1])
}

func TestBenchConsumeDrains(t *testing.T) {
	h := newHarness(t)
	messages := []reply{}
	for range 5 {
		messages = append(messages, reply{200, textMessage})
	}
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`}).
		on(consumeRoute, append(messages, reply{204, ""})...).on(ackRoute, reply{204, ""})
	h.againstOK(broker, "bench", "orders", "--count", "5", "--consume", "--consume-workers", "2")
	lines := phaseLines(h.stdout.String())
	require.Len(t, lines, 2, h.stdout.String())
	match := consumeLine.FindStringSubmatch(lines[1])
	require.NotNil(t, match, lines[1])
	assert.Equal(t, "5", match[1])
	assert.Len(t, broker.seen(ackRoute), 5)
	for _, request := range broker.seen(consumeRoute) {
		assert.Equal(t, "wait=2s", request.Query)
	}
}

func TestBenchJSON(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	h.againstOK(broker, "bench", "orders", "--count", "3", "--json")
	var report struct {
		Produce struct {
			OK        int                `json:"ok"`
			Failed    int                `json:"failed"`
			Seconds   float64            `json:"seconds"`
			Rate      float64            `json:"messages_per_second"`
			LatencyMs map[string]float64 `json:"latency_ms"`
		} `json:"produce"`
		Consume *json.RawMessage `json:"consume"`
	}
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &report), h.stdout.String())
	assert.Equal(t, 3, report.Produce.OK)
	assert.Zero(t, report.Produce.Failed)
	assert.Positive(t, report.Produce.Seconds)
	assert.Positive(t, report.Produce.Rate)
	assert.Len(t, report.Produce.LatencyMs, 3)
	assert.Nil(t, report.Consume, "no consume figures without --consume")
}

var ceilingLine = regexp.MustCompile(`^ceiling: (\d+) in \S+ — \d+ msg/s; latency p50=\S+ p99=\S+; produce is \d+% of it$`)

func TestBenchCeilingRunsTheSamePhaseAgainstAServerThatOnlyAnswers(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	h.againstOK(broker, "bench", "orders", "--count", "30", "--workers", "3", "--ceiling")
	assert.Len(t, broker.seen(produceRoute), 30, "the ceiling phase does not reach the broker")
	lines := phaseLines(h.stdout.String())
	require.Len(t, lines, 2, h.stdout.String())
	match := ceilingLine.FindStringSubmatch(lines[1])
	require.NotNil(t, match, lines[1])
	assert.Equal(t, "30", match[1])

	h = newHarness(t)
	h.againstOK(broker, "bench", "orders", "--count", "20", "--batch", "10", "--ceiling", "--json")
	var report benchReport
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &report), h.stdout.String())
	require.NotNil(t, report.Ceiling)
	assert.Equal(t, 20, report.Ceiling.OK)
	assert.Zero(t, report.Ceiling.Failed)
	assert.Positive(t, report.CeilingRatio)
}

func TestBenchKeysDrawsFromTheGivenNumber(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`})
	h.againstOK(broker, "bench", "orders", "--count", "40", "--keys", "3")
	keys := map[string]bool{}
	for _, request := range broker.seen(produceRoute) {
		require.Regexp(t, `^key=key-[0-2]$`, request.Query)
		keys[request.Query] = true
	}
	assert.LessOrEqual(t, len(keys), 3)
	assert.NotEmpty(t, keys)
}

func TestBenchCreatesMissingTopic(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/orders", reply{404, `{"error":"topic not found"}`}).
		on("POST /v1/topics", reply{201, ordersJSON}).on(produceRoute, reply{202, ""})
	h.againstOK(broker, "bench", "orders", "--count", "1", "--create", "--partitions", "6")
	creates := broker.seen("POST /v1/topics")
	require.Len(t, creates, 1)
	assert.JSONEq(t, `{"name":"orders","partitions":6}`, creates[0].Body)
	assert.Contains(t, h.stderr.String(), "created topic orders\n")

	h.againstOK(broker.on("GET /v1/topics/orders", reply{200, ordersJSON}), "bench", "orders", "--count", "1", "--create")
	assert.Len(t, broker.seen("POST /v1/topics"), 1, "an existing topic is not created again")
}

func TestBenchCreatesASchemaTopicAndSendsThePayloadFile(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("GET /v1/topics/typed", reply{404, `{"error":"topic not found"}`}).
		on("POST /v1/topics", reply{201, ordersJSON}).on("POST /v1/topics/typed/produce", reply{202, ""})
	schema := writeSchemaFile(t, `{"type":"object","required":["id"]}`)
	payload := writeSchemaFile(t, `{"id":"a-1"}`+"\n")
	h.againstOK(broker, "bench", "typed", "--count", "3", "--create", "--schema", schema, "--payload", payload)
	assert.JSONEq(t, `{"name":"typed","schema":{"type":"object","required":["id"]}}`, broker.seen("POST /v1/topics")[0].Body)
	produced := broker.seen("POST /v1/topics/typed/produce")
	require.Len(t, produced, 3)
	assert.Equal(t, `{"id":"a-1"}`, produced[0].Body)
}

// A drain's failed consumes are failures, not empty polls: they are
// counted and reported, a worker stops after benchDrainErrorsMax of them in
// a row, and the command fails.
func TestBenchDrainCountsFailedConsumes(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{202, `{"partition":0,"offset":1}`}).
		on(consumeRoute, reply{200, textMessage}, reply{200, textMessage}, reply{500, `{"error":"disk failed"}`}).
		on(ackRoute, reply{204, ""})
	assert.Equal(t, 1, h.against(broker, "bench", "orders", "--count", "4", "--consume", "--consume-workers", "1"))
	match := consumeLine.FindStringSubmatch(h.stdout.String())
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, []string{"2", "5"}, match[1:])
	assert.Len(t, broker.seen(consumeRoute), 2+benchDrainErrorsMax)
	assert.Equal(t, "narad: 5 consumes or acks failed; first error: http 500: disk failed\n", h.stderr.String())
}

func TestBenchReportsFailures(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on(produceRoute, reply{503, `{"error":"no live partition owner"}`})
	assert.Equal(t, 1, h.against(broker, "bench", "orders", "--count", "4", "--workers", "2"))
	match := produceLine.FindStringSubmatch(strings.TrimSpace(h.stdout.String()))
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, []string{"0", "4"}, match[1:])
	assert.Equal(t, "narad: 4 of 4 messages failed; first error: http 503: no live partition owner\n", h.stderr.String())
}

func TestBenchFlagErrors(t *testing.T) {
	blank := writeSchemaFile(t, " \n\t\n") // a payload of white space alone is empty once trimmed
	for _, args := range [][]string{
		{"--payload", blank},
		{"--count", "0"}, {"--size", "0"}, {"--size", "1048577"}, {"--workers", "0"},
		{"--workers", "1025"}, {"--consume-workers", "0"}, {"--batch", "0"}, {"--batch", "1001"},
		{"--schema", "x.json"}, {"--create", "--schema", "/nonexistent/x.json"}, {"--payload", "/nonexistent/p.json"},
		{"--keys", "-1"}, {"--keys", "1048577"},
	} {
		h := newHarness(t)
		broker := newFakeBroker(t)
		assert.Equal(t, 2, h.against(broker, append([]string{"bench", "orders"}, args...)...), "%v", args)
		assert.Empty(t, broker.seen(""))
	}
}

func TestBenchReportFormatting(t *testing.T) {
	var latencies []time.Duration
	for i := 100; i >= 1; i-- {
		latencies = append(latencies, time.Duration(i)*time.Millisecond)
	}
	produce := newPhaseFigures(1000, 2*time.Second, latencies)
	produce.Failed = 3
	consume := newPhaseFigures(990, 1500*time.Millisecond, []time.Duration{800 * time.Microsecond, 1234567 * time.Nanosecond})
	h := newHarness(t)
	require.NoError(t, h.app.printBenchReport(benchReport{Produce: produce, Consume: &consume}, false))
	assert.Equal(t, "produce: 1000 ok, 3 failed in 2s — 500 msg/s; latency p50=50ms p95=95ms p99=99ms\n"+
		"consume+ack: 990 ok, 0 failed in 1.5s — 660 msg/s; latency p50=800µs p99=1.23ms\n", h.stdout.String())
	assert.Equal(t, latencyPercentiles{P50: 50, P95: 95, P99: 99}, produce.LatencyMs)
}

// phaseLines are the lines of a bench report but its client CPU and
// server lines.
func phaseLines(report string) []string {
	var lines []string
	for line := range strings.Lines(strings.TrimSpace(report)) {
		if !strings.HasPrefix(line, "client CPU:") && !strings.HasPrefix(line, "server (") {
			lines = append(lines, strings.TrimSuffix(line, "\n"))
		}
	}
	return lines
}

func TestBenchReportsClientCPU(t *testing.T) {
	produce := newPhaseFigures(1000, time.Second, nil)
	produce.ClientCPUMicrosPerMessage = 73.4
	consume := newPhaseFigures(990, time.Second, nil)
	consume.ClientCPUMicrosPerMessage = 112.6
	h := newHarness(t)
	require.NoError(t, h.app.printBenchReport(benchReport{Produce: produce, Consume: &consume}, false))
	assert.Contains(t, h.stdout.String(), "\nclient CPU: produce 73 µs/msg, consume+ack 113 µs/msg\n")
	h = newHarness(t)
	require.NoError(t, h.app.printBenchReport(benchReport{Produce: produce, Consume: &consume}, true))
	assert.Contains(t, h.stdout.String(), `"client_cpu_us_per_message": 112.6`)
}

func TestClientCPUPerMessage(t *testing.T) {
	assert.Zero(t, clientCPU{}.microsPerMessage(10), "unknown start")
	assert.Zero(t, clientCPU{start: time.Nanosecond}.microsPerMessage(0), "no message")
	if processCPU() > 0 {
		assert.Positive(t, clientCPU{start: time.Nanosecond}.microsPerMessage(1))
	}
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes it.
type lockedBuffer struct {
	mu     sync.Mutex
	buffer bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.String()
}

// The hidden command bench --ceiling starts as a child process prints its
// URL, answers every produce 202 like the broker, and stops when its
// stdin ends.
func TestCeilingServerCommandAnswersUntilStdinEnds(t *testing.T) {
	h := newHarness(t)
	stdin, closeStdin := io.Pipe()
	stdout := &lockedBuffer{}
	h.app.stdin, h.app.stdout = stdin, stdout
	exited := make(chan int, 1)
	go func() { exited <- run(context.Background(), h.app, []string{ceilingServerCommand}) }()
	var url string
	require.Eventually(t, func() bool {
		url = strings.TrimSpace(stdout.String())
		return strings.HasSuffix(stdout.String(), "\n")
	}, 5*time.Second, 5*time.Millisecond)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)

	placement, err := client.New(url).Produce(context.Background(), "any", []byte("x"), client.ProduceOptions{})
	require.NoError(t, err)
	assert.Equal(t, client.Placement{Partition: 0, Offset: 0}, placement)

	require.NoError(t, closeStdin.Close())
	select {
	case code := <-exited:
		assert.Zero(t, code)
	case <-time.After(5 * time.Second):
		t.Fatal("the ceiling server did not stop when its stdin ended")
	}
}

// Interrupting a bench (Ctrl-C cancels its context) stops its workers
// taking requests: what was cut short counts neither as failed nor in
// the latencies, and the report says the phase was interrupted.
func TestBenchInterruptedStopsAndSaysSo(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var seen sync.Mutex
	count := 0
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		seen.Lock()
		count++
		if count == 50 {
			cancel()
		}
		seen.Unlock()
		w.WriteHeader(http.StatusAccepted)
		_, _ = io.WriteString(w, `{"partition":0,"offset":1}`)
	}))
	t.Cleanup(server.Close)
	options := benchOptions{count: 100_000, workers: 4, batch: 1, payload: []byte("x")}
	figures := runProduceBench(ctx, client.New(server.URL), "orders", options)
	require.True(t, figures.Interrupted)
	require.Zero(t, figures.Failed, "requests cut short are no failures")
	require.Less(t, figures.OK, 100_000)
	seen.Lock()
	defer seen.Unlock()
	require.LessOrEqual(t, count, 50+options.workers, "no worker takes a request after the interrupt")

	var out bytes.Buffer
	(&app{stdout: &out}).printBenchReport(benchReport{Produce: figures}, false)
	require.Contains(t, out.String(), "(interrupted)")
}

// With --topics N the produce phase spreads its requests round-robin over
// <topic>-1 ... <topic>-N, which --create makes unless they exist (a 409
// is an existing one), saying how many it made; --topics does not go with
// the phases that read one topic back.
func TestBenchTopicsSpreadsTheProduceOverManyTopics(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics", reply{201, ordersJSON}, reply{409, `{"error":"topic exists"}`}, reply{201, ordersJSON})
	for _, name := range []string{"orders-1", "orders-2", "orders-3"} {
		broker.on("POST /v1/topics/"+name+"/produce", reply{202, `{"partition":0,"offset":1}`})
	}
	h.againstOK(broker, "bench", "orders", "--count", "12", "--workers", "4", "--topics", "3", "--create", "--partitions", "3")
	creates := broker.seen("POST /v1/topics")
	require.Len(t, creates, 3)
	assert.JSONEq(t, `{"name":"orders-2","partitions":3}`, creates[1].Body)
	assert.Contains(t, h.stderr.String(), "created 2 topics (1 existed)\n")
	for _, name := range []string{"orders-1", "orders-2", "orders-3"} {
		assert.Len(t, broker.seen("POST /v1/topics/"+name+"/produce"), 4, name)
	}
	assert.Empty(t, broker.seen(produceRoute), "no request goes to the topic itself")
	match := produceLine.FindStringSubmatch(strings.TrimSpace(h.stdout.String()))
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, []string{"12", "0"}, match[1:])

	for _, args := range [][]string{{"--topics", "0"}, {"--topics", "10001"}, {"--topics", "2", "--consume"}, {"--topics", "2", "--children", "1"}} {
		assert.Equal(t, exitUsage, h.against(broker, append([]string{"bench", "orders"}, args...)...), args)
	}
}

// A drain that reaches its target on a topic holding more records leaves
// none leased: a consume answered after the target releases its record
// (nack) instead of being cancelled while its answer is on its way (the
// record would stay leased for the topic's visibility timeout, and a next
// run on the topic would find that partition's head stuck). Here every
// consume after the fifth answers 50 ms after the fifth ack arrived, once
// the drain reached its target (well within benchDrainGrace); each record
// the server handed out is acked or released.
func TestBenchDrainReleasesWhatItConsumesPastItsTarget(t *testing.T) {
	var mu sync.Mutex
	consumes, handedOut, acks, nacks := 0, 0, 0, 0
	targetReached := make(chan struct{})
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route := r.Method + " " + r.URL.Path
		mu.Lock()
		defer mu.Unlock()
		switch {
		case route == produceRoute:
			w.WriteHeader(http.StatusAccepted)
			_, _ = io.WriteString(w, `{"partition":0,"offset":1}`)
		case route == consumeRoute:
			consumes++
			if consumes > 5 {
				mu.Unlock()
				<-targetReached
				time.Sleep(50 * time.Millisecond) // the client saw its fifth ack answered
				mu.Lock()
			}
			handedOut++
			_, _ = io.WriteString(w, textMessage)
		case route == ackRoute && r.URL.Query().Get("extend") == "0":
			nacks++
			w.WriteHeader(http.StatusNoContent)
		case route == ackRoute:
			acks++
			if acks == 5 {
				close(targetReached)
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(server.Close)
	h := newHarness(t)
	h.runOK("-s", server.URL, "bench", "orders", "--count", "5", "--consume", "--consume-workers", "4")
	server.Close() // waits for the handlers still answering
	mu.Lock()
	defer mu.Unlock()
	assert.GreaterOrEqual(t, acks, 5)
	assert.Equal(t, handedOut, acks+nacks, "a record handed out was neither acked nor released")
	match := consumeLine.FindStringSubmatch(phaseLines(h.stdout.String())[1])
	require.NotNil(t, match, h.stdout.String())
	assert.Equal(t, strconv.Itoa(acks), match[1])
}
