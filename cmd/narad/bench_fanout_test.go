package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLiveBenchFanout runs the fan-out phases against a real node: every
// child must catch up on everything produced, and the delay child must
// hold every record, none of them early.
func TestLiveBenchFanout(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "bench", "fan", "--create", "--count", "300", "--workers", "4", "--size", "48",
		"--children", "2", "--delay", "200ms", "--json")
	var report benchReport
	require.NoError(t, json.Unmarshal(h.stdout.Bytes(), &report), h.stdout.String())
	require.Equal(t, 300, report.Produce.OK)
	require.NotNil(t, report.Fanout)
	require.Len(t, report.Fanout.Children, 2)
	for _, child := range report.Fanout.Children {
		assert.True(t, child.CaughtUp, "%+v", child)
		assert.Greater(t, child.MessagesPerSecond, 0.0)
	}
	delay := report.Fanout.Delay
	require.NotNil(t, delay)
	assert.Equal(t, "fan-delayed", delay.Name)
	assert.Equal(t, 300, delay.Records, "every produced record is found in the delay child")
	assert.Zero(t, delay.Missing)
	assert.Zero(t, delay.Early, "no record reaches a delay child before it is due")
	assert.GreaterOrEqual(t, delay.LateMs.P50, 0.0)

	// A second run reuses the children and counts only its own records.
	h2 := newHarness(t)
	h2.runOK("-s", server, "bench", "fan", "--count", "100", "--workers", "2", "--size", "48", "--delay", "200ms", "--json")
	var again benchReport
	require.NoError(t, json.Unmarshal(h2.stdout.Bytes(), &again), h2.stdout.String())
	require.NotNil(t, again.Fanout.Delay)
	assert.Equal(t, 100, again.Fanout.Delay.Records)
}

// TestLiveBenchFanoutRefusesATopicThatIsNotItsChild: an existing topic
// with a child's name but another parent is an error that changes nothing.
func TestLiveBenchFanoutRefusesATopicThatIsNotItsChild(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "topic", "add", "solo-child-1")
	require.Equal(t, 2, h.run("-s", server, "bench", "solo", "--create", "--count", "10", "--children", "1"))
	assert.Contains(t, h.stderr.String(), "topic solo-child-1 exists but is not a child of solo")
}

func TestBenchFanoutFlagsAreChecked(t *testing.T) {
	for _, args := range [][]string{
		{"--children", "-1"},
		{"--children", "17"},
		{"--delay", "11m"},
		{"--delay", "1s", "--size", "8"},
	} {
		h := newHarness(t)
		broker := newFakeBroker(t)
		require.Equal(t, 2, h.against(broker, append([]string{"bench", "orders"}, args...)...), args)
		assert.Empty(t, broker.seen(produceRoute), "a refused run sends nothing: %v", args)
	}
}

func TestTaggedPayloadsAreUniqueAndSized(t *testing.T) {
	first, second := taggedPayload("bench-x", 1, 40), taggedPayload("bench-x", 11, 40)
	assert.Len(t, first, 40)
	assert.Len(t, second, 40)
	assert.NotEqual(t, first, second)
	assert.Equal(t, "bench-x-1 ", string(first[:10]))
}
