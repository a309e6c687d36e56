package node

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

// A fan-out cursor file is the one piece of a partition's durable state
// without a checksum (the hwm slots, consumer.offset and every frame carry
// a CRC32C): one bit of media damage to a digit of its next_offset still
// decodes, as a later offset, and the cursor resumes past records it never
// copied. They never reach the child, silently. A damaged cursor file must
// be detected and the cursor start where copies may repeat, never skip
// (loadCursor's rule for a file that does not decode).
func TestACursorFileDamagedByBitRotSkipsNoRecord(t *testing.T) {
	h := fanoutHarness(t)
	h.tick(1)
	for i := range 10 {
		h.produce("orders", 0, fmt.Sprint("a", i))
	}
	h.tick(h.cfg.Fanout.LingerMs + 1)
	h.tick(h.cfg.Fanout.CursorPersistIntervalMs)
	name := cursorPath(PartitionDir("orders", 0), "audit")
	require.Equal(t, uint64(10), cursorFileOf(t, h.fs, "orders", 0, "audit").NextOffset, "the file says 10")
	for i := 10; i < 20; i++ {
		h.produce("orders", 0, fmt.Sprint("b", i)) // acknowledged, not copied yet
	}

	// Media damage: one bit of the durable cursor file flips, turning the
	// digit "0" of next_offset 10 into "8" (0x30 ^ 0x08 = 0x38).
	data, err := storage.ReadFile(h.fs, name)
	require.NoError(t, err)
	at := bytes.Index(data, []byte(`"next_offset":10`))
	require.GreaterOrEqual(t, at, 0, "%s", data)
	flipBit(t, h.fs, name, int64(at+len(`"next_offset":1`)), 0x08)
	damaged, err := storage.ReadFile(h.fs, name)
	require.NoError(t, err)
	require.Contains(t, string(damaged), `"next_offset":18`)

	h.crash()
	for range 5 {
		h.tick(h.cfg.Fanout.LingerMs + 1)
	}
	copied := map[string]bool{}
	for _, payload := range h.replayAll("audit", 0) {
		copied[payload] = true
	}
	for i := 10; i < 20; i++ {
		require.True(t, copied[fmt.Sprint("b", i)], "acknowledged parent record b%d never reached the child (child holds %v)", i, h.replayAll("audit", 0))
	}
}

// flipBit flips the bits of mask in the byte at offset of a file,
// durably, as a failing medium would.
func flipBit(t *testing.T, fs storage.FS, name string, offset int64, mask byte) {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	one := make([]byte, 1)
	_, err = file.ReadAt(one, offset)
	require.NoError(t, err)
	one[0] ^= mask
	_, err = file.WriteAt(one, offset)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
}
