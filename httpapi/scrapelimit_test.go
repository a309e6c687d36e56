package httpapi

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// At most scrapesMax scrapes are served at once; one more gets 503 with
// Retry-After, counted, and a slot frees when a scrape ends.
func TestScrapesAreBounded(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	registry := prometheus.NewRegistry()
	limit := newScrapeLimit(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		entered <- struct{}{}
		<-release
	}), registry)
	done := make(chan struct{})
	for range scrapesMax {
		go func() {
			limit.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
			done <- struct{}{}
		}()
		<-entered
	}
	refused := httptest.NewRecorder()
	limit.ServeHTTP(refused, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusServiceUnavailable, refused.Code)
	require.NotEmpty(t, refused.Header().Get("Retry-After"))
	require.Equal(t, 1.0, collectorValue(limit.refused))
	release <- struct{}{}
	<-done
	go func() {
		limit.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/metrics", nil))
		done <- struct{}{}
	}()
	<-entered // a freed slot serves the next scrape
	close(release)
	for range scrapesMax {
		<-done
	}
}
