package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
	"narad/proc"
)

const (
	// messageBytesMax is the server's cap on one produce body
	// (docs/api.md#conventions).
	messageBytesMax = 1 << 20
	// batchRecordsMax is the server's cap on one batch produce
	// (docs/api.md#batch-produce).
	batchRecordsMax = 1000
)

// pubOptions are the flags of narad pub.
type pubOptions struct {
	key       string
	partition int // -1: let the server choose
	file      string
	count     int
	rate      float64 // messages per second; 0: unthrottled
	batch     int     // records per request; ≤ 1: single produce
}

func newPubCommand(a *app) *cobra.Command {
	var options pubOptions
	cmd := &cobra.Command{
		Use:   "pub <topic> [message]",
		Short: "Produce a message (from the argument, a file or stdin)",
		Long: `Produce a message. The body comes from the argument, from -f FILE, or from
stdin (when neither is given, or the argument or FILE is "-"). With --count N
the same body is sent N times, at --rate messages per second if given; with
--batch N they travel N records per request as an NDJSON batch.

A file or stdin is sent byte for byte, as one message: "echo hello" sends
"hello" and a newline, "printf %s hello" sends "hello" alone.`,
		Example: `  narad pub orders '{"id": 1}'
  narad pub orders -k customer-7 "hello"
  echo hello | narad pub orders
  narad pub orders -f payload.bin --partition 2
  narad pub orders hello --count 1000 --rate 200 --batch 50`,
		Args: usageArgs(cobra.RangeArgs(1, 2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := options.check(args); err != nil {
				return err
			}
			body, err := a.messageBody(args, options.file)
			if err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			return a.publish(cmd.Context(), broker, args[0], body, options)
		},
	}
	flags := cmd.Flags()
	flags.StringVarP(&options.key, "key", "k", "", "record key (hashed to pick the partition)")
	flags.IntVar(&options.partition, "partition", -1, "pin the partition (-1: the server chooses)")
	flags.StringVarP(&options.file, "file", "f", "", `read the body from FILE ("-" for stdin)`)
	flags.IntVar(&options.count, "count", 1, "send the message this many times")
	flags.Float64Var(&options.rate, "rate", 0, "messages per second (0: as fast as possible)")
	flags.IntVar(&options.batch, "batch", 1, "records per request; > 1 sends NDJSON batches (at most 1000)")
	return cmd
}

func (o pubOptions) check(args []string) error {
	switch {
	case len(args) == 2 && o.file != "":
		return usagef("give the message as an argument or with --file, not both")
	case o.count < 1:
		return usagef("--count must be at least 1")
	case o.rate < 0 || math.IsNaN(o.rate) || math.IsInf(o.rate, 0):
		return usagef("--rate must be a finite number, not negative")
	case o.rate > 0 && o.rate < rateMin:
		return usagef("--rate must be 0 (as fast as possible) or at least %g message a second (one a day), got %g", rateMin, o.rate)
	case o.batch < 0 || o.batch > batchRecordsMax:
		return usagef("--batch must be in 0..%d", batchRecordsMax)
	case o.partition < -1:
		return usagef("--partition must be -1 (none) or a partition index")
	}
	return nil
}

// messageBody reads the body from the argument, the file or stdin.
func (a *app) messageBody(args []string, file string) ([]byte, error) {
	var body []byte
	var err error
	switch {
	case len(args) == 2 && args[1] != "-":
		body = []byte(args[1])
	case file != "" && file != "-":
		body, err = readMessageFile(file)
	default:
		body, err = readBounded(a.stdin, messageBytesMax)
	}
	if err != nil {
		return nil, err
	}
	if len(body) == 0 {
		return nil, usagef("the message is empty")
	}
	if len(body) > messageBytesMax {
		return nil, fmt.Errorf("the message is larger than the server's limit of %d bytes", messageBytesMax)
	}
	return body, nil
}

// readMessageFile reads --file; a file that cannot be opened is a usage
// error (exit 2), as a --schema or --payload one is.
func readMessageFile(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, usagef("--file: %v", err)
	}
	defer file.Close()
	return readBounded(file, messageBytesMax)
}

// readBounded reads at most limitBytes+1 bytes, so a caller can tell that
// the input was too large.
func readBounded(reader io.Reader, limitBytes int64) ([]byte, error) {
	return io.ReadAll(io.LimitReader(reader, limitBytes+1))
}

func (o pubOptions) produceOptions() client.ProduceOptions {
	produce := client.ProduceOptions{Key: o.key}
	if o.partition >= 0 {
		produce.Partition = client.Ptr(o.partition)
	}
	return produce
}

// publish sends the body once (printing where it landed) or many times
// (printing the throughput).
func (a *app) publish(ctx context.Context, broker *client.Client, topic string, body []byte, options pubOptions) error {
	if options.count == 1 && options.batch <= 1 {
		placement, err := broker.Produce(ctx, topic, body, options.produceOptions())
		if err != nil {
			return err
		}
		a.printAccepted(len(body), placement)
		return nil
	}
	start := time.Now()
	sent, err := a.publishMany(ctx, broker, topic, body, options, start)
	elapsed := time.Since(start)
	fmt.Fprintf(a.stderr, "accepted %d messages in %s (%s msg/s)\n", sent, elapsed.Round(time.Millisecond),
		formatRate(sent, elapsed))
	return err
}

func (a *app) printAccepted(size int, placement client.Placement) {
	if placement.Partition < 0 {
		fmt.Fprintf(a.stderr, "accepted (%d bytes)\n", size)
		return
	}
	fmt.Fprintf(a.stderr, "accepted (%d bytes) → p%d @%d\n", size, placement.Partition, placement.Offset)
}

// publishMany sends count copies, paced at rate, in requests of batch
// records; it returns how many were accepted.
func (a *app) publishMany(ctx context.Context, broker *client.Client, topic string, body []byte,
	options pubOptions, start time.Time) (int, error) {
	perRequest := max(options.batch, 1)
	var accepted atomic.Int64
	progress := a.startProgress("pub", options.count, func() int { return int(accepted.Load()) })
	defer progress.Stop()
	sent := 0
	for sent < options.count {
		if err := paceUntil(ctx, start, sent, options.rate); err != nil {
			return sent, err
		}
		size := min(perRequest, options.count-sent)
		if err := sendRecords(ctx, broker, topic, body, size, options); err != nil {
			return sent, err
		}
		sent += size
		accepted.Store(int64(sent))
	}
	return sent, nil
}

func sendRecords(ctx context.Context, broker *client.Client, topic string, body []byte, size int, options pubOptions) error {
	if options.batch <= 1 {
		_, err := broker.Produce(ctx, topic, body, options.produceOptions())
		return err
	}
	records := make([]client.BatchRecord, size)
	for i := range records {
		records[i] = client.NewBatchRecord(body, options.produceOptions())
	}
	_, err := broker.ProduceBatch(ctx, topic, records)
	return err
}

// rateMin is the slowest --rate: one message a day. Slower ones would
// overflow the pacing's time.Duration and send everything at once.
const rateMin = 1.0 / 86_400

// paceUntil waits until message number sent is due at rate messages per
// second counted from start; rate 0 never waits.
func paceUntil(ctx context.Context, start time.Time, sent int, rate float64) error {
	if rate <= 0 {
		return ctx.Err()
	}
	due := start.Add(time.Duration(float64(sent) / rate * float64(time.Second)))
	return proc.SleepContext(ctx, time.Until(due))
}

// formatRate renders count per elapsed second with no decimals.
func formatRate(count int, elapsed time.Duration) string {
	if elapsed <= 0 {
		return "0"
	}
	return fmt.Sprintf("%.0f", float64(count)/elapsed.Seconds())
}
