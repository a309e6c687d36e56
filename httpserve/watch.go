package httpserve

import (
	"context"
	"errors"
	"sync/atomic"
	"time"
)

// WatchClose asks the connection serving ctx's request to cancel ctx as
// soon as the client closes its end, until the handler returns. A handler
// calls it, from its own goroutine, just before it waits for something
// that may take long (a parked long poll), once it read what it wants of
// the request's body: what it left unread is discarded first (at most
// unreadBodyDrainMax, as after a handler; a long poll sent with a body
// has no use for it), unless the client waits for 100 Continue before
// sending it, or the body is too long to drain: the request is then not
// watched. For a context of another server it does nothing. Watching
// costs a goroutine and a read, so a request that will not wait should
// not ask.
func WatchClose(ctx context.Context) {
	c, ok := ctx.Value(connKey{}).(*conn)
	if !ok || c.watcher.active || c.server.closing.Load() {
		return
	}
	if c.body.mode != bodyDone && (c.body.expectContinue && !c.body.continueSent || !c.body.drain()) {
		return
	}
	c.watcher.start(c)
}

// watcher reads the connection while a handler waits, so that a client
// that leaves is noticed: bytes it reads (a pipelined next request) are
// kept in the input buffer. While it runs, only it touches the input
// buffer; stop joins it.
type watcher struct {
	// active: a watcher goroutine runs for the current request.
	active bool
	// stopping is set by stop before it wakes the goroutine, so that the
	// goroutine tells that wake from a client gone.
	stopping atomic.Bool
	// done is closed when the goroutine ends.
	done chan struct{}
	// peerGone: the goroutine saw the client close (or the connection
	// fail); written before done closes, read after.
	peerGone bool
}

func (w *watcher) start(c *conn) {
	w.active, w.peerGone = true, false
	w.stopping.Store(false)
	w.done = make(chan struct{})
	_ = c.netConn.SetReadDeadline(time.Time{}) // the wait is bounded by the handler, not the read timeout
	c.readDeadlineStale = true
	go w.run(c)
}

func (w *watcher) run(c *conn) {
	defer close(w.done)
	for {
		err := c.in.fill(c.netConn)
		switch {
		case err == nil:
			continue // a pipelined request: keep it and go on watching
		case errors.Is(err, errInputFull), w.stopping.Load():
			return
		}
		w.peerGone = true
		c.cancel()
		return
	}
}

// stop wakes and joins the goroutine, if one runs.
func (w *watcher) stop(c *conn) {
	if !w.active {
		return
	}
	w.active = false
	w.stopping.Store(true)
	_ = c.netConn.SetReadDeadline(aLongTimeAgo)
	<-w.done
	c.readDeadlineSet, c.readDeadlineStale = false, true
}
