// Package proc holds what the tests of real narad processes share (the
// soak and package e2e): a free loopback address for a node, a pause
// bound to a context, a node's /metrics page (and a value on it) and the
// tail of its log.
// It starts nothing itself and keeps no state.
package proc

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Bounds, with their unit last.
const (
	// MetricsBytesMax bounds a scraped /metrics page.
	MetricsBytesMax = 16 << 20
	// LogTailBytes is how much of a node's log a failure quotes.
	LogTailBytes = 4096
)

// FreeAddr returns a loopback address whose port was free a moment ago
// (the kernel picked it; a process started soon after may bind it).
func FreeAddr() (string, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer listener.Close()
	return listener.Addr().String(), nil
}

// SleepContext pauses for d or until ctx ends (then it returns ctx's
// error).
func SleepContext(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// MetricValue returns the value of an unlabelled sample name on a
// /metrics page in the Prometheus text format, and whether it is there.
func MetricValue(page, name string) (float64, bool) {
	for line := range strings.Lines(page) {
		value, found := strings.CutPrefix(strings.TrimSpace(line), name+" ")
		if !found {
			continue
		}
		parsed, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		return parsed, err == nil
	}
	return 0, false
}

// Metrics returns the /metrics page of the node whose HTTP API listens on
// httpAddr, read through client within timeout and at most
// MetricsBytesMax bytes. A status other than 200 is an error.
func Metrics(ctx context.Context, client *http.Client, httpAddr string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MetricsBytesMax))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("metrics of %s: http %d", httpAddr, resp.StatusCode)
	}
	return string(body), err
}

// LogTail returns the last LogTailBytes of a log file, or why it could not
// be read.
func LogTail(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	if len(data) > LogTailBytes {
		data = data[len(data)-LogTailBytes:]
	}
	return string(data)
}
