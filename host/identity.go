package host

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"narad/storage"
	"narad/wire"
)

// identityFile, in the data directory, names the node the directory
// belongs to and whether it is a single node or a member of a cluster,
// as written at the directory's first start (docs/operations.md#data-directory).
// A directory's partitions, its metastore replica and its raft id belong
// to that node: started under another id, the node owned none of them
// and waited for good on a node that no longer exists; a single node's
// directory started as a member of a new cluster made a second,
// diverging metastore. Both are refused at start, naming both sides.
// The identity also holds the directory's own id (DataID), random, so
// that the cluster can tell the same node id started on another
// directory, which holds none of the member's records (node/datadir.go).
const identityFile = "identity.json"

// dataIdentity is the content of identityFile.
type dataIdentity struct {
	NodeID string `json:"node_id"`
	// Cluster is false for a single node (its own cluster, raft id 1).
	Cluster bool `json:"cluster"`
	// DataID names this directory, drawn at random when its identity is
	// first written (or added to one written by a release without it);
	// never changed after. The node's heartbeats carry it, so it is at
	// most wire.NodeIDBytesMax bytes (readIdentity refuses a longer one).
	DataID string `json:"data_id,omitempty"`
}

// same reports whether two identities name the same node and mode.
func (i dataIdentity) same(other dataIdentity) bool {
	return i.NodeID == other.NodeID && i.Cluster == other.Cluster
}

func (i dataIdentity) describe() string {
	if i.Cluster {
		return fmt.Sprintf("node %q of a cluster", i.NodeID)
	}
	return fmt.Sprintf("the single node %q", i.NodeID)
}

// resolveIdentity compares the options with the data directory's
// identity, writing nothing: it returns the identity the directory keeps
// and whether it must be written (a new directory, or one written by a
// release without a data id, which it draws). A single node whose id was
// not configured (the host name stands in) takes the directory's id: a
// host renamed, or a container created again, keeps its data. Any other
// difference is an error. It gives opts the node id and data id.
func resolveIdentity(opts *Options, dir storage.FS, logger *slog.Logger) (dataIdentity, bool, error) {
	want := dataIdentity{NodeID: opts.Node.NodeID, Cluster: opts.Cluster.Enabled}
	stored, found, err := readIdentity(dir)
	switch {
	case err != nil:
		return dataIdentity{}, false, err
	case !found:
		return keepIdentity(opts, want)
	case stored.same(want):
		return keepIdentity(opts, stored)
	case !stored.Cluster && !want.Cluster && opts.NodeIDFromHostname:
		logger.Info("the data directory names this node; the host name differs", "node_id", stored.NodeID, "host_name", want.NodeID)
		opts.Node.NodeID = stored.NodeID
		return keepIdentity(opts, stored)
	}
	return dataIdentity{}, false, fmt.Errorf("data directory %s belongs to %s, and this process is configured as %s: "+
		"start it with that identity (cluster.node_id, and cluster settings only if it was a member of one), or use another data directory",
		opts.DataDir, stored.describe(), want.describe())
}

// keepIdentity gives the node the directory's id, drawing one if it has
// none (a new directory, or one written by a release without it): then
// the identity must be written.
func keepIdentity(opts *Options, identity dataIdentity) (dataIdentity, bool, error) {
	drawn := identity.DataID == ""
	if drawn {
		identity.DataID = rand.Text()[:dataIDChars]
	}
	opts.Node.DataID = identity.DataID
	return identity, drawn, nil
}

// dataIDChars is the length of a drawn DataID: 16 characters of base32,
// 80 random bits.
const dataIDChars = 16

func readIdentity(dir storage.FS) (dataIdentity, bool, error) {
	data, err := storage.ReadFile(dir, identityFile)
	if errors.Is(err, storage.ErrNotExist) {
		return dataIdentity{}, false, nil
	}
	if err != nil {
		return dataIdentity{}, false, fmt.Errorf("read the data directory's identity: %w", err)
	}
	var identity dataIdentity
	if err := json.Unmarshal(data, &identity); err != nil || identity.NodeID == "" || len(identity.DataID) > wire.NodeIDBytesMax {
		// A data_id longer than the wire carries (restored by hand, say)
		// is damaged too: accepted, it ended the process at the node's
		// first heartbeat, when the peer writer's encoder asserted the
		// bound.
		return dataIdentity{}, false, fmt.Errorf("the data directory's identity %s is damaged (%q): restore it, naming this node and this directory as {\"node_id\": ..., \"cluster\": ..., \"data_id\": ...} "+
			"(a cluster member's data_id is the one its cluster knows it by, at most %d bytes: started without it, the node draws another, serves nothing, and its /readyz names the one to write back)",
			identityFile, data, wire.NodeIDBytesMax)
	}
	return identity, true, nil
}

func writeIdentity(dir storage.FS, identity dataIdentity) error {
	data, err := json.Marshal(identity)
	if err != nil {
		return err
	}
	if err := storage.WriteFileAtomic(dir, identityFile, append(data, '\n')); err != nil {
		return fmt.Errorf("write the data directory's identity: %w", err)
	}
	return nil
}
