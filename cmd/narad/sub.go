package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
	"narad/proc"
)

const (
	// waitDefault is the long-poll wait of a queue consume.
	waitDefault = 10 * time.Second
	// consumeRetryDelay spaces retries of a failed consume.
	consumeRetryDelay = time.Second
	// emptyPause is the pause after an empty answer to a consume that
	// waited less than emptyPauseBelowWait (--wait 0, say), which would
	// otherwise ask again at once, thousands of times a second.
	emptyPause          = 200 * time.Millisecond
	emptyPauseBelowWait = emptyPause
	// ackAttemptTimeout bounds one ack attempt; acks run even after Ctrl-C
	// so a printed message is not redelivered needlessly.
	ackAttemptTimeout = 5 * time.Second
	// peekReadsPerSweepMax bounds the replay reads of one partition per
	// sweep, so one busy partition does not starve the others.
	peekReadsPerSweepMax = 100
	// peekIdleDelay is the pause after a sweep that read nothing; the
	// topic's stats are read after each, which say where records arrived
	// (and find partitions added while a peek runs).
	peekIdleDelay = 400 * time.Millisecond
)

// subOptions are the flags of narad sub.
type subOptions struct {
	partition int // -1: any partition
	raw       bool
	noAck     bool
	peek      bool
	from      int64
	fromGiven bool
	max       int // 0: no limit
	wait      time.Duration
}

func newSubCommand(a *app) *cobra.Command {
	var options subOptions
	cmd := &cobra.Command{
		Use:   "sub <topic>",
		Short: "Consume messages: a queue consumer, or a read-only tail with --peek",
		Long: `Consume messages and print them as
  [p<partition> @<offset>] key=<key> HH:MM:SS.mmm <payload>
(key= only when the message has one). A dead letter also shows its origin
after the key, as from=<topic>/p<partition>@<offset>x<deliveries>.

By default sub is a queue consumer: each message is leased, printed and then
acknowledged. An ack that fails with a 5xx or a broken connection is sent
again with the same receipt handle, up to 6 attempts over about 5 seconds;
that is safe because the broker answers 204 to an ack of a message already
acknowledged. A 410 means the lease lapsed: the message will be delivered
again. With --no-ack the lease lapses and the message is delivered again
later. With --peek sub reads every partition from
its tail (or from --from, which needs --partition) without taking leases, so
other consumers are not affected; offsets that aged out of retention or are
unreadable (410) are skipped, with one line on stderr per run of them,
  p<partition>: skipped <n> offset(s) [<first>, <end>): <why>
A consume that fails with a 5xx, a 429 or a
broken connection is retried every second; interrupted while they fail,
sub exits non-zero.`,
		Example: `  narad sub orders
  narad sub orders --max 10 --raw > ten.txt
  narad sub orders --peek
  narad sub orders --peek --partition 2 --from 0`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			options.fromGiven = cmd.Flags().Changed("from")
			if err := options.check(); err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			if options.peek {
				return a.peek(cmd.Context(), broker, args[0], options)
			}
			return a.consumeQueue(cmd.Context(), broker, args[0], options)
		},
	}
	flags := cmd.Flags()
	flags.IntVar(&options.partition, "partition", -1, "read only this partition (-1: all)")
	flags.BoolVar(&options.raw, "raw", false, "print only the payload bytes")
	flags.BoolVar(&options.noAck, "no-ack", false, "do not acknowledge (messages are redelivered)")
	flags.BoolVar(&options.peek, "peek", false, "read-only tail with replay reads; takes no leases")
	flags.Int64Var(&options.from, "from", 0, "with --peek and --partition: start at this offset")
	flags.IntVar(&options.max, "max", 0, "stop after this many messages (0: run until interrupted)")
	flags.DurationVar(&options.wait, "wait", waitDefault, "long-poll wait of each consume request (under 200ms, sub pauses 200ms after an empty answer)")
	return cmd
}

func (o subOptions) check() error {
	switch {
	case o.fromGiven && !o.peek:
		return usagef("--from needs --peek (a queue consumer cannot choose offsets)")
	case o.fromGiven && o.partition < 0:
		return usagef("--from needs --partition")
	case o.fromGiven && o.from < 0:
		return usagef("--from must not be negative")
	case o.max < 0:
		return usagef("--max must not be negative")
	case o.wait < 0:
		return usagef("--wait must not be negative")
	case o.partition < -1:
		return usagef("--partition must be -1 (all) or a partition index")
	}
	return nil
}

func (o subOptions) consumeOptions() client.ConsumeOptions {
	options := client.ConsumeOptions{Wait: o.wait}
	if o.partition >= 0 {
		options.Partition = client.Ptr(o.partition)
	}
	return options
}

// limitReached reports whether --max messages were received.
func (o subOptions) limitReached(received int) bool {
	return o.max > 0 && received >= o.max
}

// retryable reports whether a failed request may succeed if repeated:
// 421, 429 and 5xx answers, and transport failures except those that
// fail the same way every time (permanent).
func retryable(err error) bool {
	var replyError *client.Error
	if !errors.As(err, &replyError) {
		return !permanent(err)
	}
	status := replyError.Status
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusMisdirectedRequest
}

// permanent reports a failure that no retry can mend: a certificate the
// client does not trust or that names another host, a server that does
// not speak TLS, a URL scheme the client cannot use, a reply that is not
// the API's JSON (a proxy's page, say). Retried, `narad sub` waited
// forever on them, and exited 0 when interrupted.
func permanent(err error) bool {
	var verification *tls.CertificateVerificationError
	var unknownAuthority x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	var notTLS tls.RecordHeaderError
	var syntax *json.SyntaxError
	var wrongType *json.UnmarshalTypeError
	var urlError *url.Error
	switch {
	case errors.As(err, &verification), errors.As(err, &unknownAuthority), errors.As(err, &hostname),
		errors.As(err, &invalid), errors.As(err, &notTLS):
		return true
	case errors.As(err, &syntax), errors.As(err, &wrongType):
		return true
	case errors.As(err, &urlError):
		return strings.HasPrefix(urlError.Err.Error(), "unsupported protocol scheme")
	}
	return false
}

// consumeQueue leases, prints and acks messages until --max or Ctrl-C.
// A message it could not print (its output closed: `narad sub | head`)
// is released for redelivery at once rather than left leased for the
// visibility timeout; a closed output ends the command like Ctrl-C.
func (a *app) consumeQueue(ctx context.Context, broker *client.Client, topic string, options subOptions) error {
	defer writeErrorsOnBrokenPipe()()
	fmt.Fprintf(a.stderr, "consuming %s (Ctrl-C to stop)\n", topic)
	printer := a.newMessagePrinter(options.raw)
	received, ackFailures := 0, 0
	// failing is the last consume failure not followed by an answer: an
	// interrupt while the broker cannot be reached is not a clean end.
	var failure, failing error
	for !options.limitReached(received) && ctx.Err() == nil {
		message, err := broker.Consume(ctx, topic, options.consumeOptions())
		if err != nil {
			if ctx.Err() == nil {
				failing = err
			}
			if failure = a.consumeFailed(ctx, err); failure != nil {
				break
			}
			continue
		}
		failing = nil
		if message == nil {
			if options.wait < emptyPauseBelowWait && proc.SleepContext(ctx, emptyPause) != nil {
				break // a poll that waits little would ask again at once, thousands of times a second
			}
			continue
		}
		if failure = printer.print(*message); failure != nil {
			failure = a.notPrinted(ctx, broker, topic, *message, failure, options.noAck)
			break
		}
		received++
		if !options.noAck && !a.ackWithRetry(ctx, broker, topic, message.ReceiptHandle) {
			ackFailures++
		}
	}
	if failure == nil || received > 0 {
		fmt.Fprintf(a.stderr, "%d message(s)\n", received) // a refused first consume (404, 403) prints its error alone
	}
	switch {
	case failure == nil && ackFailures > 0:
		failure = fmt.Errorf("%d ack(s) failed; those messages will be delivered again", ackFailures)
	case failure == nil && failing != nil:
		failure = fmt.Errorf("stopped while consumes were failing: %w", failing)
	}
	return failure
}

// notPrinted releases a leased message the consumer could not print (unless
// --no-ack: nothing is acknowledged then) and returns what ends the
// command: nil when the output was closed, the print error otherwise.
func (a *app) notPrinted(ctx context.Context, broker *client.Client, topic string, message client.Message, printErr error, noAck bool) error {
	if !noAck {
		released, cancel := context.WithTimeout(context.WithoutCancel(ctx), ackAttemptTimeout)
		defer cancel()
		if err := broker.Nack(released, topic, message.ReceiptHandle); err != nil && !client.IsStatus(err, http.StatusGone) {
			fmt.Fprintf(a.stderr, "releasing p%d @%d failed: %v — it is delivered again once its lease lapses\n", message.Partition, message.Offset, err)
		}
	}
	if errors.Is(printErr, syscall.EPIPE) {
		fmt.Fprintf(a.stderr, "output closed; p%d @%d was not printed and is delivered again\n", message.Partition, message.Offset)
		return nil
	}
	return printErr
}

// writeErrorsOnBrokenPipe makes a write to a closed pipe on stdout fail
// with EPIPE instead of ending the process (Go's default for standard
// output), so that a consumer can release the message it could not
// print; the function it returns restores the default.
func writeErrorsOnBrokenPipe() (restore func()) {
	pipes := make(chan os.Signal, 1)
	signal.Notify(pipes, syscall.SIGPIPE)
	return func() { signal.Stop(pipes) }
}

// consumeFailed decides what a failed consume means: nil to go on (after a
// pause), or the error that ends the consumer.
func (a *app) consumeFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil // interrupted: the loop ends
	}
	if !retryable(err) {
		return err
	}
	delay := max(consumeRetryDelay, client.RetryAfterOf(err))
	fmt.Fprintf(a.stderr, "consume failed: %v (retrying in %s)\n", err, delay)
	_ = proc.SleepContext(ctx, delay)
	return nil
}

// ackWithRetry acks, retrying with the same handle after a 503 or a lost
// answer (client.AckRetrying), and reports whether the ack landed. A
// failure is printed and the consumer goes on (the message will be
// delivered again); the command then ends with a non-zero exit. A lease
// that lapsed (410) counts as landed: the documented outcome of a slow
// consumer, not a failure of the command.
func (a *app) ackWithRetry(ctx context.Context, broker *client.Client, topic, receiptHandle string) bool {
	policy := client.DefaultAckRetry()
	policy.AttemptTimeout = ackAttemptTimeout
	retries, err := broker.AckRetrying(context.WithoutCancel(ctx), topic, receiptHandle, policy)
	switch {
	case err == nil:
	case client.IsStatus(err, http.StatusGone):
		fmt.Fprintln(a.stderr, "lease lapsed before ack (410) — message may redeliver")
	case retries == policy.Attempts-1 && retryable(err):
		fmt.Fprintf(a.stderr, "ack failed after %d attempts: %v — message may redeliver\n", policy.Attempts, err)
		return false
	default:
		fmt.Fprintf(a.stderr, "ack failed: %v — message may redeliver\n", err)
		return false
	}
	return true
}
