package httpapi

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"narad/msg"
)

// scrapesMax bounds the /metrics scrapes served at once: each gathers
// every series of the registry (per topic and partition) into memory
// before writing it, and the route needs no credentials.
const scrapesMax = 4

// scrapeLimit serves /metrics with at most scrapesMax scrapes at once;
// one more is answered 503 with Retry-After and counted.
type scrapeLimit struct {
	next    http.Handler
	slots   chan struct{}
	refused prometheus.Counter
}

func newScrapeLimit(next http.Handler, reg prometheus.Registerer) *scrapeLimit {
	limit := &scrapeLimit{next: next, slots: make(chan struct{}, scrapesMax),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "narad", Subsystem: "http", Name: "scrapes_refused_total",
			Help: "Scrapes of /metrics refused (503) because " + strconv.Itoa(scrapesMax) + " were being served at once."})}
	reg.MustRegister(limit.refused)
	return limit
}

func (l *scrapeLimit) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	select {
	case l.slots <- struct{}{}:
	default:
		l.refused.Inc()
		errorResponse(msg.Unavailable("%d scrapes of /metrics are being served; retry", scrapesMax)).Write(w)
		return
	}
	defer func() { <-l.slots }()
	l.next.ServeHTTP(w, r)
}
