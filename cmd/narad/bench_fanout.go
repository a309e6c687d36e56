package main

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"narad/client"
)

// Bounds of the fan-out phases of narad bench (--children, --delay).
const (
	// benchChildrenMax bounds --children (the server allows more; a
	// bench that makes that many topics measures the machine, not fan-out).
	benchChildrenMax = 16
	// benchDelayMax bounds --delay: the bench waits out the delay.
	benchDelayMax = 10 * time.Minute
	// benchLagPoll is how often the children's lag is read; catch-up times
	// are accurate to about this much.
	benchLagPoll = 20 * time.Millisecond
	// benchCatchUpMax bounds the wait, after the produce phase (and the
	// delay), for the children to catch up.
	benchCatchUpMax = 2 * time.Minute
	// benchTagBytes is the room the unique prefix of a --delay run's
	// payloads needs in --size.
	benchTagBytes = 32
)

// fanoutFigures are the fan-out phases' figures.
type fanoutFigures struct {
	Children []childFigures `json:"children,omitempty"`
	Delay    *delayFigures  `json:"delay,omitempty"`
}

// childFigures: how fast one fan-out child received what the produce
// phase wrote into its parent.
type childFigures struct {
	Name string `json:"name"`
	// CaughtUp is false when the child still lagged benchCatchUpMax after
	// the produce phase; Seconds is then that bound.
	CaughtUp bool `json:"caught_up"`
	// Seconds runs from the start of the produce phase to the first lag
	// reading of zero after its end.
	Seconds           float64 `json:"seconds"`
	MessagesPerSecond float64 `json:"messages_per_second"`
	LagAtProduceEnd   uint64  `json:"lag_at_produce_end"`
	MaxLag            uint64  `json:"max_lag"`
	// endSeen: LagAtProduceEnd holds the first reading after the phase.
	endSeen bool
}

// delayFigures: when the records of the produce phase reached the delay
// child, against when they were due (commit in the parent plus delay).
type delayFigures struct {
	Name    string `json:"name"`
	DelayMs int64  `json:"delay_ms"`
	// Records counts the produce phase's records found in the child;
	// Missing those found in the parent but not in the child.
	Records int `json:"records"`
	Missing int `json:"missing"`
	// Early counts records committed in the child before they were due:
	// it must be 0.
	Early int `json:"early"`
	// LateMs: percentiles of (commit in child) - (commit in parent +
	// delay), in ms.
	LateMs latencyPercentiles `json:"late_ms"`
	MaxMs  float64            `json:"max_ms"`
}

// fanoutTopics are the children a fan-out bench writes through.
type fanoutTopics struct {
	parent string
	// children are the plain fan-out children, delayChild the delay child
	// ("" without --delay).
	children   []string
	delayChild string
	delayMs    int64
	// tag prefixes every payload of this run (--delay only), and
	// startOffsets holds the parent's and the delay child's high
	// watermarks per partition before the produce phase.
	tag          string
	startOffsets map[string][]int64
}

func (o benchOptions) fanout() bool { return o.children > 0 || o.delay > 0 }

func (o benchOptions) checkFanout() error {
	switch {
	case o.children < 0 || o.children > benchChildrenMax:
		return usagef("--children must be in 0..%d", benchChildrenMax)
	case o.delay < 0 || o.delay > benchDelayMax:
		return usagef("--delay must be in 0..%s", benchDelayMax)
	case o.delay > 0 && o.delay < time.Millisecond:
		return usagef("--delay must be at least 1ms")
	case o.delay > 0 && o.payloadFile != "":
		return usagef("--delay gives every message a payload of its own; it cannot be used with --payload")
	case o.delay > 0 && o.sizeBytes < benchTagBytes:
		return usagef("--delay needs --size of at least %d (each payload carries its own tag)", benchTagBytes)
	}
	return nil
}

// setupFanout makes (or checks) the children the flags ask for and
// records where the produce phase starts.
func (a *app) setupFanout(ctx context.Context, broker *client.Client, topic string, options benchOptions) (fanoutTopics, error) {
	topics := fanoutTopics{parent: topic, startOffsets: map[string][]int64{}}
	for i := range options.children {
		name := fmt.Sprintf("%s-child-%d", topic, i+1)
		if err := a.ensureChild(ctx, broker, topic, name, 0, options.partitions); err != nil {
			return topics, err
		}
		topics.children = append(topics.children, name)
	}
	if options.delay <= 0 {
		return topics, nil
	}
	topics.delayChild, topics.delayMs = topic+"-delayed", options.delay.Milliseconds()
	if err := a.ensureChild(ctx, broker, topic, topics.delayChild, topics.delayMs, options.partitions); err != nil {
		return topics, err
	}
	topics.tag = "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	for _, name := range []string{topic, topics.delayChild} {
		offsets, err := highWatermarks(ctx, broker, name)
		if err != nil {
			return topics, err
		}
		topics.startOffsets[name] = offsets
	}
	return topics, nil
}

// ensureChild creates child with parent (and delay) unless it exists; an
// existing topic must already be that parent's child with that delay.
func (a *app) ensureChild(ctx context.Context, broker *client.Client, parent, child string, delayMs int64, partitions int) error {
	existing, err := broker.GetTopic(ctx, child, client.Ptr(0))
	if client.IsStatus(err, http.StatusNotFound) {
		request := client.CreateTopicRequest{Name: child, Partitions: partitions, Parent: parent, FanoutDelayMs: delayMs}
		if _, err := broker.CreateTopic(ctx, request); err != nil {
			return fmt.Errorf("create child %s: %w", child, err)
		}
		fmt.Fprintf(a.stderr, "created child topic %s of %s (delay %d ms)\n", child, parent, delayMs)
		return nil
	}
	if err != nil {
		return err
	}
	if existing.Parent != parent || existing.FanoutDelayMs != delayMs {
		return usagef("topic %s exists but is not a child of %s with delay %d ms (parent %q, delay %d ms): delete it or pick another topic",
			child, parent, delayMs, existing.Parent, existing.FanoutDelayMs)
	}
	return nil
}

// highWatermarks returns a topic's high watermark per partition.
func highWatermarks(ctx context.Context, broker *client.Client, topic string) ([]int64, error) {
	described, err := broker.GetTopic(ctx, topic, nil)
	if err != nil {
		return nil, err
	}
	offsets := make([]int64, described.Partitions)
	for _, stats := range described.PartitionStats {
		if stats.Index >= 0 && stats.Index < len(offsets) {
			offsets[stats.Index] = stats.HighWatermark
		}
	}
	return offsets, nil
}

// taggedPayload is the payload of record index of a --delay run: the
// run's tag and the index, padded with "x" to --size bytes.
func taggedPayload(tag string, index, size int) []byte {
	payload := make([]byte, 0, size)
	payload = fmt.Appendf(payload, "%s-%d ", tag, index)
	for len(payload) < size {
		payload = append(payload, 'x')
	}
	return payload
}

// lagWatch follows the children's lag while the produce phase runs and
// until each caught up after it.
type lagWatch struct {
	broker   *client.Client
	parent   string
	children []string
	start    time.Time
	// produced is closed at the end of the produce phase; producedAt is
	// set before it closes.
	produced   chan struct{}
	producedAt time.Time
}

// run polls the lag until every child caught up after the produce phase,
// or benchCatchUpMax after its end.
func (w *lagWatch) run(ctx context.Context) []childFigures {
	figures := make([]childFigures, len(w.children))
	index := map[string]int{}
	for i, name := range w.children {
		figures[i].Name, index[name] = name, i
	}
	ended, caughtUp := false, 0
	for caughtUp < len(figures) {
		polledAt := time.Now()
		if !ended {
			select {
			case <-w.produced:
				ended = true
			default:
			}
		}
		if ended && polledAt.Sub(w.producedAt) > benchCatchUpMax {
			break
		}
		lags, err := w.broker.ListChildren(ctx, w.parent)
		if ctx.Err() != nil {
			break
		}
		if err == nil {
			caughtUp += w.record(figures, index, lags, ended, polledAt)
		}
		time.Sleep(benchLagPoll)
	}
	w.finish(figures)
	return figures
}

// record applies one lag reading and returns how many children it found
// caught up for the first time.
func (w *lagWatch) record(figures []childFigures, index map[string]int, lags client.Children, ended bool, polledAt time.Time) int {
	caughtUp := 0
	for _, lag := range lags.Children {
		i, found := index[lag.Name]
		if !found || figures[i].CaughtUp {
			continue
		}
		child := &figures[i]
		child.MaxLag = max(child.MaxLag, lag.LagMessages)
		if !ended {
			continue
		}
		if !child.endSeen {
			child.LagAtProduceEnd, child.endSeen = lag.LagMessages, true
		}
		if lag.LagMessages == 0 && lag.LagComplete {
			child.CaughtUp, child.Seconds = true, polledAt.Sub(w.start).Seconds()
			caughtUp++
		}
	}
	return caughtUp
}

// finish gives the children that never caught up the bound as their time.
func (w *lagWatch) finish(figures []childFigures) {
	for i := range figures {
		if !figures[i].CaughtUp {
			figures[i].Seconds = w.producedAt.Add(benchCatchUpMax).Sub(w.start).Seconds()
		}
	}
}

// setRates turns catch-up times into rates of the produced records.
func setRates(figures []childFigures, produced int) {
	for i := range figures {
		if figures[i].Seconds > 0 {
			figures[i].MessagesPerSecond = float64(produced) / figures[i].Seconds
		}
	}
}

// measureDelay waits for the delay child to catch up, then reads back the
// run's records in the parent and in the child and compares each one's
// commit in the child with its commit in the parent plus the delay.
func measureDelay(ctx context.Context, broker *client.Client, topics fanoutTopics, workers int) (delayFigures, error) {
	figures := delayFigures{Name: topics.delayChild, DelayMs: topics.delayMs}
	if err := waitCaughtUp(ctx, broker, topics.parent, topics.delayChild, time.Duration(topics.delayMs)*time.Millisecond+benchCatchUpMax); err != nil {
		return figures, err
	}
	committed, err := readTagged(ctx, broker, topics.parent, topics.tag, topics.startOffsets[topics.parent], workers)
	if err != nil {
		return figures, err
	}
	delivered, err := readTagged(ctx, broker, topics.delayChild, topics.tag, topics.startOffsets[topics.delayChild], workers)
	if err != nil {
		return figures, err
	}
	var late []time.Duration
	maxLate := time.Duration(0)
	for payload, parentMs := range committed {
		childMs, found := delivered[payload]
		if !found {
			figures.Missing++
			continue
		}
		lateness := time.Duration(childMs-parentMs-topics.delayMs) * time.Millisecond
		if lateness < 0 {
			figures.Early++
		}
		late = append(late, lateness)
		maxLate = max(maxLate, lateness)
	}
	figures.Records = len(late)
	percentiles := newPhaseFigures(len(late), 0, late).LatencyMs
	figures.LateMs, figures.MaxMs = percentiles, milliseconds(maxLate)
	return figures, nil
}

// waitCaughtUp polls until child's lag is zero and complete, for at most
// bound.
func waitCaughtUp(ctx context.Context, broker *client.Client, parent, child string, bound time.Duration) error {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		lags, err := broker.ListChildren(ctx, parent)
		if err == nil {
			for _, lag := range lags.Children {
				if lag.Name == child && lag.LagMessages == 0 && lag.LagComplete {
					return nil
				}
			}
		}
		time.Sleep(benchLagPoll)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fmt.Errorf("child %s did not catch up within %s", child, bound)
}

// readTagged replays topic from the given offsets to its high watermark
// and returns, per payload that starts with tag, its commit time in ms.
func readTagged(ctx context.Context, broker *client.Client, topic, tag string, from []int64, workers int) (map[string]int64, error) {
	until, err := highWatermarks(ctx, broker, topic)
	if err != nil {
		return nil, err
	}
	type position struct {
		partition int
		offset    int64
	}
	positions := make(chan position)
	found := map[string]int64{}
	var mu sync.Mutex
	var firstErr error
	var readers sync.WaitGroup
	for range workers {
		readers.Go(func() {
			for at := range positions {
				message, err := broker.Replay(ctx, topic, at.partition, at.offset)
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				if err == nil && message != nil {
					recordTagged(found, *message, tag)
				}
				mu.Unlock()
			}
		})
	}
	for partition, end := range until {
		start := int64(0)
		if partition < len(from) {
			start = from[partition]
		}
		for offset := start; offset < end && ctx.Err() == nil; offset++ {
			positions <- position{partition, offset}
		}
	}
	close(positions)
	readers.Wait()
	return found, firstErr
}

func recordTagged(found map[string]int64, message client.Message, tag string) {
	payload, err := message.Payload()
	if err != nil || !strings.HasPrefix(string(payload), tag+"-") {
		return
	}
	found[string(payload)] = message.TimestampMs
}

// produceAndFanout runs the produce phase and, with --children or
// --delay, follows the children while it runs and after it ends.
func (a *app) produceAndFanout(ctx context.Context, broker *client.Client, topic string, options benchOptions) (benchReport, error) {
	if !options.fanout() {
		return benchReport{Produce: sampleServer(ctx, broker, producePhase, func() phaseFigures {
			return runProduceBench(ctx, broker, topic, options)
		})}, nil
	}
	topics, err := a.setupFanout(ctx, broker, topic, options)
	if err != nil {
		return benchReport{}, err
	}
	if topics.tag != "" {
		options.payloadFor = func(index int) []byte { return taggedPayload(topics.tag, index, options.sizeBytes) }
	}
	// The node's counters are read outside the watch's times, so that the
	// children's lags and rates do not count the two readings.
	sample := startServerSample(ctx, broker, producePhase)
	watch := &lagWatch{broker: broker, parent: topic, children: topics.children, start: time.Now(), produced: make(chan struct{})}
	watched := make(chan []childFigures, 1)
	go func() { watched <- watch.run(ctx) }()
	report := benchReport{Produce: runProduceBench(ctx, broker, topic, options), Fanout: &fanoutFigures{}}
	watch.producedAt = time.Now()
	close(watch.produced)
	sample.finish(ctx, &report.Produce)
	if len(topics.children) > 0 {
		fmt.Fprintf(a.stderr, "waiting for %d children to catch up (at most %s)\n", len(topics.children), benchCatchUpMax)
	}
	report.Fanout.Children = <-watched
	setRates(report.Fanout.Children, report.Produce.OK)
	if topics.delayChild == "" || ctx.Err() != nil {
		return report, nil
	}
	fmt.Fprintf(a.stderr, "waiting out the delay of %s, then reading the records back\n", options.delay)
	delay, err := measureDelay(ctx, broker, topics, options.workers)
	if err != nil {
		return report, fmt.Errorf("delay child %s: %w", topics.delayChild, err)
	}
	report.Fanout.Delay = &delay
	return report, nil
}

// printFanout prints the fan-out phases' lines of the report.
func (a *app) printFanout(figures *fanoutFigures) {
	for _, child := range figures.Children {
		state := "caught up"
		if !child.CaughtUp {
			state = "DID NOT catch up"
		}
		fmt.Fprintf(a.stdout, "child %s: %s %.2fs after the produce start — %.0f msg/s; lag at produce end %d, max %d\n",
			child.Name, state, child.Seconds, child.MessagesPerSecond, child.LagAtProduceEnd, child.MaxLag)
	}
	if delay := figures.Delay; delay != nil {
		fmt.Fprintf(a.stdout, "delay child %s (%d ms): %d records, %d missing, %d early; late by p50=%.0fms p95=%.0fms p99=%.0fms max=%.0fms\n",
			delay.Name, delay.DelayMs, delay.Records, delay.Missing, delay.Early, delay.LateMs.P50, delay.LateMs.P95, delay.LateMs.P99, delay.MaxMs)
	}
}
