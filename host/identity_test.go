package host

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/storage"
	"narad/wire"
)

// checkIdentity is what a start does with the directory's identity:
// resolveIdentity, then writeIdentity when it must (openNode does so once
// the node recovered).
func checkIdentity(opts *Options, dir storage.FS, logger *slog.Logger) error {
	identity, write, err := resolveIdentity(opts, dir, logger)
	if err != nil || !write {
		return err
	}
	return writeIdentity(dir, identity)
}

func startNamed(t *testing.T, dir, id string, fromHostname bool) (*Host, error) {
	t.Helper()
	opts := DefaultOptions(dir)
	opts.HTTPAddr, opts.Node.NodeID, opts.NodeIDFromHostname = "127.0.0.1:0", id, fromHostname
	return Start(opts, slog.New(slog.DiscardHandler))
}

// stoppedWithARecord runs node id on dir long enough to create topic
// orders (3 partitions) and write one record to its partition 1, then
// stops it.
func stoppedWithARecord(t *testing.T, dir, id string) {
	t.Helper()
	h, err := startNamed(t, dir, id, false)
	require.NoError(t, err)
	runSteps(t, h, []step{{"create", postJSON("/v1/topics", `{"name":"orders","partitions":3}`), 201, ""},
		{"produce", post("/v1/topics/orders/produce?partition=1", "text/plain", "x"), 202, ""}})
	require.NoError(t, h.Shutdown())
}

// A single node's data directory names its node: started under another
// configured id it is refused, saying which (the node owned none of the
// directory's partitions and answered 503 for good; host review, high);
// with the id taken from a host name that changed, the node keeps the
// directory's id and its data.
func TestADataDirectoryKeepsItsNodeID(t *testing.T) {
	dir := t.TempDir()
	stoppedWithARecord(t, dir, "a")

	_, err := startNamed(t, dir, "b", false)
	require.ErrorContains(t, err, `belongs to the single node "a", and this process is configured as the single node "b"`)

	h, err := startNamed(t, dir, "renamed-host", true)
	require.NoError(t, err)
	defer func() { require.NoError(t, h.Shutdown()) }()
	runSteps(t, h, []step{{"produce after the rename", post("/v1/topics/orders/produce?partition=1", "text/plain", "y"), 202, ""}})
	status, body := call(t, h, get("/v1/topics/orders/consume?partition=1&offset=0"))
	require.Equal(t, 200, status, body)
	require.Contains(t, body, `"offset":0`)
}

// A single node's directory is refused as a cluster member's, and a
// member's as a single node's; a damaged identity refuses the start.
func TestADataDirectoryKeepsItsMode(t *testing.T) {
	dir := t.TempDir()
	osfs, err := storage.NewOSFS(dir)
	require.NoError(t, err)
	opts := DefaultOptions(dir)
	opts.Node.NodeID = "n1"
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)), "the first start writes it")
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))

	opts.Cluster.Enabled = true
	require.ErrorContains(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)),
		`belongs to the single node "n1", and this process is configured as node "n1" of a cluster`)
	opts.NodeIDFromHostname = true
	require.Error(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)), "a cluster member never takes another id")

	require.NoError(t, os.WriteFile(filepath.Join(dir, identityFile), []byte("{"), 0o644))
	opts.Cluster.Enabled = false
	require.ErrorContains(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)), "is damaged")
}

// A data directory has an id of its own, drawn at its first start and
// kept after (the node's heartbeats carry it, so that the cluster can
// tell its node id started on another directory); an identity written
// by a release without it gets one, once.
func TestADataDirectoryKeepsItsDataID(t *testing.T) {
	dir, osfs, opts := startedMember(t)
	first := opts.Node.DataID
	require.Len(t, first, dataIDChars)
	opts.Node.DataID = ""
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	require.Equal(t, first, opts.Node.DataID, "kept across starts")

	other, err := storage.NewOSFS(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, checkIdentity(&opts, other, slog.New(slog.DiscardHandler)))
	require.NotEqual(t, first, opts.Node.DataID, "another directory, another id")

	require.NoError(t, os.WriteFile(filepath.Join(dir, identityFile), []byte(`{"node_id":"n1","cluster":true}`), 0o644))
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	added := opts.Node.DataID
	require.Len(t, added, dataIDChars)
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	require.Equal(t, added, opts.Node.DataID, "added once, then kept")
}

// A damaged identity restored as its refusal says keeps the directory's
// data_id: restored without it (as the refusal said before data_id
// existed), a cluster member's directory drew another id, and the node,
// on its own directory, served nothing; its readiness must name the id
// to write back.
func TestADamagedIdentityIsRestoredWithItsDataID(t *testing.T) {
	dir, osfs, opts := startedMember(t)
	known := opts.Node.DataID

	require.NoError(t, os.WriteFile(filepath.Join(dir, identityFile), []byte("{"), 0o644))
	refused := checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, refused, `"data_id": ...`, "the refusal names every field to restore")
	require.NoError(t, os.WriteFile(filepath.Join(dir, identityFile), []byte(`{"node_id":"n1","cluster":true,"data_id":"`+known+`"}`), 0o644))
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	require.Equal(t, known, opts.Node.DataID)
}

// startedMember is a new data directory whose identity checkIdentity
// wrote for cluster member n1, with the options it filled in.
func startedMember(t *testing.T) (string, storage.FS, Options) {
	t.Helper()
	dir := t.TempDir()
	osfs, err := storage.NewOSFS(dir)
	require.NoError(t, err)
	opts := DefaultOptions(dir)
	opts.Node.NodeID, opts.Cluster.Enabled = "n1", true
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	return dir, osfs, opts
}

// A data_id longer than a heartbeat carries is refused at start as a
// damaged identity: accepted, the node panicked in its peer writer at
// its first heartbeat (wire asserts the bound on what it encodes), and
// again at every restart (peer review, reproduced on a cluster).
func TestADataIDTheWireCannotCarryIsRefused(t *testing.T) {
	dir, osfs, opts := startedMember(t)
	longest := strings.Repeat("d", wire.NodeIDBytesMax)
	write := func(dataID string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, identityFile), []byte(`{"node_id":"n1","cluster":true,"data_id":"`+dataID+`"}`), 0o644))
	}
	write(longest + "d")
	refused := checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler))
	require.ErrorContains(t, refused, "is damaged")
	require.ErrorContains(t, refused, "at most 64 bytes", "the refusal says what is wrong with it")

	write(longest)
	require.NoError(t, checkIdentity(&opts, osfs, slog.New(slog.DiscardHandler)))
	require.Equal(t, longest, opts.Node.DataID)
	_, err := wire.EncodeEnvelope(nil, msg.Envelope{From: "n1", To: "n2", Message: msg.Heartbeat{DataID: opts.Node.DataID}})
	require.NoError(t, err, "the longest data_id accepted travels in a heartbeat")
}
