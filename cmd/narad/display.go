package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"narad/client"
)

// table prints aligned columns. Every cell takes part in the alignment,
// and trailing blanks are trimmed from each line.
type table struct {
	out    io.Writer
	buffer bytes.Buffer
	writer *tabwriter.Writer
}

func newTable(out io.Writer) *table {
	t := &table{out: out}
	t.writer = tabwriter.NewWriter(&t.buffer, 0, 0, 2, ' ', 0)
	return t
}

// row adds one line.
func (t *table) row(cells ...string) {
	fmt.Fprintln(t.writer, strings.Join(cells, "\t")+"\t")
}

func (t *table) flush() {
	_ = t.writer.Flush()
	for line := range strings.Lines(t.buffer.String()) {
		fmt.Fprintln(t.out, strings.TrimRight(line, " \n"))
	}
	t.buffer.Reset()
}

// printJSON writes value as indented JSON.
func printJSON(out io.Writer, value any) error {
	encoder := json.NewEncoder(out)
	encoder.SetIndent("", "  ")
	encoder.SetEscapeHTML(false)
	return encoder.Encode(value)
}

// style adds ANSI dim/bold when enabled.
type style struct{ enabled bool }

// style is on only when stdout is a terminal and NO_COLOR is unset.
func (a *app) style() style {
	return style{enabled: a.stdoutIsTerminal && a.getenv("NO_COLOR") == ""}
}

func (s style) dim(text string) string  { return s.wrap("\x1b[2m", text) }
func (s style) bold(text string) string { return s.wrap("\x1b[1m", text) }

func (s style) wrap(code, text string) string {
	if !s.enabled {
		return text
	}
	return code + text + "\x1b[0m"
}

// messagePrinter writes consumed or replayed messages.
type messagePrinter struct {
	out io.Writer
	// raw prints the payload alone (a JSON string as its text), one
	// message per line (docs/api.md#cli).
	raw      bool
	location *time.Location
	style    style
	// terminal: stdout is a terminal, where a key or payload's control
	// characters are shown escaped (a producer's escape sequences would
	// otherwise drive the operator's terminal); --raw prints them as they
	// are.
	terminal bool
}

func (a *app) newMessagePrinter(raw bool) messagePrinter {
	return messagePrinter{out: a.stdout, raw: raw, location: a.location, style: a.style(), terminal: a.stdoutIsTerminal}
}

// shown is text as the printer writes it: escaped for a terminal.
func (p messagePrinter) shown(text string) string {
	if p.terminal {
		return terminalSafe(text)
	}
	return text
}

// terminalSafe escapes, for a terminal, the control characters of text
// but tab and newline (C0, DEL and C1: what makes escape sequences) as
// \xNN or \u00NN.
func terminalSafe(text string) string {
	if !strings.ContainsFunc(text, isTerminalControl) {
		return text
	}
	var safe strings.Builder
	for _, r := range text {
		switch {
		case !isTerminalControl(r):
			safe.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&safe, "\\x%02x", r)
		default:
			fmt.Fprintf(&safe, "\\u%04x", r)
		}
	}
	return safe.String()
}

func isTerminalControl(r rune) bool {
	return (r < 0x20 && r != '\t' && r != '\n') || (r >= 0x7f && r <= 0x9f)
}

// print writes one message as
//
//	[p<P> @<offset>] key=<k> from=<topic>/p<P>@<offset>x<deliveries> HH:MM:SS.mmm <payload>
//
// (key= only when the record has a key, from= only on a dead letter:
// where it was copied from and after how many deliveries); binary payloads print
// "(binary, N bytes)" and a hex dump; raw mode prints the payload bytes.
func (p messagePrinter) print(message client.Message) error {
	payload, err := message.Payload()
	if err != nil {
		return fmt.Errorf("p%d @%d: %w", message.Partition, message.Offset, err)
	}
	if p.raw {
		_, err := fmt.Fprintf(p.out, "%s\n", payload)
		return err
	}
	var line strings.Builder
	line.WriteString(p.style.dim(fmt.Sprintf("[p%d @%d]", message.Partition, message.Offset)))
	if message.Key != "" {
		line.WriteString(" key=" + p.style.bold(p.shown(message.Key)))
	}
	if origin := message.DeadLetter; origin != nil {
		line.WriteString(" from=" + p.shown(fmt.Sprintf("%s/p%d@%dx%d", origin.Topic, origin.Partition, origin.Offset, origin.DeliveryCount)))
	}
	line.WriteString(" " + p.style.dim(message.Time().In(p.location).Format("15:04:05.000")) + " ")
	if message.IsBinary() {
		fmt.Fprintf(&line, "(binary, %d bytes)\n%s", len(payload), hex.Dump(payload))
	} else {
		line.WriteString(p.shown(string(payload)))
		line.WriteString("\n")
	}
	_, err = io.WriteString(p.out, line.String())
	return err
}

// shortDuration renders d as a Go duration without zero tails: 168h, 1h30m,
// 1.5s.
func shortDuration(d time.Duration) string {
	text := d.String()
	if strings.HasSuffix(text, "m0s") {
		text = strings.TrimSuffix(text, "0s")
	}
	if strings.HasSuffix(text, "h0m") {
		text = strings.TrimSuffix(text, "0m")
	}
	return text
}
