package node

import (
	"errors"
	"fmt"

	"narad/invariant"
	"narad/meta"
	"narad/msg"
	"narad/storage"
)

// Ready is what the node asks its driver to do, in this order: run the
// Syncs, then deliver Messages and Replies, then call Advance.
// ProduceForwards and EarlyReplies may leave at any time from the Ready's
// taking on.
type Ready struct {
	Syncs    []Sync
	Messages []msg.Envelope
	Replies  []msg.Reply
	// ProduceForwards are the produce parts this Ready forwards to their
	// owners (ForwardRequest envelopes). None depends on the Ready's
	// Syncs: the records they carry are written by their owners, and what
	// this node wrote is answered to its client only once durable here. A
	// driver may send them before it persists (the host does, so a part
	// does not wait for this node's fsyncs on its way), or with Messages;
	// they may leave even if the persist then fails (the client, answered
	// 503, sends again: a duplicate, never a loss).
	ProduceForwards []msg.Envelope
	// EarlyReplies are client replies that depend on none of the Ready's
	// Syncs: produce requests sent in whole or in part to other owners,
	// answered once every part was durable at its owner (this node's own
	// parts at an earlier Advance). A driver may deliver them before it
	// persists (the host does), or with Replies.
	EarlyReplies []msg.Reply
	// Jobs are long disk work (a move's install and verification) for the
	// driver to run off the loop once this Ready was handled: Job.Run on
	// any goroutine, then JobDone on the loop. A job of a node that
	// crashed meanwhile is dropped.
	Jobs []Job
	// internal are the replies to this node's own parts of split
	// requests: Advance hands them to their continuations.
	internal []msg.Reply
	// late are answers a fault site holds back: Advance puts them off to
	// a later Ready (faultsites.go).
	late []lateMessage
}

// Sync is one partition's sync round: its new records (data) and/or its
// committed consumer offset, prepared when the Ready was taken. Syncs of
// different partitions are independent; the driver may run them in
// parallel, and off the loop while it keeps feeding the node (see the
// package doc).
type Sync struct {
	// Dir is the partition directory, for traces and logs.
	Dir string
	log *storage.Log
	// round is the log's prepared sync round (nil for the metastore's).
	round *storage.SyncRound
	// partition is the partition whose round this is (nil for the
	// metastore's).
	partition *partition
	// fs and cursors: the fan-out cursor files the round writes, after
	// its fsyncs (each replaced atomically; fanout_cursor.go).
	fs      storage.FS
	cursors []cursorWrite
	// refused is set by the run when the disk had no room for the
	// cursor files (nil when the round writes none).
	refused *cursorsRefused
	// meta and metaReady, when set, make this the metastore's persist
	// step (one bbolt transaction) instead of a partition's round.
	meta      *meta.Meta
	metaReady *meta.Ready
}

// Run performs the sync round. It touches only this partition's files
// (or only the metastore's file) and state the round owns.
func (s Sync) Run() error {
	if s.meta != nil {
		return s.meta.Persist(*s.metaReady)
	}
	if err := s.round.Run(); err != nil {
		return err
	}
	return s.refused.refusedForSpace(writeCursorFiles(s.fs, s.cursors))
}

// Metastore reports whether this is the metastore's persist (one bbolt
// transaction) rather than a partition's round.
func (s Sync) Metastore() bool { return s.meta != nil }

// StagingMoves reports whether a move into this node is building its
// staged copy, or a finalize job of an ended one still runs: a copy is
// written without fsyncs until its finalize syncs it, so a file-system
// sync (RunTogether's, with a GroupSyncer that syncs the whole file
// system) would wait for all of it. A driver runs such Readys' Syncs each
// on its own. Ask between Ready and Advance on the goroutine that drives
// the node.
func (n *Node) StagingMoves() bool { return len(n.moves) > 0 || len(n.jobsOrphaned) > 0 }

// DataRounds is how many of syncs make appended records durable: what
// running them together saves fsyncs on.
func DataRounds(syncs []Sync) int {
	rounds := 0
	for _, s := range syncs {
		if s.Data() {
			rounds++
		}
	}
	return rounds
}

// RunTogether runs partition rounds of one node (never the metastore's
// persist) as Run of each would, with one group.SyncGroup for the data and
// directories of them all (storage.RunTogether), then the fan-out cursor
// files of every round, replaced together. group must be the file system
// of the node's logs. It fails as a whole, like a failed Run: the node
// instance is finished.
func RunTogether(group storage.GroupSyncer, syncs []Sync) error {
	rounds := make([]*storage.SyncRound, len(syncs))
	for i, s := range syncs {
		invariant.Check(s.meta == nil, "node: RunTogether given the metastore's persist")
		rounds[i] = s.round
	}
	if err := storage.RunTogether(group, rounds); err != nil {
		return err
	}
	var cursors []storage.NamedData
	var fs storage.FS
	for _, s := range syncs {
		for _, write := range s.cursors {
			cursors = append(cursors, storage.NamedData{Name: write.path, Data: write.data})
			fs = s.fs
		}
	}
	if len(cursors) == 0 {
		return nil
	}
	written := storage.WriteFilesAtomicTogether(fs, group, cursors, nil)
	var err error
	for _, s := range syncs { // the files of every round were refused together: each keeps its earlier ones
		if len(s.cursors) > 0 {
			err = errors.Join(err, s.refused.refusedForSpace(written))
		}
	}
	if err != nil {
		return fmt.Errorf("fan-out cursors of %d partitions: %w", len(syncs), written)
	}
	return nil
}

// CursorWrites is how many fan-out cursor files the round writes.
func (s Sync) CursorWrites() int { return len(s.cursors) }

// Data reports whether the round makes appended records durable.
func (s Sync) Data() bool { return s.round.Data() }

// Records is how many appended records the round makes durable.
func (s Sync) Records() int { return s.round.Records() }

// DurableHWM is the HWM the round makes durable (and visible at Advance);
// meaningful when Data reports true.
func (s Sync) DurableHWM() uint64 { return s.round.HWM() }

// DurableCommitted is the committed offset the round persists; meaningful
// when CommittedSync reports true.
func (s Sync) DurableCommitted() uint64 { return s.round.CommittedOffset() }

// Metastore reports whether the Ready carries the metastore's persist: the
// driver must not feed the node while such a Ready is in flight.
func (rd Ready) Metastore() bool {
	for _, s := range rd.Syncs {
		if s.meta != nil {
			return true
		}
	}
	return false
}

// CommittedSync reports whether the round persists the committed consumer
// offset.
func (s Sync) CommittedSync() bool { return s.round.Committed() }

// Job is long disk work the node hands to its driver (Ready.Jobs).
type Job struct {
	pending *movePending
}

// Run does the work. It touches only the job's own files (a staged copy
// and the partition directory it is installed as), so it may run on any
// goroutine while the loop goes on; its failure is the move's, never the
// node's.
func (j Job) Run() { j.pending.job.run() }

// Dir names the directory the job works on, for traces and logs.
func (j Job) Dir() string { return j.pending.job.finalDir }

// JobDone tells the node a job of an earlier Ready ran. Call it on the
// loop, like every input.
func (n *Node) JobDone(j Job) { n.jobDone(j.pending.session, j.pending.job) }
