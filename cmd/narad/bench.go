package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
)

const (
	// benchWorkersMax bounds the concurrent producers and consumers.
	benchWorkersMax = 1024
	// benchConsumeWait is the long-poll wait of the drain; a worker stops
	// after benchEmptyPollsMax empty polls in a row.
	benchConsumeWait   = 2 * time.Second
	benchEmptyPollsMax = 2
	// benchDrainErrorsMax: a drain worker stops after this many failed
	// consumes or acks in a row (the server is gone or refuses).
	benchDrainErrorsMax = 5
	// benchDrainGrace is how long, once the drain acked its target, the
	// consumes still in flight may answer before they are cancelled. A
	// consume answered with a record after the target releases it (nack):
	// cancelled instead while its answer was on its way, it would leave
	// the record leased for the topic's visibility timeout, and the next
	// run on a topic holding more records would find that partition's
	// head stuck (its acks then fail with 503, the acked-ahead set full).
	benchDrainGrace = 500 * time.Millisecond
	// benchIdleConnsPerWorker sizes the shared transport's idle pool.
	benchIdleConnsPerWorker = 2
	// benchKeysMax bounds --keys.
	benchKeysMax = 1 << 20
	// benchTopicsMax bounds --topics: the server's default topic.max_topics.
	benchTopicsMax = 10_000
)

// benchOptions are the flags of narad bench.
type benchOptions struct {
	count          int
	sizeBytes      int
	workers        int
	batch          int
	consume        bool
	consumeWorkers int
	create         bool
	partitions     int
	asJSON         bool
	// schemaFile is the JSON Schema of a topic made by --create; "" for
	// none.
	schemaFile string
	// payloadFile holds the payload of every message (instead of --size
	// bytes of "x"), e.g. JSON that matches the topic's schema.
	payloadFile string
	// payload is what each message carries, set from the flags before the
	// run.
	payload []byte
	// schema is the content of schemaFile, read before the run.
	schema []byte
	// keys: when above 0, every record carries a key drawn at random
	// from that many.
	keys int
	// ceiling: also run the produce phase against a server process that
	// only answers.
	ceiling bool
	// children and delay: fan-out children to make and follow, and the
	// delay of a delay child to measure (0: none); see bench_fanout.go.
	children int
	delay    time.Duration
	// progress, when set, prints the progress of a phase named label
	// (produce, ceiling, consume) while it runs; set by bench from the app.
	progress func(label string, total int, done func() int) *progress
	// phase names the produce phase in its progress lines: "produce", or
	// "ceiling" for the run against the ceiling server.
	phase string
	// payloadFor, when set, gives record index its own payload.
	payloadFor func(index int) []byte
	// topics: the produce phase spreads its requests over this many
	// topics, <topic>-1 ... <topic>-N, round-robin by request (1: the
	// topic itself); topicNames holds their names, set before the run.
	topics     int
	topicNames []string
}

// benchLong is the --help text of narad bench.
var benchLong = fmt.Sprintf(`Produce --count messages of --size bytes from --workers concurrent
workers, --batch records per request (1: single produce; more: NDJSON batch),
and report throughput and request latency percentiles. With --consume the
topic is then drained with consume+ack from --consume-workers workers; a
worker stops after %[1]d empty long polls in a row, or %[2]d failed requests in a
row. Failed consumes and acks are reported and make the command fail. The
drain stops once it acked as many messages as the run produced; a record
consumed past that (the topic held more) is released for redelivery, so
the run leaves nothing leased behind it.

A topic with a JSON Schema accepts only JSON that matches it: give
--payload FILE, the message every request sends (it replaces --size), and
--schema FILE to have --create make the topic with that schema.

With --ceiling the same produce phase (same workers, sizes and batches)
then runs against a server in a process of its own, on loopback, that
reads each request and answers 202 without doing anything else. It is
served by the same HTTP connection server as the broker's API, so the
ceiling is the fastest answering server this machine runs: the most any
broker here could reach with this client, and the gap to it is what the
broker itself spends. The report gives both rates and their ratio, so
figures taken on a busy machine can still be compared.

With --topics N (above 1) the produce phase spreads its requests
round-robin over N topics named <topic>-1 ... <topic>-N (made by --create
with --partitions each, unless they exist), as a broker with many topics
sees them: compare the figures of 1, 300 and 2,000 topics for the cost
of many partitions per node (their logs close and reopen past
storage.open_logs_max). It does not go with --consume, --children or
--delay.

A "client CPU" line gives the bench's own CPU time (user + system) per
message of each phase: when client and server share a machine's cores,
what the client spends is CPU the server does not get. To spend less, the
bench talks to a plain http:// server through its own HTTP/1.1 transport:
the worker that sends a request reads its answer itself, on a kept-alive
connection, with none of Go's standard transport's hand-offs between
goroutines. An https:// server, or one reached through a proxy, gets
Go's standard transport.

A "server" line per phase explains it from the node the bench talks to,
read from its /metrics before and after the phase: for produce, the sync
rounds that made records durable there, their records and fsyncs each,
the group syncs (syncfs calls), the persists of anything to sync and
their mean time, and how often the loop waited to gather more requests;
for each phase, the mean time its requests spent in the node's handler
(a consume's includes its long poll's wait for a record). They count all
that node did meanwhile (other clients' requests, fan-out copies), and
in a cluster not the rounds at the owners it forwarded records to. A
node whose /metrics cannot be read within 5s, or that restarted during
the phase, gets "no figures" and the reason.

With --children N the topic gets N fan-out children (<topic>-child-1 ...,
made unless they exist as its children) and the report says, per child,
when it had received everything the produce phase wrote (from the start
of that phase, read from the children's lag every 20ms) and at what rate.
Compare the produce figures of runs with 0, 1 and 4 children for the cost
of fan-out on the parent. With --delay D the topic also gets a delay child
<topic>-delayed; once it caught up, the run's records are read back from
both topics and each one's commit in the child is compared with its commit
in the parent plus D: none may be early, and the report gives how late.`, benchEmptyPollsMax, benchDrainErrorsMax)

func newBenchCommand(a *app) *cobra.Command {
	var options benchOptions
	cmd := &cobra.Command{
		Use:   "bench <topic>",
		Short: "Measure produce (and consume+ack) throughput and latency",
		Long:  benchLong,
		Example: `  narad bench orders --create
  narad bench orders --count 100000 --workers 16 --batch 100 --consume
  narad bench orders --workers 64 --ceiling
  narad bench orders --keys 1000
  narad bench many --create --topics 2000 --workers 16 --count 20000
  narad bench orders --create --children 4
  narad bench orders --create --children 1 --delay 2s
  narad bench orders --json | jq .produce.messages_per_second
  narad bench typed --create --schema order.schema.json --payload order.json`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if !cmd.Flags().Changed("consume-workers") {
				options.consumeWorkers = options.workers
			}
			if err := options.check(); err != nil {
				return err
			}
			if err := a.readBenchFiles(&options); err != nil {
				return err
			}
			newHTTPClient := func() *http.Client {
				idleMax := benchIdleConnsPerWorker * max(options.workers, options.consumeWorkers)
				return &http.Client{Transport: &benchTransport{lean: newLeanTransport(idleMax),
					standard: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: idleMax}}}
			}
			httpClient := newHTTPClient()
			broker, err := a.newClient(cmd, client.WithHTTPClient(httpClient))
			if err != nil {
				return err
			}
			defer httpClient.CloseIdleConnections()
			return a.bench(cmd.Context(), broker, args[0], options, newHTTPClient)
		},
	}
	flags := cmd.Flags()
	flags.IntVar(&options.count, "count", 10000, "messages to produce")
	flags.IntVar(&options.sizeBytes, "size", 256, "payload size in bytes")
	flags.IntVar(&options.workers, "workers", 8, "concurrent producers")
	flags.IntVar(&options.batch, "batch", 1, "records per produce request (1: single produce; >1: NDJSON batch)")
	flags.BoolVar(&options.consume, "consume", false, "then drain the topic with consume+ack")
	flags.IntVar(&options.consumeWorkers, "consume-workers", 0, "concurrent consumers (default: the value of --workers)")
	flags.BoolVar(&options.create, "create", false, "create the topic if it does not exist")
	flags.IntVar(&options.partitions, "partitions", 0, "partitions of a topic made by --create (0: server default)")
	flags.BoolVar(&options.asJSON, "json", false, "print the figures as JSON")
	flags.StringVar(&options.schemaFile, "schema", "", "JSON Schema of the topic that --create makes (needs --create)")
	flags.StringVar(&options.payloadFile, "payload", "", "file whose content every message carries (replaces --size)")
	flags.IntVar(&options.keys, "keys", 0, "give each record a key drawn at random from this many (0: no key)")
	flags.BoolVar(&options.ceiling, "ceiling", false, "also run the produce phase against a loopback server process that only answers, and print the ratio")
	flags.IntVar(&options.children, "children", 0, "make (or reuse) this many fan-out children <topic>-child-N and measure how fast they receive the produce phase")
	flags.DurationVar(&options.delay, "delay", 0, "make (or reuse) a delay child <topic>-delayed with this delay and measure delivery against the due time")
	flags.IntVar(&options.topics, "topics", 1, "spread the produce phase over this many topics <topic>-1 ... <topic>-N (1: the topic itself)")
	return cmd
}

// readBenchFiles reads the payload and the schema the flags name.
func (a *app) readBenchFiles(options *benchOptions) error {
	options.payload = bytes.Repeat([]byte("x"), options.sizeBytes)
	if options.payloadFile != "" {
		payload, err := readMessageFile(options.payloadFile)
		if err != nil {
			return usagef("--payload: %v", err)
		}
		payload = bytes.TrimSpace(payload) // checked trimmed: what is sent
		if len(payload) == 0 || len(payload) > messageBytesMax {
			return usagef("--payload: the message must have 1 to %d bytes besides surrounding white space", messageBytesMax)
		}
		options.payload = payload
	}
	if options.schemaFile == "" {
		return nil
	}
	if !options.create {
		return usagef("--schema needs --create")
	}
	schema, err := a.readSchemaFile(options.schemaFile)
	options.schema = schema
	return err
}

func (o benchOptions) check() error {
	switch {
	case o.count < 1:
		return usagef("--count must be at least 1")
	case o.sizeBytes < 1 || o.sizeBytes > messageBytesMax:
		return usagef("--size must be in 1..%d", messageBytesMax)
	case o.workers < 1 || o.workers > benchWorkersMax || o.consumeWorkers < 1 || o.consumeWorkers > benchWorkersMax:
		return usagef("--workers and --consume-workers must be in 1..%d", benchWorkersMax)
	case o.batch < 1 || o.batch > batchRecordsMax:
		return usagef("--batch must be in 1..%d", batchRecordsMax)
	case o.partitions < 0:
		return usagef("--partitions must not be negative")
	case o.keys < 0 || o.keys > benchKeysMax:
		return usagef("--keys must be in 0..%d", benchKeysMax)
	case o.topics < 1 || o.topics > benchTopicsMax:
		return usagef("--topics must be in 1..%d", benchTopicsMax)
	case o.topics > 1 && (o.consume || o.children > 0 || o.delay > 0):
		return usagef("--topics above 1 does not go with --consume, --children or --delay")
	}
	return o.checkFanout()
}

func (a *app) bench(ctx context.Context, broker *client.Client, topic string, options benchOptions, newHTTPClient func() *http.Client) error {
	options.progress, options.phase = a.startProgress, "produce"
	options.topicNames = benchTopicNames(topic, options.topics)
	if options.create {
		if err := a.ensureBenchTopics(ctx, broker, options); err != nil {
			return err
		}
	}
	report, err := a.produceAndFanout(ctx, broker, topic, options)
	if err != nil {
		return err
	}
	if options.consume && report.Produce.OK > 0 && ctx.Err() == nil {
		consume := sampleServer(ctx, broker, drainPhase, func() phaseFigures {
			return runConsumeBench(ctx, broker, topic, options.consumeWorkers, report.Produce.OK, options.progress)
		})
		report.Consume = &consume
	}
	if options.ceiling && ctx.Err() == nil {
		ceiling, err := runCeilingBench(ctx, topic, options, newHTTPClient, a.startCeiling)
		if err != nil {
			return fmt.Errorf("ceiling server: %w", err)
		}
		report.setCeiling(ceiling)
	}
	if err := a.printBenchReport(report, options.asJSON); err != nil {
		return err
	}
	if report.Produce.Failed > 0 {
		return fmt.Errorf("%d of %d messages failed; first error: %s", report.Produce.Failed, options.count, report.Produce.FirstError)
	}
	if report.Consume != nil && report.Consume.Failed > 0 {
		return fmt.Errorf("%d consumes or acks failed; first error: %s", report.Consume.Failed, report.Consume.FirstError)
	}
	return nil
}

// ensureTopic creates the topic unless it exists.
func (a *app) ensureTopic(ctx context.Context, broker *client.Client, request client.CreateTopicRequest) error {
	_, err := broker.GetTopic(ctx, request.Name, client.Ptr(0))
	if !client.IsStatus(err, http.StatusNotFound) {
		return err
	}
	if _, err := broker.CreateTopic(ctx, request); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "created topic %s\n", request.Name)
	return nil
}

// benchTopicNames names the topics of --topics n: topic itself for 1.
func benchTopicNames(topic string, n int) []string {
	if n <= 1 {
		return []string{topic}
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("%s-%d", topic, i+1)
	}
	return names
}

// ensureBenchTopics creates the bench's topics that do not exist: the
// topic as ensureTopic does, or the --topics ones with a progress line
// and a count at the end rather than a line each.
func (a *app) ensureBenchTopics(ctx context.Context, broker *client.Client, options benchOptions) error {
	request := client.CreateTopicRequest{Partitions: options.partitions, Schema: options.schema}
	if len(options.topicNames) == 1 {
		request.Name = options.topicNames[0]
		return a.ensureTopic(ctx, broker, request)
	}
	var done, created atomic.Int64
	if options.progress != nil {
		progress := options.progress("create", len(options.topicNames), func() int { return int(done.Load()) })
		defer progress.Stop()
	}
	for _, name := range options.topicNames {
		request.Name = name
		_, err := broker.CreateTopic(ctx, request)
		switch {
		case err == nil:
			created.Add(1)
		case !client.IsStatus(err, http.StatusConflict):
			return fmt.Errorf("creating topic %s: %w", name, err)
		}
		done.Add(1)
	}
	fmt.Fprintf(a.stderr, "created %d topics (%d existed)\n", created.Load(), int64(len(options.topicNames))-created.Load())
	return nil
}

// latencyLog collects request latencies from several workers.
type latencyLog struct {
	mu        sync.Mutex
	latencies []time.Duration // guarded by mu
}

func (l *latencyLog) add(latencies []time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.latencies = append(l.latencies, latencies...)
}

// runProduceBench sends options.count messages from options.workers
// workers, options.batch records per request.
func runProduceBench(ctx context.Context, broker *client.Client, topic string, options benchOptions) phaseFigures {
	requests := (options.count + options.batch - 1) / options.batch
	var nextRequest, okCount, failedCount atomic.Int64
	var firstError atomic.Value
	var log latencyLog
	var workers sync.WaitGroup
	if options.progress != nil {
		progress := options.progress(options.phase, options.count, func() int { return int(okCount.Load() + failedCount.Load()) })
		defer progress.Stop()
	}
	start, cpu := time.Now(), startClientCPU()
	for range options.workers {
		workers.Go(func() {
			var latencies []time.Duration
			for index := nextRequest.Add(1) - 1; index < int64(requests) && ctx.Err() == nil; index = nextRequest.Add(1) - 1 {
				size := min(options.batch, options.count-int(index)*options.batch)
				began := time.Now()
				err := produceRecords(ctx, broker, options.topicOf(topic, index), &options, int(index)*options.batch, size)
				if err != nil && ctx.Err() != nil {
					break // interrupted: neither a failure of the server nor a latency
				}
				latencies = append(latencies, time.Since(began))
				if err != nil {
					failedCount.Add(int64(size))
					firstError.CompareAndSwap(nil, err.Error())
					continue
				}
				okCount.Add(int64(size))
			}
			log.add(latencies)
		})
	}
	workers.Wait()
	figures := newPhaseFigures(int(okCount.Load()), time.Since(start), log.latencies)
	figures.Failed = int(failedCount.Load())
	figures.Interrupted = ctx.Err() != nil
	figures.ClientCPUMicrosPerMessage = cpu.microsPerMessage(figures.OK + figures.Failed)
	if text, found := firstError.Load().(string); found {
		figures.FirstError = text
	}
	return figures
}

// topicOf is the topic request index produces to: topic itself, or the
// --topics ones round-robin.
func (o *benchOptions) topicOf(topic string, index int64) string {
	if len(o.topicNames) <= 1 {
		return topic
	}
	return o.topicNames[index%int64(len(o.topicNames))]
}

// payloadOf is the payload of record index.
func (o *benchOptions) payloadOf(index int) []byte {
	if o.payloadFor != nil {
		return o.payloadFor(index)
	}
	return o.payload
}

// produceRecords sends records first..first+size-1 in one request.
func produceRecords(ctx context.Context, broker *client.Client, topic string, options *benchOptions, first, size int) error {
	if options.batch <= 1 {
		_, err := broker.Produce(ctx, topic, options.payloadOf(first), benchProduceOptions(options.keys))
		return err
	}
	records := make([]client.BatchRecord, size)
	for i := range records {
		records[i] = client.NewBatchRecord(options.payloadOf(first+i), benchProduceOptions(options.keys))
	}
	_, err := broker.ProduceBatch(ctx, topic, records)
	return err
}

// benchProduceOptions gives a record a key drawn at random from keys
// (none when keys is 0).
func benchProduceOptions(keys int) client.ProduceOptions {
	if keys == 0 {
		return client.ProduceOptions{}
	}
	return client.ProduceOptions{Key: "key-" + strconv.Itoa(rand.IntN(keys))}
}

// runConsumeBench drains the topic with consume+ack until target messages
// were acked or every worker stopped (printing its progress with
// startProgress when not nil): after benchEmptyPollsMax empty polls
// in a row, or benchDrainErrorsMax failed requests in a row. A failed
// consume or ack counts in Failed (with the first error), never as an
// empty poll.
func runConsumeBench(ctx context.Context, broker *client.Client, topic string, workerCount, target int,
	startProgress func(label string, total int, done func() int) *progress) phaseFigures {
	drainContext, stop := context.WithCancel(ctx)
	defer stop()
	var consumed, failed atomic.Int64
	var reachedAt atomic.Pointer[time.Time] // when the drain acked its target; nil before
	if startProgress != nil {
		progress := startProgress("consume", target, func() int { return int(consumed.Load()) })
		defer progress.Stop()
	}
	var firstError atomic.Value
	var log latencyLog
	var workers sync.WaitGroup
	start, cpu := time.Now(), startClientCPU()
	for range workerCount {
		workers.Go(func() {
			tally := drainTally{acked: func() {
				if consumed.Add(1) < int64(target) {
					return
				}
				if now := time.Now(); reachedAt.CompareAndSwap(nil, &now) {
					time.AfterFunc(benchDrainGrace, stop)
				}
			}, reached: func() bool { return reachedAt.Load() != nil }, failed: func(err error) {
				failed.Add(1)
				firstError.CompareAndSwap(nil, err.Error())
			}}
			log.add(drainWorker(drainContext, broker, topic, tally))
		})
	}
	workers.Wait()
	elapsed := time.Since(start)
	if at := reachedAt.Load(); at != nil {
		elapsed = at.Sub(start) // the grace after the target is not the drain's
	}
	figures := newPhaseFigures(int(consumed.Load()), elapsed, log.latencies)
	figures.Failed = int(failed.Load())
	if text, found := firstError.Load().(string); found {
		figures.FirstError = text
	}
	figures.ClientCPUMicrosPerMessage = cpu.microsPerMessage(figures.OK)
	return figures
}

// drainTally receives a drain worker's outcomes: acked per message acked,
// failed per consume or ack that failed; reached reports that the drain
// acked its target (the worker then takes no more).
type drainTally struct {
	acked   func()
	reached func() bool
	failed  func(error)
}

// drainWorker consumes and acks until the drain reached its target, its
// context ends, it sees benchEmptyPollsMax empty polls in a row, or
// benchDrainErrorsMax failed requests in a row. A poll cut by the end of
// the run's own context is no failure; an ack, which that end does not
// cut, fails for real. A record consumed once the target was reached is
// released, not acked (benchDrainGrace).
func drainWorker(ctx context.Context, broker *client.Client, topic string, tally drainTally) []time.Duration {
	var latencies []time.Duration
	emptyPolls, errorsInARow := 0, 0
	for emptyPolls < benchEmptyPollsMax && errorsInARow < benchDrainErrorsMax && ctx.Err() == nil && !tally.reached() {
		began := time.Now()
		message, err := broker.Consume(ctx, topic, client.ConsumeOptions{Wait: benchConsumeWait})
		if err != nil && ctx.Err() != nil {
			return latencies // the run ended during the poll
		}
		if err == nil && message != nil && tally.reached() {
			_ = broker.Nack(context.WithoutCancel(ctx), topic, message.ReceiptHandle) // else it lapses: a visibility timeout
			return latencies
		}
		if err == nil && message != nil {
			err = broker.Ack(context.WithoutCancel(ctx), topic, message.ReceiptHandle)
		}
		switch {
		case err != nil:
			errorsInARow++
			tally.failed(err)
		case message == nil:
			emptyPolls, errorsInARow = emptyPolls+1, 0
		default:
			emptyPolls, errorsInARow = 0, 0
			latencies = append(latencies, time.Since(began))
			tally.acked()
		}
	}
	return latencies
}
