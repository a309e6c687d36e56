package storage

import (
	"fmt"
	"slices"
)

// Corruption is what media damage took from a log below its HWM: the
// offsets recovery skipped as corrupt, which Read answers with ErrCorrupt
// forever. A move carries it from the source to the destination, whose
// verification accepts a copy with exactly this damage (checkRecovered):
// the records are lost already, there is no other copy to take them from.
type Corruption struct {
	// Count is the exact number of corrupt offsets.
	Count uint64
	// Offsets lists the first of them in increasing order, at most
	// LogConfig.CorruptOffsetsReportedMax; len(Offsets) <= Count.
	Offsets []uint64
}

// Corruption reports the corrupt offsets of the retained segments (those
// a move copies), as recovery found them: exact count, first offsets up to
// the log's CorruptOffsetsReportedMax. Retention of a damaged segment
// takes its offsets out of it.
func (l *Log) Corruption() Corruption {
	var c Corruption
	for i, s := range l.segments {
		if s.corruptCount == 0 {
			continue
		}
		c.Count += s.corruptCount
		end := s.indexedEnd()
		if i+1 < len(l.segments) {
			end = l.segments[i+1].base
		}
		c.Offsets = s.appendCorrupt(c.Offsets, end, l.cfg.CorruptOffsetsReportedMax)
	}
	return c
}

// appendCorrupt appends to list the corrupt offsets of s below end (the
// next segment's base, which closes a sealed segment's gap), until list
// holds limit offsets.
func (s *segment) appendCorrupt(list []uint64, end uint64, limit int) []uint64 {
	assert(!s.paged, "corrupt offsets of paged segment %d", s.base) // one with corrupt offsets is never paged out
	for offset := s.base; offset < end && len(list) < limit; offset++ {
		index := offset - s.base
		if index >= uint64(len(s.positions)) || s.positions[index] == positionCorrupt {
			list = append(list, offset)
		}
	}
	return list
}

// corruptionOf is the corruption a recovery reported.
func corruptionOf(recovery Recovery) Corruption {
	return Corruption{Count: recovery.CorruptCount, Offsets: recovery.CorruptOffsets}
}

// checkCorruption accepts a recovered copy's corruption only if it is
// exactly allowed (the source's): the same count, every listed offset
// below the copy's HWM, and the same offsets as far as both lists go (the
// two logs may bound their lists differently). Any other corrupt offset
// was damaged in the copy itself, which must then be copied again.
func checkCorruption(recovery Recovery, allowed Corruption) error {
	found := corruptionOf(recovery)
	if found.Count == 0 {
		return nil
	}
	listed := min(len(found.Offsets), len(allowed.Offsets))
	below := len(found.Offsets) == 0 || found.Offsets[len(found.Offsets)-1] < recovery.HWM
	if found.Count == allowed.Count && below && slices.Equal(found.Offsets[:listed], allowed.Offsets[:listed]) {
		return nil
	}
	return fmt.Errorf("%w: %w: %d corrupt offsets, first %v; the source has %d, first %v",
		ErrStagedBehind, ErrCorrupt, found.Count, found.Offsets, allowed.Count, allowed.Offsets)
}
