package proc

import (
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// LeaderMetric is the gauge a node sets to 1 while it leads the metadata
// group.
const LeaderMetric = "narad_meta_leader"

// Metrics are the metric families of one or more /metrics pages, by
// name; Add appends the metrics of another page to the same families, so
// that a sum over them is the cluster's.
type Metrics map[string]*dto.MetricFamily

// ParseMetrics reads a page in the Prometheus text format.
func ParseMetrics(r io.Reader) (Metrics, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	return Metrics(families), err
}

// Scrape reads the /metrics page of the node whose HTTP API listens on
// httpAddr, through httpClient (http.DefaultClient when nil) within
// timeout and at most MetricsBytesMax bytes. A status other than 200 is an
// error.
func Scrape(ctx context.Context, httpClient *http.Client, httpAddr string, timeout time.Duration) (Metrics, error) {
	if httpClient == nil {
		httpClient = http.DefaultClient
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("metrics of %s: http %d", httpAddr, resp.StatusCode)
	}
	return ParseMetrics(io.LimitReader(resp.Body, MetricsBytesMax))
}

// Add appends the metrics of other to m's families.
func (m Metrics) Add(other Metrics) {
	for name, family := range other {
		mine, found := m[name]
		if !found {
			m[name] = &dto.MetricFamily{Name: family.Name, Help: family.Help, Type: family.Type}
			mine = m[name]
		}
		mine.Metric = append(mine.Metric, family.Metric...)
	}
}

// Value returns the value of the unlabelled counter, gauge or untyped
// metric name, and whether it is there.
func (m Metrics) Value(name string) (float64, bool) {
	for _, metric := range m[name].GetMetric() {
		if len(metric.GetLabel()) == 0 {
			return scalar(metric), true
		}
	}
	return 0, false
}

// Sum adds up the counter, gauge or untyped metrics called name whose
// labels include every pair of labels.
func (m Metrics) Sum(name string, labels map[string]string) float64 {
	sum := 0.0
	for _, metric := range m.matching(name, labels) {
		sum += scalar(metric)
	}
	return sum
}

func scalar(metric *dto.Metric) float64 {
	switch {
	case metric.Counter != nil:
		return metric.GetCounter().GetValue()
	case metric.Gauge != nil:
		return metric.GetGauge().GetValue()
	}
	return metric.GetUntyped().GetValue()
}

// matching returns the metrics of the family name whose labels include
// every pair of labels.
func (m Metrics) matching(name string, labels map[string]string) []*dto.Metric {
	var kept []*dto.Metric
	for _, metric := range m[name].GetMetric() {
		have := map[string]string{}
		for _, pair := range metric.GetLabel() {
			have[pair.GetName()] = pair.GetValue()
		}
		if hasAll(have, labels) {
			kept = append(kept, metric)
		}
	}
	return kept
}

func hasAll(have, want map[string]string) bool {
	for key, value := range want {
		if got, found := have[key]; !found || got != value {
			return false
		}
	}
	return true
}

// HistogramOf adds up the observation count and sum of the histogram
// name over its metrics whose labels include every pair of labels.
func (m Metrics) HistogramOf(name string, labels map[string]string) (count, sum float64) {
	for _, metric := range m.matching(name, labels) {
		count += histogramCount(metric.GetHistogram())
		sum += metric.GetHistogram().GetSampleSum()
	}
	return count, sum
}

// HistogramCount is the observation count of the histogram name over
// all its metrics.
func (m Metrics) HistogramCount(name string) float64 {
	count, _ := m.HistogramOf(name, nil)
	return count
}

// HistogramSum is the sum of every observation of the histogram name.
func (m Metrics) HistogramSum(name string) float64 {
	_, sum := m.HistogramOf(name, nil)
	return sum
}

func histogramCount(h *dto.Histogram) float64 {
	if h.SampleCountFloat != nil {
		return h.GetSampleCountFloat()
	}
	return float64(h.GetSampleCount())
}

func bucketCount(b *dto.Bucket) float64 {
	if b.CumulativeCountFloat != nil {
		return b.GetCumulativeCountFloat()
	}
	return float64(b.GetCumulativeCount())
}

// cumulative sums, per upper bound, the cumulative counts of the
// histogram name's buckets over its metrics.
func (m Metrics) cumulative(name string) map[float64]float64 {
	counts := map[float64]float64{}
	for _, metric := range m[name].GetMetric() {
		for _, bucket := range metric.GetHistogram().GetBucket() {
			counts[bucket.GetUpperBound()] += bucketCount(bucket)
		}
	}
	return counts
}

// HistogramQuantileBound returns the upper bound of the first bucket of
// the histogram name (summed over its metrics) that holds the q quantile
// of its observations, or NaN without observations. It is a bound, not an
// estimate: the answer is "at most this".
func (m Metrics) HistogramQuantileBound(name string, q float64) float64 {
	total := m.HistogramCount(name)
	if total == 0 {
		return math.NaN()
	}
	counts := m.cumulative(name)
	for _, bound := range slices.Sorted(maps.Keys(counts)) {
		if counts[bound] >= q*total {
			return bound
		}
	}
	return math.Inf(1)
}

// HistogramCountAbove returns how many observations of the histogram name
// (summed over its metrics) exceeded the largest bucket bound that is at
// most threshold.
func (m Metrics) HistogramCountAbove(name string, threshold float64) float64 {
	counts := m.cumulative(name)
	below, largest := 0.0, math.Inf(-1)
	for bound, count := range counts {
		if bound <= threshold && bound > largest {
			below, largest = count, bound
		}
	}
	return m.HistogramCount(name) - below
}
