package soak

import (
	"io"
	"os"
	"strings"
	"time"

	"narad/proc"
)

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
	open := freezeOpen{}
	err := proc.ScanLog(r, func(record proc.LogRecord) {
		if record.Message == proc.StartMessage {
			s.FreezesCut += len(open)
			open = freezeOpen{}
			return
		}
		s.addRecord(record, open)
	}, s.addText)
	s.FreezesCut += len(open)
	return err
}

// addText notes a line that is not JSON: the runtime writes panics and
// fatal errors as text.
func (s *LogSummary) addText(line string) {
	if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
		s.Panics = append(s.Panics, line)
	}
}

func (s *LogSummary) addRecord(record proc.LogRecord, open freezeOpen) {
	if record.Level == "ERROR" {
		s.Errors++
	}
	switch record.Message {
	case proc.MoveEndedMessage:
		s.MovesByOutcome[record.Text("outcome")]++
		duration, _ := record.Number("duration_ms")
		s.MoveDurationsMs = append(s.MoveDurationsMs, int64(duration))
	case proc.EventMessage:
		s.Events[record.Kind()]++
		s.addFreezeEvent(record, open)
	}
}

// addFreezeEvent pairs a partition's freeze with its end. The detail of
// these events starts with the partition's directory.
func (s *LogSummary) addFreezeEvent(record proc.LogRecord, open freezeOpen) {
	dir, _, _ := strings.Cut(record.Detail(), " ")
	dir = strings.TrimSuffix(dir, ":")
	switch record.Kind() {
	case "partition-frozen":
		open[dir] = record.Time
	case "partition-moved-away", "partition-unfrozen":
		if began, ok := open[dir]; ok {
			s.Freezes = append(s.Freezes, record.Time.Sub(began))
			delete(open, dir)
		}
	}
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
	records, err := proc.ReadLog(path, "")
	if err != nil {
		return false
	}
	for _, record := range records {
		if record.Kind() == kind && strings.HasPrefix(record.Detail(), detailPrefix) && !record.Time.Before(since) {
			return true
		}
	}
	return false
}
