package node

import (
	"errors"
	"fmt"

	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// A node id started on another data directory than the one it ran on (an
// operator's mistake, or a disk replaced under the same id) holds none of
// its partitions' records and none of its metastore replica. Its raft id
// may still be a voter, and a leader that knows nothing of what the old
// replica persisted catches the new one up; served from the new
// directory, its partitions would start again at offset 0 and take
// produces at offsets that hold acknowledged records on the other disk.
//
// The metastore keeps the data directory of a member's first beat that
// named one (meta.Member.DataID) and lets no beat from another directory
// count. A node whose member it knows by another directory serves
// nothing: readiness says why, every partition log stays closed (nothing
// is read, written or created under its directory), and it says so in
// its log, once per retiredBeatWarnEveryMs.

// otherDataDirError is why this node serves nothing because it runs on
// another data directory than its member's, or nil. A nil answer is kept
// until the replica applies something (Node.dataDirClear): the ticks, the
// fan-out's opens and the moves ask it many times in between.
func (n *Node) otherDataDirError() error {
	if n.cfg.DataID == "" {
		return nil
	}
	applied := n.meta.AppliedIndex()
	if clear, ok := n.dataDirClear.lookup(applied); ok && clear {
		return nil
	}
	err := n.otherDataDirOf(n.meta.State().Member(n.cfg.NodeID))
	n.dataDirClear.keep(applied, err == nil)
	return err
}

// otherDataDirOf is otherDataDirError given this node's member.
func (n *Node) otherDataDirOf(member meta.Member, known bool) error {
	if n.cfg.DataID == "" || !known || member.DataID == "" || member.DataID == n.cfg.DataID {
		return nil
	}
	return msg.Unavailable("node %s runs on data directory %s, but the cluster's member %s is the one on data directory %s, "+
		"which holds its partitions and what it acknowledged: stop this process and start %s on its own data directory "+
		"(if this is that directory, its identity.json lost its data_id: write %q back there; "+
		"if that directory is lost, so are the records only it held, and %s cannot come back under its id)",
		n.cfg.NodeID, n.cfg.DataID, n.cfg.NodeID, member.DataID, n.cfg.NodeID, member.DataID, n.cfg.NodeID)
}

// logLostError is why this node serves nothing because its metastore
// replica lacks entries its raft id had persisted (meta.Meta.LogLost),
// or nil: the same mistake, seen before the replica knows its member.
func (n *Node) logLostError() error {
	commit, lost := n.meta.LogLost()
	if !lost || n.meta.AppliedIndex() >= commit {
		return nil
	}
	return msg.Unavailable("node %s's metastore replica lacks entries it had persisted (the leader commits up to index %d, past its log): "+
		"it runs on another data directory than its own, or one that lost its files; stop this process and start %s on its own data directory",
		n.cfg.NodeID, commit, n.cfg.NodeID)
}

// noteOtherDataDir says in the log, at most once per
// retiredBeatWarnEveryMs, that this node serves nothing because it runs
// on another data directory than its member's.
func (n *Node) noteOtherDataDir() {
	err := errors.Join(n.logLostError(), n.otherDataDirError())
	if err == nil || !n.otherDataDirTold.due(n.cfg.NodeID, n.nowMs, retiredBeatWarnEveryMs) {
		return
	}
	n.observer.Event("other-data-directory", err.Error())
}

// CheckDataWithoutMetastore refuses a data directory whose topics/ holds
// partition data, for a start that would create its metastore: the new
// metastore would know none of it (ErrDataWithoutMetastore, as New
// refuses a metastore that never saw a member: acceptStart). The host calls it before
// it creates the metastore, so that the refused start leaves the
// directory as it was, for the operator to restore the metastore into:
// it wrote a new one there, and the directory's identity.
func CheckDataWithoutMetastore(fs storage.FS) error {
	names, err := fs.List(topicsDir)
	if errors.Is(err, storage.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list topics: %w", err)
	}
	if len(names) > 0 {
		return dataWithoutMetastore(len(names))
	}
	return nil
}

// acceptStart refuses a start whose topics/ holds partition data beside a
// metastore that never saw a member (ErrDataWithoutMetastore: the data
// belongs to a metastore that was lost or moved, and sweeping it as
// orphans would be silent data loss), and otherwise stores the start's
// incarnation: a refused start changes nothing on disk.
func acceptStart(fs storage.FS, state *meta.State, incarnation uint64) error {
	if len(state.Members()) == 0 {
		if err := CheckDataWithoutMetastore(fs); err != nil {
			return err
		}
	}
	return storeIncarnation(fs, incarnation)
}

func dataWithoutMetastore(topics int) error {
	return fmt.Errorf("%w: %d topic directories but a new metastore; restore the metastore or move the data away",
		ErrDataWithoutMetastore, topics)
}
