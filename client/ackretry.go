package client

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// AckRetry is how AckRetrying retries an ack. The zero value is not valid;
// start from DefaultAckRetry.
type AckRetry struct {
	// Attempts bounds the requests sent, the first included. >= 1.
	Attempts int
	// FirstBackoff is the pause before the first retry; each later pause
	// doubles, up to MaxBackoff. > 0.
	FirstBackoff time.Duration
	// MaxBackoff caps a pause. >= FirstBackoff.
	MaxBackoff time.Duration
	// AttemptTimeout bounds one attempt below the client's timeout; 0
	// leaves the client's timeout alone. >= 0.
	AttemptTimeout time.Duration
}

// Default ack retry bounds: six attempts spaced 0.2, 0.4, 0.8, 1.6 and
// 2 s, about five seconds in all, enough to ride out a node restart or a
// partition handed over, short enough that a stuck consumer notices.
const (
	ackRetryAttemptsDefault     = 6
	ackRetryFirstBackoffDefault = 200 * time.Millisecond
	ackRetryMaxBackoffDefault   = 2 * time.Second
)

// DefaultAckRetry is the retry policy narad sub uses.
func DefaultAckRetry() AckRetry {
	return AckRetry{Attempts: ackRetryAttemptsDefault, FirstBackoff: ackRetryFirstBackoffDefault, MaxBackoff: ackRetryMaxBackoffDefault}
}

// errAckRetryInvalid reports an AckRetry outside its bounds.
var errAckRetryInvalid = errors.New("client: ack retry needs Attempts >= 1, 0 < FirstBackoff <= MaxBackoff and AttemptTimeout >= 0")

// AckRetrying acks a message like Ack, and retries with the same receipt
// handle while the answer is lost or retryable: a transport failure (a
// broken connection, a timed-out attempt), 5xx (a 503 when the owner is
// down, slow to answer or handing the partition over), 429 or 421. It
// is safe because an ack is idempotent: a retry of an ack that landed
// answers 204. It returns how many retries it made and the last error:
// nil (acked), an *Error with status 410 (the lease lapsed and the record
// will be delivered again), another *Error, the last retryable failure
// once policy.Attempts are spent, or ctx's error. Between attempts it
// waits its backoff, or the reply's Retry-After when that is longer, at
// most policy.MaxBackoff. It sends at most
// policy.Attempts requests, each bounded by the client's timeout and
// policy.AttemptTimeout.
func (c *Client) AckRetrying(ctx context.Context, topic, receiptHandle string, policy AckRetry) (retries int, err error) {
	if policy.Attempts < 1 || policy.FirstBackoff <= 0 || policy.MaxBackoff < policy.FirstBackoff || policy.AttemptTimeout < 0 {
		return 0, errAckRetryInvalid
	}
	backoff := policy.FirstBackoff
	for attempt := 1; ; attempt++ {
		err = c.ackAttempt(ctx, topic, receiptHandle, policy.AttemptTimeout)
		if err == nil || !ackRetryable(err) || attempt == policy.Attempts || ctx.Err() != nil {
			return attempt - 1, err
		}
		if waitErr := pause(ctx, min(max(backoff, RetryAfterOf(err)), policy.MaxBackoff)); waitErr != nil {
			return attempt - 1, err
		}
		backoff = min(2*backoff, policy.MaxBackoff)
	}
}

// ackAttempt sends one ack, bounded by timeout when it is > 0.
func (c *Client) ackAttempt(ctx context.Context, topic, receiptHandle string, timeout time.Duration) error {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return c.Ack(ctx, topic, receiptHandle)
}

// ackRetryable reports whether an ack that failed with err may have been
// lost or refused for a while, so the same handle should be sent again.
func ackRetryable(err error) bool {
	var replyError *Error
	if !errors.As(err, &replyError) {
		return true // a transport failure: the answer, maybe the ack, was lost
	}
	status := replyError.Status
	return status >= 500 || status == http.StatusTooManyRequests || status == http.StatusMisdirectedRequest
}

// pause waits for delay or until ctx is done.
func pause(ctx context.Context, delay time.Duration) error {
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}
