package storage

import "slices"

// RetentionResult reports what one ApplyRetention call deleted.
type RetentionResult struct {
	SegmentsDeleted int
	// RecordsDeleted counts the offsets of the deleted segments (corrupt
	// ones included).
	RecordsDeleted uint64
	BytesDeleted   int64
	// UnackedDropped counts offsets below the new Oldest that the
	// committed consumer offset had not reached: records deleted before
	// they were acknowledged (a recorded-loss case).
	UnackedDropped uint64
}

// ApplyRetention deletes, oldest first, the sealed segments whose newest
// record is older than nowMs-retentionMs. It never deletes the active
// segment, nor a segment holding an offset at or above the HWM, and stops
// at the first segment it keeps so the log stays contiguous. Oldest moves
// up, and the committed offset with it if it fell behind (reported as
// UnackedDropped). retentionMs 0 means keep forever. Each removal is made
// durable before the next, so a crash cannot leave a hole in the middle.
// On an I/O error the log is failed. While a sync round is in flight it
// deletes nothing (the next call does).
func (l *Log) ApplyRetention(nowMs, retentionMs int64) (RetentionResult, error) {
	assert(retentionMs >= 0, "negative retention %d ms for %s", retentionMs, l.dir)
	if err := l.usable(); err != nil {
		return RetentionResult{}, err
	}
	var result RetentionResult
	if retentionMs == 0 || l.syncing != nil {
		return result, nil
	}
	for l.expired(nowMs - retentionMs) {
		if err := l.deleteOldestSegment(&result); err != nil {
			return result, l.fail(err)
		}
	}
	l.advanceCommitted(&result)
	if invariantsEnabled {
		l.checkInvariants()
	}
	return result, nil
}

// expired reports whether the oldest segment may be deleted: it is sealed,
// wholly below the HWM, and its newest record is older than cutoffMs.
func (l *Log) expired(cutoffMs int64) bool {
	if len(l.segments) < 2 {
		return false
	}
	oldest, following := l.segments[0], l.segments[1]
	return following.base <= l.hwm && oldest.newestTimeMs < cutoffMs
}

// deleteOldestSegment removes the oldest segment file durably and drops
// it from the index.
func (l *Log) deleteOldestSegment(result *RetentionResult) error {
	oldest, following := l.segments[0], l.segments[1]
	assert(oldest.syncedBytes == oldest.sizeBytes, "deleting segment %d with %d of %d bytes unsynced",
		oldest.base, oldest.sizeBytes-oldest.syncedBytes, oldest.sizeBytes)
	if oldest.keptOpen {
		l.sealedOpen = slices.DeleteFunc(l.sealedOpen, func(s *segment) bool { return s == oldest })
		oldest.keptOpen = false
	}
	if oldest.file != nil {
		if err := oldest.file.Close(); err != nil {
			return err
		}
		oldest.file = nil
	}
	removeSegmentIndex(l.fs, l.dir, oldest.base)
	if err := l.fs.Remove(segmentPath(l.dir, oldest.base)); err != nil {
		return err
	}
	if err := l.fs.SyncDir(l.dir); err != nil {
		return err
	}
	l.segments = l.segments[1:]
	l.unsyncedFrom = max(l.unsyncedFrom-1, 0)
	l.indexedThrough = max(l.indexedThrough-1, 0)
	result.SegmentsDeleted++
	result.RecordsDeleted += following.base - oldest.base
	result.BytesDeleted += oldest.sizeBytes
	return nil
}

// advanceCommitted raises the committed offset to Oldest if retention
// passed it.
func (l *Log) advanceCommitted(result *RetentionResult) {
	if l.committed >= l.Oldest() {
		return
	}
	result.UnackedDropped = l.Oldest() - l.committed
	l.committed = l.Oldest()
	assert(l.committed <= l.hwm, "committed %d raised above hwm %d by retention", l.committed, l.hwm)
}
