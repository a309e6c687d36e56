package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
	"narad/proc"
)

// replayOptions are the flags of narad replay.
type replayOptions struct {
	partition int
	from      int64
	fromGiven bool
	to        int64
	toGiven   bool
	raw       bool
}

// replayRange is the half-open offset range [from, to) to read, with the
// partition's stats when they were read (a --from and a --to need none).
type replayRange struct {
	from, to int64
	// statsRead tells whether oldest and highWatermark are the partition's.
	statsRead             bool
	oldest, highWatermark int64
}

func newReplayCommand(a *app) *cobra.Command {
	var options replayOptions
	cmd := &cobra.Command{
		Use:   "replay <topic> --partition P [--from A] [--to B]",
		Short: "Print a partition's records in [from, to) without consuming them",
		Long: `Read a partition's records in offset order with read-only replay reads.
--from defaults to the oldest retained offset and --to (exclusive) to the
high watermark. Records that aged out or cannot be read (410) are skipped,
with one line on stderr per run of them,
  p<partition>: skipped <n> offset(s) [<first>, <end>): <why>
and the replay stops early at the end of the log.`,
		Example: `  narad replay orders --partition 0
  narad replay orders --partition 2 --from 100 --to 200 --raw`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			options.fromGiven = cmd.Flags().Changed("from")
			options.toGiven = cmd.Flags().Changed("to")
			if err := options.check(cmd); err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			return a.replay(cmd.Context(), broker, args[0], options)
		},
	}
	flags := cmd.Flags()
	flags.IntVar(&options.partition, "partition", 0, "partition to replay (required)")
	flags.Int64Var(&options.from, "from", 0, "first offset (default: the oldest retained)")
	flags.Int64Var(&options.to, "to", 0, "end offset, exclusive (default: the high watermark)")
	flags.BoolVar(&options.raw, "raw", false, "print only the payload bytes")
	return cmd
}

func (o replayOptions) check(cmd *cobra.Command) error {
	switch {
	case !cmd.Flags().Changed("partition"):
		return usagef("replay needs --partition")
	case o.partition < 0 || o.from < 0 || o.to < 0:
		return usagef("--partition, --from and --to must not be negative")
	case o.fromGiven && o.toGiven && o.from > o.to:
		return usagef("--from %d is past --to %d", o.from, o.to)
	}
	return nil
}

func (a *app) replay(ctx context.Context, broker *client.Client, topic string, options replayOptions) error {
	bounds, err := replayBounds(ctx, broker, topic, options)
	if err != nil {
		return err
	}
	printer := a.newMessagePrinter(options.raw)
	replayed, skipped := 0, 0
	var run skipRun
	for offset := bounds.from; offset < bounds.to; {
		message, err := replayRetrying(ctx, broker, topic, options.partition, offset)
		if client.IsStatus(err, http.StatusGone) {
			next := oldestAfter(ctx, broker, topic, options.partition, offset)
			skipped += int(min(next, bounds.to) - offset)
			a.saySkipped(options.partition, run.add(offset, min(next, bounds.to), goneReason(err)))
			offset = next
			continue
		}
		a.saySkipped(options.partition, run.end())
		if err != nil || message == nil {
			a.printReplaySummary(replayed, skipped, options, bounds)
			return err
		}
		if err := printer.print(*message); err != nil {
			return err
		}
		replayed++
		offset = max(message.Offset, offset) + 1
	}
	a.saySkipped(options.partition, run.end())
	a.printReplaySummary(replayed, skipped, options, bounds)
	return nil
}

// replayUnavailableRetriesMax bounds the retries of one replay read
// answered 503 (the owner's reads of its round were spent, say, or the
// partition was handed over), each after the answer's Retry-After: a
// replay under consume load stopped partway at the first one.
const replayUnavailableRetriesMax = 10

// replayRetrying reads one offset, retrying a 503 up to
// replayUnavailableRetriesMax times.
func replayRetrying(ctx context.Context, broker *client.Client, topic string, partition int, offset int64) (*client.Message, error) {
	for retries := 0; ; retries++ {
		message, err := broker.Replay(ctx, topic, partition, offset)
		if retries == replayUnavailableRetriesMax || !client.IsStatus(err, http.StatusServiceUnavailable) {
			return message, err
		}
		if err := proc.SleepContext(ctx, max(client.RetryAfterOf(err), time.Second)); err != nil {
			return nil, err
		}
	}
}

// skipRun is a run of offsets of one partition that replay reads skipped
// on a 410, with why. The run is said on stderr in one line when it ends,
// not once per offset: each record of a corrupt stretch that recovery
// skipped answers its own 410.
type skipRun struct {
	from, to int64 // [from, to); none when equal
	reason   string
}

// add joins [from, to), skipped for reason, to the run, and returns the
// run it ends (none when it continues it).
func (r *skipRun) add(from, to int64, reason string) skipRun {
	if r.from < r.to && r.to == from && r.reason == reason {
		r.to = max(r.to, to)
		return skipRun{}
	}
	ended := *r
	*r = skipRun{from: from, to: to, reason: reason}
	return ended
}

// end ends the run (a read that did not skip) and returns it.
func (r *skipRun) end() skipRun {
	ended := *r
	*r = skipRun{}
	return ended
}

// saySkipped says a run of skipped offsets on stderr; none says nothing.
func (a *app) saySkipped(partition int, run skipRun) {
	if run.from >= run.to {
		return
	}
	fmt.Fprintf(a.stderr, "p%d: skipped %d offset(s) [%d, %d): %s\n", partition, run.to-run.from, run.from, run.to, run.reason)
}

// goneReason says why a replay read was answered 410, in the terms of the
// server's message (docs/api.md#replay): aged out of retention, or
// unreadable; any other 410 in its own words.
func goneReason(err error) string {
	var replyError *client.Error
	switch {
	case !errors.As(err, &replyError) || strings.Contains(replyError.Message, "aged out"):
		return "aged out of retention"
	case strings.Contains(replyError.Message, "unreadable"):
		return "unreadable (corrupt, skipped by recovery)"
	}
	return "gone (" + replyError.Message + ")"
}

// printReplaySummary says what was read. An empty range says why in the
// partition's terms: empty, every record aged out, or nothing retained
// below --to; it names --from only when it was given.
func (a *app) printReplaySummary(replayed, skipped int, options replayOptions, bounds replayRange) {
	partition := options.partition
	if bounds.from >= bounds.to {
		fmt.Fprintf(a.stderr, "%d message(s) replayed from p%d: %s\n", replayed, partition, emptyRangeReason(options, bounds))
		return
	}
	fmt.Fprintf(a.stderr, "%d message(s) replayed from p%d [%d, %d)\n", replayed, partition, bounds.from, bounds.to)
	if skipped > 0 {
		fmt.Fprintf(a.stderr, "%d offset(s) skipped: aged out of retention or unreadable\n", skipped)
	}
}

// emptyRangeReason says why [from, to) holds no record.
func emptyRangeReason(options replayOptions, bounds replayRange) string {
	switch {
	case bounds.statsRead && bounds.highWatermark == 0:
		return "it is empty (no record was ever produced to it)"
	case options.fromGiven:
		return fmt.Sprintf("--from %d is at or past its end (%d)", bounds.from, bounds.to)
	case options.toGiven:
		return fmt.Sprintf("it retains no record below --to %d (the oldest it retains is at offset %d)", bounds.to, bounds.oldest)
	}
	return fmt.Sprintf("it holds no record: its %d record(s) aged out of retention", bounds.highWatermark)
}

// replayBounds fills the defaults of --from and --to from the partition's
// stats.
func replayBounds(ctx context.Context, broker *client.Client, topic string, options replayOptions) (replayRange, error) {
	bounds := replayRange{from: options.from, to: options.to}
	if options.fromGiven && options.toGiven {
		return bounds, nil
	}
	described, err := broker.GetTopic(ctx, topic, client.Ptr(options.partition))
	if err != nil {
		return bounds, err
	}
	if len(described.PartitionStats) != 1 || !described.PartitionStats[0].IsAvailable() {
		return bounds, fmt.Errorf("partition %d of %s is unavailable (its owner may be down)", options.partition, topic)
	}
	stats := described.PartitionStats[0]
	bounds.statsRead, bounds.oldest, bounds.highWatermark = true, stats.OldestOffset, stats.HighWatermark
	if !options.fromGiven {
		bounds.from = stats.OldestOffset
	}
	if !options.toGiven {
		bounds.to = stats.HighWatermark
	}
	return bounds, nil
}

// oldestAfter returns where to continue after a 410 at offset: the oldest
// retained offset if it is ahead, else offset+1.
func oldestAfter(ctx context.Context, broker *client.Client, topic string, partition int, offset int64) int64 {
	described, err := broker.GetTopic(ctx, topic, client.Ptr(partition))
	if err == nil && len(described.PartitionStats) == 1 && described.PartitionStats[0].OldestOffset > offset {
		return described.PartitionStats[0].OldestOffset
	}
	return offset + 1
}
