package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// Against the real broker: pub --batch of seven 1,000,000-byte text
// records (7,000,000 bytes of payload, below the documented 8 MiB per
// batch; about 9.3 MB of NDJSON body, below the 16 MiB body cap). The
// server takes it; the client refuses it before sending.
func TestLivePubBatchWithinThePayloadCap(t *testing.T) {
	server := liveServer(t)
	h := newHarness(t)
	h.runOK("-s", server, "topic", "add", "big")
	file := filepath.Join(t.TempDir(), "record.txt")
	require.NoError(t, os.WriteFile(file, bytes.Repeat([]byte("y"), 1_000_000), 0o600))
	code := h.run("-s", server, "pub", "big", "-f", file, "--count", "7", "--batch", "7", "--partition", "0")
	require.Equal(t, 0, code, "stderr:\n%s", h.stderr.String())
	h.runOK("-s", server, "topic", "info", "big", "--partition", "0")
	require.Contains(t, h.stdout.String(), `"high_watermark": 7`)
}
