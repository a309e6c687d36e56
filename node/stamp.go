package node

import (
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"narad/meta"
	"narad/storage"
)

// A partition directory's stamp names the creation of its topic that its
// records belong to (meta.TopicIdentity: the topic's incarnation and
// creation time). A topic deleted and created again under its name has
// the same directory names, and a node forgets at a restart which of its
// directories it was still to remove (a removal that failed, a crash
// between the metastore's commit of the delete and the removal): the
// stamp is what tells the old files from the new topic's, on disk.
//
// Invariants:
//   - a partition directory this node creates holds its stamp, durably,
//     before any record of the partition is written there (stampPartition
//     runs before the first open of a log; a move's staged copy is stamped
//     before it is installed);
//   - a log opens only over a directory whose stamp names the topic's
//     committed identity: one that names another is removed, durably,
//     first (it holds a deleted creation's records only);
//   - a directory without a stamp (written by a release before stamps, or
//     cut by a crash between its creation and its stamp) is taken as the
//     committed topic's and stamped; so is one whose stamp is damaged: a
//     doubt never deletes records. When that stamp cannot be written (a
//     full disk), such a directory that holds a log opens unstamped, and
//     the stamp is tried again a minute later. A removal never leaves
//     part of a directory, its stamp gone and its segments left, under
//     its name: storage.DeletePartition renames it aside first.

// stampFile is the stamp's name in a partition directory.
const stampFile = "topic.stamp"

// stampVersion starts every stamp's text.
const stampVersion = "narad-topic-stamp 1"

// stampCRC is the table of the stamp's checksum (CRC-32C).
var stampCRC = crc32.MakeTable(crc32.Castagnoli)

// encodeStamp is the content of a stamp: one line of the version, the
// incarnation, the creation time and a checksum of the three.
func encodeStamp(identity meta.TopicIdentity) []byte {
	body := fmt.Sprintf("%s %d %d", stampVersion, identity.Incarnation, identity.CreatedAtMs)
	return fmt.Appendf(nil, "%s %08x\n", body, crc32.Checksum([]byte(body), stampCRC))
}

// errStampDamaged is a stamp that does not parse or whose checksum fails.
var errStampDamaged = errors.New("node: damaged topic stamp")

// ParseStamp parses a stamp written by encodeStamp.
func ParseStamp(data []byte) (meta.TopicIdentity, error) {
	text, ok := strings.CutSuffix(string(data), "\n")
	fields := strings.Fields(text)
	if !ok || len(fields) != 5 || strings.Join(fields[:2], " ") != stampVersion {
		return meta.TopicIdentity{}, errStampDamaged
	}
	body := strings.Join(fields[:4], " ")
	sum, err := strconv.ParseUint(fields[4], 16, 32)
	if err != nil || uint32(sum) != crc32.Checksum([]byte(body), stampCRC) {
		return meta.TopicIdentity{}, errStampDamaged
	}
	incarnation, errIncarnation := strconv.ParseUint(fields[2], 10, 64)
	createdAtMs, errCreated := strconv.ParseInt(fields[3], 10, 64)
	if errIncarnation != nil || errCreated != nil {
		return meta.TopicIdentity{}, errStampDamaged
	}
	return meta.TopicIdentity{Incarnation: incarnation, CreatedAtMs: createdAtMs}, nil
}

// readStamp returns the identity a partition directory's stamp names;
// storage.ErrNotExist when it has none.
func readStamp(fs storage.FS, partitionDir string) (meta.TopicIdentity, error) {
	data, err := storage.ReadFile(fs, StampPath(partitionDir))
	if err != nil {
		return meta.TopicIdentity{}, err
	}
	return ParseStamp(data)
}

// StampPath is the stamp's path in a partition directory. The
// simulator's removal checker reads it (ParseStamp) to judge a removal of
// another creation's files.
func StampPath(partitionDir string) string { return partitionDir + "/" + stampFile }

// writeStamp writes dir's stamp, durably, creating dir if needed with
// ensure (a Store's EnsureDir, which skips the syncs of directories it
// made durable already).
func writeStamp(fs storage.FS, ensure func(dir string) error, dir string, identity meta.TopicIdentity) error {
	if err := ensure(dir); err != nil {
		return err
	}
	return storage.WriteFileAtomic(fs, StampPath(dir), encodeStamp(identity))
}

// stampPartition makes sure the partition's directory is stamped with its
// topic's identity before its log opens (see the invariants above): it
// removes the directory of another creation, and stamps a new directory,
// or one without a valid stamp. Checked once per partition: p.stamped
// stays set while the node serves the partition.
func (n *Node) stampPartition(t *topic, p *partition) error {
	if p.stamped || n.nowMs < p.stampRetryAtMs {
		return nil
	}
	identity, err := readStamp(n.fs, p.dir)
	switch {
	case err == nil && identity == t.identity:
		if err := n.syncFoundStamp(p); err != nil {
			return n.openUnstamped(p, err) // as a failed write of it
		}
		p.stamped = true
		return nil
	case err == nil:
		if err := n.removeOtherCreation(p, identity); err != nil {
			return err
		}
	case errors.Is(err, errStampDamaged):
		n.observer.Event("topic-stamp-damaged", p.dir+": stamped again as the committed topic's")
	case !errors.Is(err, storage.ErrNotExist):
		return err
	}
	if err := writeStamp(n.fs, n.store.EnsureDir, p.dir, t.identity); err != nil {
		return n.openUnstamped(p, err)
	}
	p.stamped = true
	return nil
}

// syncFoundStamp makes durable the stamp found in place in the directory
// of a log that opened unstamped (stampRetryAtMs set): a try that renamed
// it there and then failed at the sync of the directory leaves it in
// place, and that log's rounds sync the directory only when they create a
// segment (its first round did, before the stamp was there), so a crash
// could take it away after more records were acknowledged there. A stamp
// found anywhere else is durable, or the first round of the log opened
// next syncs its directory (recovery leaves it dirty) before any record.
func (n *Node) syncFoundStamp(p *partition) error {
	if p.stampRetryAtMs == 0 {
		return nil
	}
	return n.fs.SyncDir(p.dir)
}

// stampRetryMs is how long a partition that opened unstamped serves
// before its stamp is tried again (openUnstamped).
const stampRetryMs = 60_000

// openUnstamped decides what a failed stamp write of a directory without
// a valid stamp means for its open. On a full disk, a directory that
// holds a log already is taken as the committed topic's in any case (the
// invariants above), so it opens unstamped and its stamp is tried again
// stampRetryMs later: refusing would keep retention from freeing the very
// space the stamp needs. A new directory gets no record before its stamp,
// and any other failure refuses the open.
func (n *Node) openUnstamped(p *partition, stampErr error) error {
	if !errors.Is(stampErr, storage.ErrNoSpace) {
		return stampErr
	}
	holdsLog, err := storage.HoldsSegments(n.fs, p.dir)
	if err != nil || !holdsLog {
		return stampErr
	}
	p.stampRetryAtMs = n.nowMs + stampRetryMs
	n.observer.Event("topic-stamp-unwritten", fmt.Sprintf("%s: %v (opened unstamped; tried again in %d s)", p.dir, stampErr, stampRetryMs/1000))
	return nil
}

// removeOtherCreation removes, durably, a partition directory whose stamp
// names another creation of the topic: a delete's removal that failed, or
// that a crash cut, and that the node forgot at its restart.
func (n *Node) removeOtherCreation(p *partition, stamped meta.TopicIdentity) error {
	if err := n.store.Close(p.dir); err != nil && !isClosed(err) { // closes an open log, forgets a kept one
		return err
	}
	if err := storage.DeletePartition(n.fs, p.dir); err != nil {
		return err
	}
	n.observer.Event("stale-partition-removed", fmt.Sprintf("%s: its records were of the topic's creation %d, deleted since",
		p.dir, stamped.Incarnation))
	return nil
}

// stampStaged stamps a move's staged copy with the identity of the topic
// its session copies, so that the copy installed carries it. A session
// that began before its topic was known here has none to write: the
// copy's first open stamps it.
func (n *Node) stampStaged(s *moveSession) error {
	if s.topic == (meta.TopicIdentity{}) {
		return nil
	}
	return writeStamp(n.fs, n.store.EnsureDir, s.stagedDir, s.topic)
}
