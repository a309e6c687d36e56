package host

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"narad/httpserve"
	"narad/msg"
	"narad/node"
)

// backend is what httpapi calls: it passes requests to the loop and waits
// for their replies. Safe for concurrent use.
type backend struct {
	loop *loop
	// shuttingDown is set once graceful shutdown starts.
	shuttingDown atomic.Bool
}

var errLoopStopped = errors.New("node loop stopped")

// replyChannels holds empty reply channels (buffered, capacity 1) for
// reuse. A channel goes back only once its one reply was received, or
// when the loop never got it: a cancelled request's channel may still
// receive a late reply, and is left to the garbage collector.
var replyChannels = sync.Pool{New: func() any { return make(chan msg.Reply, 1) }}

// watchCloseAfter is how long a consume that may park waits for its
// reply before its connection is watched for a client that leaves
// (httpserve.WatchClose). Most long polls are answered at once, from
// records at hand, and watching costs each a goroutine, a read and a
// wake-up to stop it; a client that leaves within this time is noticed
// this much later.
const watchCloseAfter = 2 * time.Millisecond

// Do implements httpapi.Backend.
func (b *backend) Do(ctx context.Context, req msg.Request) msg.Reply {
	id := b.loop.newRequestID()
	replyCh := replyChannels.Get().(chan msg.Reply)
	if err := b.send(ctx, input{id: id, request: req, reply: replyCh}); err != nil {
		replyChannels.Put(replyCh) // the loop never saw it
		return msg.Reply{ID: id, Err: msg.Unavailable("%v", err)}
	}
	if consume, ok := req.(msg.Consume); ok && consume.WaitMs > 0 {
		// It may park: a client that leaves must cancel ctx, which the
		// connection server notices only when asked (docs/operations.md#http-connections).
		timer := time.NewTimer(watchCloseAfter)
		reply, finished := b.await(ctx, id, replyCh, timer.C)
		timer.Stop()
		if finished {
			return reply
		}
		httpserve.WatchClose(ctx)
	}
	reply, _ := b.await(ctx, id, replyCh, nil)
	return reply
}

// await waits for the reply to request id, and returns it, or the
// answer for a client that left (ctx) or a loop that stopped, with
// finished true; when stop fires first (a nil stop never fires), it
// returns finished false, and the request is still the loop's.
func (b *backend) await(ctx context.Context, id msg.RequestID, replyCh chan msg.Reply, stop <-chan time.Time) (reply msg.Reply, finished bool) {
	select {
	case reply := <-replyCh:
		replyChannels.Put(replyCh) // the loop sends one reply per request, and forgets the channel before it sends
		return reply, true
	case <-ctx.Done():
		// The loop may still answer; the buffered channel absorbs it, and
		// the loop, given the channel with the cancel, hands back the
		// records of a consume answered that nobody will read.
		_ = b.send(context.Background(), input{id: id, cancel: true, reply: replyCh})
		return msg.Reply{ID: id, Err: cancelled(ctx)}, true
	case <-b.loop.done:
		return b.replyAfterStop(id, replyCh), true
	case <-stop:
		return msg.Reply{}, false
	}
}

// replyAfterStop returns the reply the loop gave before it stopped, if
// any, else a retryable error.
func (b *backend) replyAfterStop(id msg.RequestID, replyCh chan msg.Reply) msg.Reply {
	select {
	case reply := <-replyCh:
		return reply
	default:
		return msg.Reply{ID: id, Err: msg.Unavailable("node is shutting down")}
	}
}

func (b *backend) send(ctx context.Context, in input) error {
	select {
	case b.loop.inbox <- in:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-b.loop.done:
		return b.stoppedError()
	}
}

// storageFailure is what clients are told of a storage failure that
// stops the node: its kind, never the files it names, which the log gives
// and an answer never does (docs/api.md#conventions). A full disk is said
// as such, since freeing space is what brings the node back (disk-full
// audit: a topic created on a full disk answered only "node storage
// failed; retry").
func storageFailure(err error) string {
	if diskFull(err) {
		return "node storage failed: no space left on the node's disk"
	}
	return "node storage failed"
}

// stoppedError says why the loop is no longer serving.
func (b *backend) stoppedError() error {
	if err := b.loop.failure(); err != nil {
		return fmt.Errorf("%s; the node stopped and must restart", storageFailure(err))
	}
	return errLoopStopped
}

// Ready implements httpapi.Backend.
func (b *backend) Ready() error {
	if b.shuttingDown.Load() {
		return errors.New("shutting down")
	}
	select {
	case <-b.loop.done:
		return b.stoppedError()
	default:
		return b.loop.servingError()
	}
}

// TopicSchemas implements httpapi.Backend.
func (b *backend) TopicSchemas(topic string) []msg.SchemaVersion { return b.loop.topicSchemas(topic) }

// HandBack implements httpapi.Backend: the loop hands the reply's
// records back as it does those of a consume whose client left. It waits
// only for the loop to take the input; a loop that has stopped has
// nothing left to hand them to.
func (b *backend) HandBack(reply msg.Reply) {
	_ = b.send(context.Background(), input{control: func(*node.Node) {
		b.loop.unclaimed = append(b.loop.unclaimed, reply)
		b.loop.handBack()
	}})
}

// ShuttingDown implements httpapi.Backend.
func (b *backend) ShuttingDown() bool { return b.shuttingDown.Load() }

// cancelled is the answer to a request whose context ended before the
// loop answered it, in the client's terms rather than Go's ("context
// canceled"): the client closed its side of the connection (a half-close
// still reads the answer), or the request's time ran out.
func cancelled(ctx context.Context) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return msg.Unavailable("request cancelled: its time ran out before the node answered; retry")
	}
	return msg.Unavailable("request cancelled: the client closed its side of the connection before the node answered")
}
