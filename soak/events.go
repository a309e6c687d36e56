package soak

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// logLineBytesMax bounds one line of a node's log (a panic's stack lines
// are short; a JSON record is a few hundred bytes).
const logLineBytesMax = 1 << 20

// logRecord is the part of a node's JSON log line the soak reads.
type logRecord struct {
	Time     string `json:"time"`
	Level    string `json:"level"`
	Message  string `json:"msg"`
	Kind     string `json:"kind"`
	Detail   string `json:"detail"`
	Outcome  string `json:"outcome"`
	Duration int64  `json:"duration_ms"`
}

// LogSummary is what the nodes' logs say about a run.
type LogSummary struct {
	// MovesByOutcome counts "move ended" lines (the destination's view)
	// by outcome; MoveDurationsMs holds their durations.
	MovesByOutcome  map[string]int
	MoveDurationsMs []int64
	// Freezes holds the duration of every freeze a source logged from
	// partition-frozen to partition-moved-away or partition-unfrozen;
	// FreezesCut counts freezes still open when their process ended.
	Freezes    []time.Duration
	FreezesCut int
	// Events counts the node events by kind.
	Events map[string]int
	// Errors counts ERROR lines; Panics quotes lines of Go panics and
	// fatal errors (which are not JSON).
	Errors int
	Panics []string
}

func newLogSummary() LogSummary {
	return LogSummary{MovesByOutcome: map[string]int{}, Events: map[string]int{}}
}

// summarizeLogs reads every log file.
func summarizeLogs(paths []string) (LogSummary, error) {
	summary := newLogSummary()
	for _, path := range paths {
		file, err := os.Open(path)
		if err != nil {
			return summary, err
		}
		err = summary.add(file)
		file.Close()
		if err != nil {
			return summary, err
		}
	}
	return summary, nil
}

// freezeOpen is a freeze seen begin in the current process.
type freezeOpen map[string]time.Time

// add reads one node's log.
func (s *LogSummary) add(r io.Reader) error {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 64<<10), logLineBytesMax)
	open := freezeOpen{}
	for scanner.Scan() {
		line := scanner.Bytes()
		var record logRecord
		if json.Unmarshal(line, &record) != nil {
			s.addText(string(line))
			continue
		}
		if record.Message == processStartMessage {
			s.FreezesCut += len(open)
			open = freezeOpen{}
			continue
		}
		s.addRecord(record, open)
	}
	s.FreezesCut += len(open)
	return scanner.Err()
}

// addText notes a line that is not JSON: the runtime writes panics and
// fatal errors as text.
func (s *LogSummary) addText(line string) {
	if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
		s.Panics = append(s.Panics, line)
	}
}

func (s *LogSummary) addRecord(record logRecord, open freezeOpen) {
	if record.Level == "ERROR" {
		s.Errors++
	}
	switch record.Message {
	case "move ended":
		s.MovesByOutcome[record.Outcome]++
		s.MoveDurationsMs = append(s.MoveDurationsMs, record.Duration)
	case "node event":
		s.Events[record.Kind]++
		s.addFreezeEvent(record, open)
	}
}

// addFreezeEvent pairs a partition's freeze with its end. The detail of
// these events starts with the partition's directory.
func (s *LogSummary) addFreezeEvent(record logRecord, open freezeOpen) {
	dir, _, _ := strings.Cut(record.Detail, " ")
	dir = strings.TrimSuffix(dir, ":")
	at, err := time.Parse(time.RFC3339Nano, record.Time)
	if err != nil {
		return
	}
	switch record.Kind {
	case "partition-frozen":
		open[dir] = at
	case "partition-moved-away", "partition-unfrozen":
		if began, ok := open[dir]; ok {
			s.Freezes = append(s.Freezes, at.Sub(began))
			delete(open, dir)
		}
	}
}

// percentile returns the p-th percentile (0..100) of durations, or 0.
func percentile(durations []time.Duration, p int) time.Duration {
	if len(durations) == 0 {
		return 0
	}
	sorted := slices.Clone(durations)
	slices.Sort(sorted)
	index := (len(sorted) - 1) * p / 100
	return sorted[index]
}

// logsMention reports whether a node event of kind whose detail starts
// with detailPrefix appears in any of the logs.
func logsMention(paths []string, kind, detailPrefix string) bool {
	for _, path := range paths {
		if logMentionsSince(path, kind, detailPrefix, time.Time{}) {
			return true
		}
	}
	return false
}

// logMentionsSince reports whether the log holds a node event of kind,
// logged at or after since, whose detail starts with detailPrefix.
func logMentionsSince(path, kind, detailPrefix string, since time.Time) bool {
	file, err := os.Open(path)
	if err != nil {
		return false
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 64<<10), logLineBytesMax)
	for scanner.Scan() {
		line := scanner.Bytes()
		if !strings.Contains(string(line), kind) {
			continue
		}
		var record logRecord
		if json.Unmarshal(line, &record) != nil || record.Kind != kind || !strings.HasPrefix(record.Detail, detailPrefix) {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, record.Time); err == nil && !at.Before(since) {
			return true
		}
	}
	return false
}
