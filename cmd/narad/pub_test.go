package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func produceBroker(t *testing.T) *fakeBroker {
	return newFakeBroker(t).on("POST /v1/topics/orders/produce", reply{202, `{"partition":1,"offset":7}`})
}

func TestPubFromArgument(t *testing.T) {
	h := newHarness(t)
	broker := produceBroker(t)
	h.againstOK(broker, "pub", "orders", "hello", "-k", "customer-7", "--partition", "1")
	requests := broker.seen("POST /v1/topics/orders/produce")
	require.Len(t, requests, 1)
	assert.Equal(t, "hello", requests[0].Body)
	assert.Equal(t, "key=customer-7&partition=1", requests[0].Query)
	assert.Equal(t, "accepted (5 bytes) → p1 @7\n", h.stderr.String())
	assert.Empty(t, h.stdout.String())
}

func TestPubSources(t *testing.T) {
	binary := []byte{0, 1, 2, 0xff}
	path := filepath.Join(t.TempDir(), "payload.bin")
	require.NoError(t, os.WriteFile(path, binary, 0o600))
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  string
	}{
		{"file", []string{"-f", path}, "", string(binary)},
		{"file long flag", []string{"--file", path}, "", string(binary)},
		{"stdin when no argument", nil, "from stdin\n", "from stdin\n"},
		{"stdin dash argument", []string{"-"}, "dash", "dash"},
		{"stdin dash file", []string{"-f", "-"}, "dash file", "dash file"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.app.stdin = strings.NewReader(tc.stdin)
			broker := produceBroker(t)
			h.againstOK(broker, append([]string{"pub", "orders"}, tc.args...)...)
			requests := broker.seen("")
			require.Len(t, requests, 1)
			assert.Equal(t, tc.want, requests[0].Body)
			assert.Empty(t, requests[0].Query, "keyless and unpinned by default")
		})
	}
}

func TestPubKeylessReferenceReply(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics/orders/produce", reply{202, ""})
	h.againstOK(broker, "pub", "orders", "hi")
	assert.Equal(t, "accepted (2 bytes)\n", h.stderr.String(), "no placement from an empty 202")
}

func TestPubBadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x")
	require.NoError(t, os.WriteFile(path, []byte("x"), 0o600))
	cases := []struct {
		name  string
		args  []string
		stdin string
		want  string
		code  int
	}{
		{"argument and file", []string{"hello", "-f", path}, "", "not both", 2},
		{"empty stdin", nil, "", "the message is empty", 2},
		{"count zero", []string{"x", "--count", "0"}, "", "--count", 2},
		{"negative rate", []string{"x", "--rate", "-1"}, "", "--rate", 2},
		{"rate too slow to pace", []string{"x", "--rate", "1e-12", "--count", "3"}, "", "at least", 2},
		{"batch too large", []string{"x", "--batch", "1001"}, "", "--batch", 2},
		{"missing file", []string{"-f", path + ".missing"}, "", "--file: open", 2}, // as --schema and --payload
		{"too large", nil, strings.Repeat("a", messageBytesMax+1), "larger than", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			h.app.stdin = strings.NewReader(tc.stdin)
			broker := produceBroker(t)
			assert.Equal(t, tc.code, h.against(broker, append([]string{"pub", "orders"}, tc.args...)...))
			assert.Contains(t, h.stderr.String(), tc.want)
			assert.Empty(t, broker.seen(""))
		})
	}
}

var manySummary = regexp.MustCompile(`^accepted (\d+) messages in [0-9.]+(µs|ms|s) \(\d+ msg/s\)\n$`)

func TestPubCount(t *testing.T) {
	h := newHarness(t)
	broker := produceBroker(t)
	h.againstOK(broker, "pub", "orders", "x", "--count", "3")
	assert.Len(t, broker.seen(""), 3)
	match := manySummary.FindStringSubmatch(h.stderr.String())
	require.NotNil(t, match, h.stderr.String())
	assert.Equal(t, "3", match[1])
}

func TestPubBatchSendsNDJSON(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics/orders/produce", reply{202, `{"accepted":2}`})
	h.againstOK(broker, "pub", "orders", "hi", "--count", "5", "--batch", "2", "-k", "k")
	requests := broker.seen("")
	require.Len(t, requests, 3)
	encoded := base64.StdEncoding.EncodeToString([]byte("hi"))
	line := `{"key":"k","payload_base64":"` + encoded + `"}` + "\n"
	assert.Equal(t, line+line, requests[0].Body)
	assert.Equal(t, line, requests[2].Body, "the last batch carries the remainder")
	assert.Equal(t, "application/x-ndjson", requests[0].Header.Get("Content-Type"))
	assert.Empty(t, requests[0].Query)
	match := manySummary.FindStringSubmatch(h.stderr.String())
	require.NotNil(t, match, h.stderr.String())
	assert.Equal(t, "5", match[1])
}

func TestPubManyStopsAtFirstFailure(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t).on("POST /v1/topics/orders/produce",
		reply{202, `{"partition":0,"offset":0}`}, reply{503, `{"error":"no live partition owner"}`})
	assert.Equal(t, 1, h.against(broker, "pub", "orders", "x", "--count", "5"))
	assert.Len(t, broker.seen(""), 2)
	lines := strings.Split(strings.TrimSpace(h.stderr.String()), "\n")
	require.Len(t, lines, 2)
	assert.Regexp(t, `^accepted 1 messages in `, lines[0])
	assert.Equal(t, "narad: http 503: no live partition owner", lines[1])
}

func TestPubLargeBinaryFromStdin(t *testing.T) {
	h := newHarness(t)
	body := bytes.Repeat([]byte{0xfe}, messageBytesMax)
	h.app.stdin = bytes.NewReader(body)
	broker := produceBroker(t)
	h.againstOK(broker, "pub", "orders")
	assert.Equal(t, string(body), broker.seen("")[0].Body, "exactly the limit is allowed")
}
