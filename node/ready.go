package node

import (
	"narad/meta"
	"narad/storage"
)

// Ready is what the node asks its driver to do, in this order: run the
// Syncs, then deliver Messages and Replies, then call Advance.
type Ready struct {
	Syncs    []Sync
	Messages []Envelope
	Replies  []Reply
	// internal are the replies to this node's own parts of split
	// requests: Advance hands them to their continuations.
	internal []Reply
}

// Sync is one partition's sync round: its new records (data) and/or its
// committed consumer offset. Syncs of different partitions are
// independent; the driver may run them in parallel.
type Sync struct {
	// Dir is the partition directory, for traces and logs.
	Dir       string
	log       *storage.Log
	data      bool
	committed bool
	// partition is the partition whose round this is (nil for the
	// metastore's).
	partition *partition
	// move, when set, makes this a move's finalize job instead.
	move *movePending
	// meta and metaReady, when set, make this the metastore's persist
	// step (one bbolt transaction) instead of a partition's round.
	meta      *meta.Meta
	metaReady *meta.Ready
}

// Run performs the sync round. It touches only this partition's files
// (or only the metastore's file).
func (s Sync) Run() error {
	if s.meta != nil {
		return s.meta.Persist(*s.metaReady)
	}
	if s.move != nil {
		s.move.job.run() // its failure is the move's, not the node's
		return nil
	}
	if s.data {
		if err := s.log.Sync(); err != nil {
			return err
		}
	}
	if s.committed {
		return s.log.SyncCommitted()
	}
	return nil
}

// Data reports whether the round makes appended records durable.
func (s Sync) Data() bool { return s.data }

// Envelope carries a message between nodes. Message types are added by the
// cluster; a single node sends none.
type Envelope struct {
	From, To string
	Message  any
}

// CommittedSync reports whether the round persists the committed consumer
// offset.
func (s Sync) CommittedSync() bool { return s.committed }
