package proc

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMetricValue(t *testing.T) {
	page := "# HELP narad_meta_snapshots_installed_total Snapshots.\n" +
		"# TYPE narad_meta_snapshots_installed_total counter\n" +
		"narad_meta_snapshots_installed_total 2\n" +
		"narad_meta_snapshots_installed_total_other 7\n" +
		"narad_moves_total{outcome=\"completed\"} 3\n" +
		"narad_meta_leader 1e+00\n"
	value, found := MetricValue(page, "narad_meta_snapshots_installed_total")
	assert.True(t, found)
	assert.Equal(t, 2.0, value)
	value, found = MetricValue(page, "narad_meta_leader")
	assert.True(t, found)
	assert.Equal(t, 1.0, value)
	_, found = MetricValue(page, "narad_moves_total")
	assert.False(t, found, "a labelled sample is not an unlabelled one")
	_, found = MetricValue(page, "narad_absent")
	assert.False(t, found)
}
