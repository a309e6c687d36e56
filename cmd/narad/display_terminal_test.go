package main

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/client"
)

// On a terminal, a consumed key's and payload's control characters are
// shown escaped: a producer's escape sequences (clear the screen, set the
// window title, colour) never reach the operator's terminal. Tabs and
// newlines stay; off a terminal, and with --raw, the bytes are as sent.
func TestPrintedMessagesCannotDriveTheTerminal(t *testing.T) {
	payload, err := json.Marshal("ok\x1b[2J\x1b]0;pwned\x07 tab\there\u009b31m")
	require.NoError(t, err)
	message := client.Message{Topic: "t", Key: "k\x1b[31m", RawPayload: payload}
	print := func(raw, terminal bool) string {
		var out bytes.Buffer
		printer := messagePrinter{out: &out, raw: raw, location: time.UTC, terminal: terminal}
		require.NoError(t, printer.print(message))
		return out.String()
	}
	shown := print(false, true)
	require.NotContains(t, shown, "\x1b")
	require.NotContains(t, shown, "\u009b")
	require.Contains(t, shown, `key=k\x1b[31m`)
	require.Contains(t, shown, `ok\x1b[2J\x1b]0;pwned\x07 tab`+"\there"+`\u009b31m`)
	require.Contains(t, print(false, false), "\x1b[2J", "off a terminal the payload is as sent")
	require.Contains(t, print(true, true), "\x1b[2J", "--raw prints the payload as sent")
}

// A dead letter prints where it came from (topic, partition, offset and
// the deliveries it had there) after its key; other messages do not.
func TestPrintedDeadLettersNameTheirOrigin(t *testing.T) {
	message := client.Message{Topic: "orders.dead", Partition: 1, Offset: 4, Key: "k", RawPayload: json.RawMessage(`"x"`),
		DeadLetter: &client.DeadLetter{Topic: "orders", Partition: 2, Offset: 17, DeliveryCount: 5}}
	var out bytes.Buffer
	printer := messagePrinter{out: &out, location: time.UTC}
	require.NoError(t, printer.print(message))
	require.Regexp(t, `^\[p1 @4\] key=k from=orders/p2@17x5 \d\d:\d\d:\d\d\.\d{3} x\n$`, out.String())
	message.DeadLetter = nil
	out.Reset()
	require.NoError(t, printer.print(message))
	require.NotContains(t, out.String(), "from=")
}
