package proc

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"time"
)

// Messages and attributes of a node's log that the harness's callers read.
const (
	// EventMessage is the msg of a node event; its kind and detail are
	// attributes.
	EventMessage = "node event"
	// MoveEndedMessage is the msg of the line a destination logs when a
	// move ends, with outcome, duration_ms and bytes.
	MoveEndedMessage = "move ended"
)

// LogRecord is one JSON line of a node's log (slog's JSON handler).
type LogRecord struct {
	// Node is the id of the node whose log held the line (set by ReadLog).
	Node string
	// Time, Level and Message are slog's time, level and msg.
	Time    time.Time
	Level   string
	Message string
	// Attrs are the other keys of the line, as decoded JSON values.
	Attrs map[string]any
}

// Text returns the attribute key as text: a string as it is, a number in
// Go's shortest form, "" when absent.
func (r LogRecord) Text(key string) string {
	switch value := r.Attrs[key].(type) {
	case nil:
		return ""
	case string:
		return value
	case float64:
		return strconv.FormatFloat(value, 'f', -1, 64)
	default:
		encoded, _ := json.Marshal(value)
		return string(encoded)
	}
}

// Number returns the numeric attribute key, and whether it is one.
func (r LogRecord) Number(key string) (float64, bool) {
	value, ok := r.Attrs[key].(float64)
	return value, ok
}

// Kind is the kind of a node event ("" for other lines).
func (r LogRecord) Kind() string {
	if r.Message != EventMessage {
		return ""
	}
	return r.Text("kind")
}

// Detail is the detail of a node event.
func (r LogRecord) Detail() string { return r.Text("detail") }

// parseRecord reads one JSON line; ok is false for a line that is not a
// JSON record with a time and a message (a panic's trace, say).
func parseRecord(line []byte) (LogRecord, bool) {
	var attrs map[string]any
	if json.Unmarshal(line, &attrs) != nil {
		return LogRecord{}, false
	}
	record := LogRecord{Attrs: attrs}
	timeText, _ := attrs["time"].(string)
	record.Level, _ = attrs["level"].(string)
	record.Message, _ = attrs["msg"].(string)
	at, err := time.Parse(time.RFC3339Nano, timeText)
	if err != nil || record.Message == "" {
		return LogRecord{}, false
	}
	record.Time = at
	delete(attrs, "time")
	delete(attrs, "level")
	delete(attrs, "msg")
	return record, true
}

// ScanLog reads a JSON log line by line: record gets each JSON record,
// text each other line (the runtime writes panics and fatal errors as
// text), both in the order written.
func ScanLog(r io.Reader, record func(LogRecord), text func(string)) error {
	scanner := bufio.NewScanner(r)
	scanner.Buffer(make([]byte, 0, 64<<10), LogLineBytesMax)
	for scanner.Scan() {
		if parsed, ok := parseRecord(scanner.Bytes()); ok {
			record(parsed)
		} else if text != nil {
			text(scanner.Text())
		}
	}
	return scanner.Err()
}

// ReadLog returns the JSON records of the log at path, in the order
// written, each with Node set to node.
func ReadLog(path, node string) ([]LogRecord, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var records []LogRecord
	err = ScanLog(file, func(r LogRecord) {
		r.Node = node
		records = append(records, r)
	}, nil)
	return records, err
}
