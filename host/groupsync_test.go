package host

import (
	"fmt"
	"log/slog"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/storage"
)

var groupSyncsSeries = regexp.MustCompile(`(?m)^narad_storage_group_syncs_total (\d+)$`)

// A batch whose records land in three partitions is made durable with one
// syncfs (storage.group_sync, on by default) and read back from each.
func TestGroupSyncRoundOfSeveralPartitions(t *testing.T) {
	probe, err := storage.NewOSFS(t.TempDir())
	require.NoError(t, err)
	if err := probe.EnableGroupSync(); err != nil {
		t.Skipf("group sync unavailable here: %v", err)
	}
	require.NoError(t, probe.Close())

	h := testHost(t)
	require.NotNil(t, h.loop.groupSync, "DefaultOptions turn group sync on")
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"g","partitions":3}`), 201, ""},
		{"batch over three partitions", post("/v1/topics/g/produce", "application/x-ndjson",
			"{\"payload\":\"p0\",\"partition\":0}\n{\"payload\":\"p1\",\"partition\":1}\n{\"payload\":\"p2\",\"partition\":2}\n"), 202, ""},
	})
	status, body := call(t, h, get("/metrics"))
	require.Equal(t, 200, status)
	match := groupSyncsSeries.FindStringSubmatch(body)
	require.NotNil(t, match, "narad_storage_group_syncs_total is exported")
	require.NotEqual(t, "0", match[1], "the batch's round synced its partitions together")
	for partition := range 3 {
		status, body := call(t, h, get(fmt.Sprintf("/v1/topics/g/consume?partition=%d&offset=0", partition)))
		require.Equal(t, 200, status, "partition %d", partition)
		require.Contains(t, body, fmt.Sprintf("p%d", partition))
	}
}

// With group sync off, no syncfs is made and the metric stays at zero.
func TestGroupSyncOff(t *testing.T) {
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr, opts.GroupSync = "127.0.0.1:0", false
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	require.Nil(t, h.loop.groupSync)
	runSteps(t, h, []step{
		{"create", postJSON("/v1/topics", `{"name":"g","partitions":3}`), 201, ""},
		{"batch over three partitions", post("/v1/topics/g/produce", "application/x-ndjson",
			"{\"payload\":\"p0\",\"partition\":0}\n{\"payload\":\"p1\",\"partition\":1}\n{\"payload\":\"p2\",\"partition\":2}\n"), 202, ""},
	})
	_, body := call(t, h, get("/metrics"))
	require.Regexp(t, `(?m)^narad_storage_group_syncs_total 0$`, body)
	require.Regexp(t, `(?m)^narad_storage_fsyncs_total [1-9]`, body)
}
