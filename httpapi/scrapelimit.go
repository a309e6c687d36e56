package httpapi

import (
	"net/http"
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"narad/auth"
	"narad/msg"
)

// The bounds of /metrics, which needs no credentials.
const (
	// scrapesMax bounds the scrapes rendered at once: each gathers every
	// series of the registry (per topic and partition) into memory and
	// renders it whole. A slot is held while rendering only, never while
	// the answer is written, so that clients that do not read cannot hold
	// the slots (four of them made every other scrape 503 until the write
	// timeout closed them).
	scrapesMax = 4
	// scrapesPerClientMax bounds the scrapes one client address has under
	// way at once, rendering or being written: a client that does not read
	// holds its rendered scrape until the write timeout, and without this
	// one address could hold the share of the reply budget scrapes may
	// take (scrapeShareDivisor) and so refuse every other scrape.
	// Prometheus scrapes a target once per interval; two leave room for
	// a scrape that overlaps the previous one, or for a person's curl.
	scrapesPerClientMax = 2
	// scrapeShareDivisor: the rendered scrapes being written hold at most
	// this fraction of the reply budget together (one is admitted alone
	// whatever its size, as the reply budget admits it), so that clients
	// without credentials cannot take the budget the consumes need.
	scrapeShareDivisor = 2
)

// scrapeLimit serves /metrics: it renders a scrape whole into a buffer
// under one of scrapesMax slots, gives the slot back, then writes the
// buffer with a Content-Length while it holds its bytes in the reply
// budget (within the scrapes' share of it), and gives them back once
// written. A scrape past scrapesMax rendering, past scrapesPerClientMax of
// its client, or refused by the budget is answered 503 with Retry-After
// and counted. Safe for concurrent use.
type scrapeLimit struct {
	next    http.Handler
	slots   chan struct{}
	replies *byteBudget
	refused prometheus.Counter
	// mu guards held and clients. held is the bytes of the rendered
	// scrapes being written, taken from replies; clients counts each
	// client address's scrapes under way (an entry per address with at
	// least one; at most one per connection).
	mu      sync.Mutex
	held    int64
	clients map[string]int
}

func newScrapeLimit(next http.Handler, replies *byteBudget, reg prometheus.Registerer) *scrapeLimit {
	limit := &scrapeLimit{next: next, slots: make(chan struct{}, scrapesMax), replies: replies, clients: map[string]int{},
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http", Name: "scrapes_refused_total",
			Help: "Scrapes of /metrics refused (503): " + strconv.Itoa(scrapesMax) + " being rendered, " + strconv.Itoa(scrapesPerClientMax) +
				" of the client's under way, or the reply budget (or the scrapes' share of it) full."})}
	reg.MustRegister(limit.refused)
	return limit
}

func (l *scrapeLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	client := auth.SourceOf(r.RemoteAddr).String() // an IPv6 client counts by its /64, as failed sign-ins do
	if !l.enter(client) {
		l.refuse(w, msg.Unavailable("this client has %d scrapes of /metrics under way; retry", scrapesPerClientMax))
		return
	}
	defer l.leave(client)
	rendered, ok := l.renderInSlot(r)
	if !ok {
		l.refuse(w, msg.Unavailable("%d scrapes of /metrics are being rendered; retry", scrapesMax))
		return
	}
	body := fitted(rendered.Body()) // as a held reply's: its capacity is what is charged while it is written
	held := int64(cap(body))
	if !l.take(held) {
		l.replies.refused.Inc()
		l.refuse(w, errReplyBudget)
		return
	}
	defer l.give(held)
	for name, values := range rendered.Header() {
		w.Header()[name] = values
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(rendered.Status())
	_, _ = w.Write(body) // a failed write means the client went away
}

// renderInSlot renders a scrape (the Prometheus handler's exposition
// whole, with its status and its header: Content-Type, Content-Encoding,
// Vary) under one of the slots, released however the rendering ends (a
// panic, which the recovery above answers, kept it for good); ok is false
// when every slot is taken.
func (l *scrapeLimit) renderInSlot(r *http.Request) (rendered *Recorder, ok bool) {
	select {
	case l.slots <- struct{}{}:
	default:
		return nil, false
	}
	defer func() { <-l.slots }()
	rendered = NewRecorder()
	l.next.ServeHTTP(rendered, r)
	return rendered, true
}

func (l *scrapeLimit) refuse(w http.ResponseWriter, err error) {
	l.refused.Inc()
	errorResponse(err).Write(w)
}

// enter counts a scrape of client under way, or reports false when it
// has scrapesPerClientMax already.
func (l *scrapeLimit) enter(client string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[client] >= scrapesPerClientMax {
		return false
	}
	l.clients[client]++
	return true
}

func (l *scrapeLimit) leave(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.clients[client]--; l.clients[client] == 0 {
		delete(l.clients, client)
	}
}

// take holds bytes of a rendered scrape in the reply budget, within the
// scrapes' share of it (one scrape alone whatever its size, if the
// budget takes it).
func (l *scrapeLimit) take(bytes int64) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held > 0 && l.held+bytes > l.replies.bytesMax/scrapeShareDivisor || !l.replies.take(bytes) {
		return false
	}
	l.held += bytes
	return true
}

func (l *scrapeLimit) give(bytes int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held -= bytes
	l.replies.give(bytes)
}
