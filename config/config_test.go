package config

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultsMatchTheContract(t *testing.T) {
	cfg := Default()
	assert.Equal(t, ":7942", cfg.HTTP.Addr)
	assert.Equal(t, 10*time.Second, cfg.HTTP.ReadTimeout)
	assert.Equal(t, 30*time.Second, cfg.HTTP.WriteTimeout)
	assert.Equal(t, 60*time.Second, cfg.HTTP.IdleTimeout)
	assert.Equal(t, 10*time.Second, cfg.HTTP.ShutdownGrace)
	assert.Equal(t, 10*time.Second, cfg.HTTP.MaxConsumeWait)
	assert.Empty(t, cfg.HTTP.PprofAddr)
	assert.Equal(t, ":7943", cfg.Cluster.Addr)
	assert.Empty(t, cfg.Cluster.NodeID)
	assert.Empty(t, cfg.Cluster.Peers)
	assert.Equal(t, "data", cfg.Storage.DataDir)
	assert.Equal(t, "none", cfg.Storage.Codec)
	assert.Equal(t, "fastest", cfg.Storage.CompressionLevel)
	assert.Equal(t, int64(1_800_000), cfg.Storage.IdleLogEvictionMs)
	assert.Equal(t, int64(64<<20), cfg.Storage.SegmentBytes)
	assert.Equal(t, 3, cfg.Topic.DefaultPartitions)
	assert.Equal(t, 108, cfg.Topic.MaxPartitions)
	assert.Equal(t, int64(604_800_000), cfg.Topic.DefaultRetentionAgeMs)
	assert.Equal(t, int64(30_000), cfg.Topic.DefaultVisibilityTimeoutMs)
	assert.Equal(t, 1024, cfg.Topic.DefaultMaxInFlightPerPartition)
	assert.Equal(t, 1024, cfg.Topic.DefaultMaxAckedAheadPerPartition)
	assert.Equal(t, Fanout{MaxBatchRecords: 4096, MaxBatchBytes: 4 << 20, LingerMs: 25}, cfg.Fanout)
	assert.Equal(t, Log{Level: "info", Format: "json"}, cfg.Log)
	assert.True(t, cfg.Security.Enabled)
}

func TestDefaultIsValid(t *testing.T) {
	assert.NoError(t, Default().Validate())
}

func TestParseLayersOverDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`{
	  "http": {"addr": "127.0.0.1:8000", "max_consume_wait": "5s"},
	  "storage": {"data_dir": "/var/lib/narad", "segment_bytes": 8192},
	  "topic": {"max_partitions": 200},
	  "log": {"format": "text"},
	  "security": {"enabled": false}
	}`))
	require.NoError(t, err)
	want := Default()
	want.HTTP.Addr = "127.0.0.1:8000"
	want.HTTP.MaxConsumeWait = 5 * time.Second
	want.Storage.DataDir = "/var/lib/narad"
	want.Storage.SegmentBytes = 8192
	want.Topic.MaxPartitions = 200
	want.Log.Format = "text"
	want.Security.Enabled = false
	assert.Equal(t, want, cfg)
}

func TestParseEmptyObjectIsDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`{}`))
	require.NoError(t, err)
	assert.Equal(t, Default(), cfg)
}

func TestParseIsStrict(t *testing.T) {
	cases := []struct {
		name      string
		file      string
		wantError string
	}{
		{"unknown section", `{"bogus": {}}`, "bogus: unknown key"},
		{"unknown cluster key", `{"cluster": {"leader": "n1"}}`, "cluster.leader: unknown key"},
		{"unknown http key", `{"http": {"tls": true}}`, "http.tls: unknown key"},
		{"trailing object", `{} {}`, "trailing data"},
		{"trailing garbage", `{"log": {"level": "debug"}} x`, "trailing data"},
		{"internal storage key", `{"storage": {"fsync": "always"}}`, "storage.fsync is an internal setting"},
		{"another internal key", `{"storage": {"flush_bytes": 1, "sync_bytes": 2}}`, "storage.flush_bytes is an internal setting"},
		{"secret in file", `{"security": {"admin_password": "x"}}`, "security.admin_password is read only from NARAD_ADMIN_PASSWORD"},
		{"duration as number", `{"http": {"read_timeout": 10}}`, `http.read_timeout: want a duration string such as "10s", got 10`},
		{"bad duration", `{"http": {"read_timeout": "ten seconds"}}`, `http.read_timeout: want a duration string such as "10s", got "ten seconds"`},
		{"wrong type", `{"topic": {"max_partitions": "many"}}`, `topic.max_partitions: want an integer, got "many"`},
		{"not json", `max_partitions = 3`, "invalid character"},
		{"empty file", ``, "empty: want a JSON object"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.file))
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrFile)
			assert.Contains(t, err.Error(), tc.wantError)
		})
	}
}

func TestJSONRoundTrip(t *testing.T) {
	cfg := Default()
	cfg.HTTP.ReadTimeout = 1500 * time.Millisecond
	cfg.Cluster.Peers = []string{"n1@a:7943", "n2@b:7943", "n3@c:7943"}
	cfg.Security.AdminPassword = "never written"
	encoded, err := json.Marshal(cfg)
	require.NoError(t, err)
	assert.Contains(t, string(encoded), `"read_timeout":"1.5s"`)
	assert.NotContains(t, string(encoded), "never written")
	decoded, err := Parse(encoded)
	require.NoError(t, err)
	cfg.Security.AdminPassword = ""
	assert.Equal(t, cfg, decoded)
}

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "narad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"cluster": {"node_id": "n1"}}`), 0o600))
	cfg, err := LoadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "n1", cfg.Cluster.NodeID)
	assert.Equal(t, ":7942", cfg.HTTP.Addr, "untouched keys keep defaults")

	_, err = LoadFile(filepath.Join(dir, "missing.json"))
	assert.ErrorIs(t, err, ErrFile)
	assert.ErrorIs(t, err, os.ErrNotExist)

	bad := filepath.Join(dir, "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"x": 1}`), 0o600))
	_, err = LoadFile(bad)
	assert.ErrorContains(t, err, bad, "the error names the file")

	huge := filepath.Join(dir, "huge.json")
	require.NoError(t, os.WriteFile(huge, []byte(strings.Repeat(" ", configFileBytesMax+1)), 0o600))
	_, err = LoadFile(huge)
	assert.ErrorContains(t, err, "larger than")
}

func TestErrorSentinelsAreDistinct(t *testing.T) {
	assert.False(t, errors.Is(ErrFile, ErrInvalid))
	assert.False(t, errors.Is(ErrEnv, ErrFile))
}
