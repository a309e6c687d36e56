package httpapi

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeUnmatched labels a request no route matched (404, 405).
const routeUnmatched = "unmatched"

// methodOther labels a request method outside knownMethods, so that
// clients cannot grow the label set without bound.
const methodOther = "OTHER"

var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// HTTPMetrics are the narad_http_* series of docs/operations.md#metrics. The
// collectors are registered once by NewHTTPMetrics and never replaced.
type HTTPMetrics struct {
	requests *prometheus.CounterVec   // route, method, status
	duration *prometheus.HistogramVec // route, method, status
	bytesIn  *prometheus.CounterVec   // route
	bytesOut *prometheus.CounterVec   // route
	inFlight prometheus.Gauge
	// abandoned counts, by route and method, the requests whose client
	// left (or whose connection ended) before their answer; they are
	// not in requests or duration, which count answers.
	abandoned *prometheus.CounterVec
	// seriesMu guards series, the series of each label set seen so far,
	// so that a request updates them without hashing its labels again.
	// Its keys are the label sets of requests and duration, which the
	// bounded routes, methods and statuses bound.
	seriesMu sync.RWMutex
	series   map[seriesKey]requestSeries
}

// seriesKey is the label set of one request: route and method labels and
// the status sent.
type seriesKey struct {
	route, method string
	status        int
}

// requestSeries are the series a request of one label set updates.
type requestSeries struct {
	requests, bytesIn, bytesOut prometheus.Counter
	duration                    prometheus.Observer
}

// NewHTTPMetrics creates the HTTP metrics and registers them with reg. It
// panics if they are already registered there.
func NewHTTPMetrics(reg prometheus.Registerer) *HTTPMetrics {
	labels := []string{"route", "method", "status"}
	metrics := &HTTPMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Subsystem: "http", Name: "requests_total",
			Help: "HTTP requests answered, by route pattern, method and status.",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "narad", Subsystem: "http", Name: "request_duration_seconds",
			Help: "Time from request arrival to the end of the answer.", Buckets: prometheus.DefBuckets,
		}, labels),
		bytesIn: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Subsystem: "http", Name: "request_bytes_in_total",
			Help: "Request body bytes read, by route pattern.",
		}, []string{"route"}),
		bytesOut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Subsystem: "http", Name: "response_bytes_out_total",
			Help: "Response body bytes written, by route pattern.",
		}, []string{"route"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "narad", Subsystem: "http", Name: "requests_in_flight",
			Help: "HTTP requests being served.",
		}),
		abandoned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "narad", Subsystem: "http", Name: "requests_abandoned_total",
			Help: "HTTP requests whose client left, or whose connection ended, before the answer (a long poll given up, above all); not in requests_total.",
		}, []string{"route", "method"}),
	}
	metrics.series = map[seriesKey]requestSeries{}
	reg.MustRegister(metrics.requests, metrics.duration, metrics.bytesIn, metrics.bytesOut, metrics.inFlight, metrics.abandoned)
	return metrics
}

func (m *HTTPMetrics) observe(route, method string, recorder *statusRecorder, bytesIn int64, elapsed time.Duration) {
	series := m.seriesOf(seriesKey{route: route, method: method, status: recorder.statusOrOK()})
	series.requests.Inc()
	series.duration.Observe(elapsed.Seconds())
	series.bytesIn.Add(float64(bytesIn))
	series.bytesOut.Add(float64(recorder.bytes))
}

// observeAbandoned counts a request whose client left before its answer:
// the body bytes it read, but no status, duration or bytes out, since
// nobody got an answer (a cancelled backend call answers 503, which would
// otherwise count as a server failure).
func (m *HTTPMetrics) observeAbandoned(route, method string, bytesIn int64) {
	m.abandoned.WithLabelValues(route, method).Inc()
	m.bytesIn.WithLabelValues(route).Add(float64(bytesIn))
}

// seriesOf returns the series of a label set, looking them up in the
// vectors the first time only.
func (m *HTTPMetrics) seriesOf(key seriesKey) requestSeries {
	m.seriesMu.RLock()
	series, ok := m.series[key]
	m.seriesMu.RUnlock()
	if ok {
		return series
	}
	status := strconv.Itoa(key.status)
	series = requestSeries{
		requests: m.requests.WithLabelValues(key.route, key.method, status),
		duration: m.duration.WithLabelValues(key.route, key.method, status),
		bytesIn:  m.bytesIn.WithLabelValues(key.route),
		bytesOut: m.bytesOut.WithLabelValues(key.route),
	}
	m.seriesMu.Lock()
	defer m.seriesMu.Unlock()
	m.series[key] = series
	return series
}

func methodLabel(method string) string {
	if knownMethods[method] {
		return method
	}
	return methodOther
}

// statusRecorder remembers the status and counts the body bytes written.
// It belongs to one request; only its own methods change the fields.
type statusRecorder struct {
	http.ResponseWriter
	status int   // 0 until the header is written
	bytes  int64 // body bytes written
}

func (s *statusRecorder) WriteHeader(status int) {
	if s.status == 0 {
		s.status = status
	}
	s.ResponseWriter.WriteHeader(status)
}

func (s *statusRecorder) Write(data []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	n, err := s.ResponseWriter.Write(data)
	s.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// statusOrOK is the status sent; a handler that wrote nothing sent 200.
func (s *statusRecorder) statusOrOK() int {
	if s.status == 0 {
		return http.StatusOK
	}
	return s.status
}
