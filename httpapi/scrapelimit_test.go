package httpapi

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// At most scrapesMax scrapes are rendered at once; one more gets 503 with
// Retry-After, counted, and a slot frees when a rendering ends.
func TestScrapesAreBounded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	registry := prometheus.NewRegistry()
	limit := newScrapeLimit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	}), newReplyBudget(1<<20, registry), registry)
	done := make(chan struct{})
	for i := range scrapesMax {
		go func() {
			scrapeFrom(limit, httptest.NewRecorder(), fmt.Sprintf("192.0.2.%d:4000", i+1))
			done <- struct{}{}
		}()
		<-entered
	}
	refused := httptest.NewRecorder()
	scrapeFrom(limit, refused, "198.51.100.1:4000")
	require.Equal(t, http.StatusServiceUnavailable, refused.Code)
	require.NotEmpty(t, refused.Header().Get("Retry-After"))
	require.Equal(t, 1.0, collectorValue(limit.refused))
	release <- struct{}{}
	<-done
	go func() {
		scrapeFrom(limit, httptest.NewRecorder(), "198.51.100.1:4000")
		done <- struct{}{}
	}()
	<-entered // a freed slot serves the next scrape
	close(release)
	for range scrapesMax {
		<-done
	}
}

// One client address has at most scrapesPerClientMax scrapes under way:
// one more from it is 503, one from another address is served.
func TestScrapesPerClientAreBounded(t *testing.T) {
	registry := prometheus.NewRegistry()
	limit := newScrapeLimit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("narad_x 1\n"))
	}), newReplyBudget(1<<20, registry), registry)
	release := make(chan struct{})
	var stalled sync.WaitGroup
	for range scrapesPerClientMax {
		w := newStalledWriter(release)
		stalled.Add(1)
		go func() {
			defer stalled.Done()
			scrapeFrom(limit, w, "192.0.2.1:4000")
		}()
		<-w.wrote
	}
	refused := httptest.NewRecorder()
	scrapeFrom(limit, refused, "192.0.2.1:4001")
	require.Equal(t, http.StatusServiceUnavailable, refused.Code, refused.Body.String())
	require.Equal(t, "1", refused.Header().Get("Retry-After"))
	served := httptest.NewRecorder()
	scrapeFrom(limit, served, "192.0.2.2:4000")
	require.Equal(t, http.StatusOK, served.Code)
	require.Equal(t, "narad_x 1\n", served.Body.String())
	close(release)
	stalled.Wait()
	require.Empty(t, limit.clients, "no entry kept for a client without a scrape")
}

// A rendered scrape is held in the reply budget while it is written, and
// the scrapes together within half of it (one alone whatever its size):
// past it a scrape is 503, counted as refused by the budget too, though
// the budget has room for the consumes; what a written scrape held is
// given back.
func TestRenderedScrapesAreChargedToTheReplyBudget(t *testing.T) {
	limitOf := func(lines int) (*scrapeLimit, string) {
		registry := prometheus.NewRegistry()
		body := strings.Repeat("narad_x 1\n", lines)
		return newScrapeLimit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4")
			_, _ = io.WriteString(w, body)
		}), newReplyBudget(1000, registry), registry), body
	}
	// stall starts a scrape whose client does not read; close release to end it.
	stall := func(limit *scrapeLimit, release chan struct{}) (*stalledWriter, chan struct{}) {
		w, done := newStalledWriter(release), make(chan struct{})
		go func() {
			defer close(done)
			scrapeFrom(limit, w, "192.0.2.1:4000")
		}()
		<-w.wrote
		return w, done
	}

	alone, _ := limitOf(60) // 600 bytes, over the scrapes' share of 500
	release := make(chan struct{})
	_, done := stall(alone, release)
	require.GreaterOrEqual(t, alone.replies.Held(), int64(600), "a scrape over the scrapes' share is admitted alone, charged its buffer")
	require.LessOrEqual(t, alone.replies.Held(), int64(600+fitSlackMax))
	close(release)
	<-done

	limit, body := limitOf(30) // 300 bytes
	release = make(chan struct{})
	w, done := stall(limit, release)
	require.GreaterOrEqual(t, limit.replies.Held(), int64(300))
	require.LessOrEqual(t, limit.replies.Held(), int64(300+fitSlackMax))
	require.Equal(t, "300", w.header.Get("Content-Length"))
	require.Equal(t, "text/plain; version=0.0.4", w.header.Get("Content-Type"))
	refused := httptest.NewRecorder()
	scrapeFrom(limit, refused, "192.0.2.2:4000")
	require.Equal(t, http.StatusServiceUnavailable, refused.Code, "600 bytes of scrapes pass half the budget")
	require.Equal(t, "1", refused.Header().Get("Retry-After"))
	require.Equal(t, 1.0, collectorValue(limit.refused))
	require.Equal(t, 1.0, collectorValue(limit.replies.refused))
	rest := 1000 - limit.replies.Held()
	require.Greater(t, rest, int64(500), "the scrapes held less than their half")
	require.True(t, limit.replies.take(rest), "the consumes keep the rest of the budget")
	limit.replies.give(rest)

	close(release)
	<-done
	require.Zero(t, limit.replies.Held(), "a written scrape gives its bytes back")
	served := httptest.NewRecorder()
	scrapeFrom(limit, served, "192.0.2.2:4000")
	require.Equal(t, http.StatusOK, served.Code)
	require.Equal(t, body, served.Body.String())
	require.Zero(t, limit.replies.Held())
}

// stalledWriter is the ResponseWriter of a client that never reads: a
// write blocks until release is closed. wrote is closed at the first.
type stalledWriter struct {
	header         http.Header
	status         int
	wrote, release chan struct{}
	once           sync.Once
}

func newStalledWriter(release chan struct{}) *stalledWriter {
	return &stalledWriter{header: http.Header{}, wrote: make(chan struct{}), release: release}
}

func (w *stalledWriter) Header() http.Header { return w.header }
func (w *stalledWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *stalledWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.once.Do(func() { close(w.wrote) })
	<-w.release
	return len(p), nil
}

// scrapeFrom asks handler for /metrics as a client at address.
func scrapeFrom(handler http.Handler, w http.ResponseWriter, address string) {
	request := httptest.NewRequest(http.MethodGet, "/metrics", nil)
	request.RemoteAddr = address
	handler.ServeHTTP(w, request)
}

// Clients that never read their scrape do not hold the scrape slots: a
// scrape is rendered whole under its slot and written after it, so that
// scrapesMax such clients no longer made every other scrape 503 until the
// write timeout closed them (an audit: 4 clients, every other scrape 503
// for 28 s, at 1,200 topics).
func TestScrapersThatNeverReadDoNotStopAScrape(t *testing.T) {
	registry := prometheus.NewRegistry()
	handler := NewHandler(&tableBackend{}, newTestCodec(), registry, slog.New(slog.DiscardHandler))
	release := make(chan struct{})
	var stalled sync.WaitGroup
	for i := range scrapesMax {
		w := newStalledWriter(release)
		stalled.Add(1)
		go func() {
			defer stalled.Done()
			scrapeFrom(handler, w, fmt.Sprintf("192.0.2.%d:4000", i+1))
		}()
		<-w.wrote
	}
	answer := httptest.NewRecorder()
	scrapeFrom(handler, answer, "198.51.100.1:4000")
	require.Equal(t, http.StatusOK, answer.Code, "a scrape beside %d clients that do not read: %s", scrapesMax, answer.Body.String())
	require.Contains(t, answer.Body.String(), "narad_http_requests_in_flight")
	close(release)
	stalled.Wait()
}

// A scrape whose rendering panics gives its slot back: the recovery above
// answers the panic and the server goes on, and each such scrape kept a
// slot for good, until every scrape was 503.
func TestAPanickingScrapeGivesItsSlotBack(t *testing.T) {
	panicking := true
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if panicking {
			panic("a collector failed")
		}
		_, _ = w.Write([]byte("ok"))
	})
	limit := newScrapeLimit(next, newReplyBudget(1<<20, prometheus.NewRegistry()), prometheus.NewRegistry())
	for range scrapesMax + 1 {
		func() {
			defer func() { _ = recover() }()
			limit.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
		}()
	}
	panicking = false
	recorder := httptest.NewRecorder()
	limit.ServeHTTP(recorder, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, recorder.Code, recorder.Body.String())
}
