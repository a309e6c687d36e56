package storage

import (
	"errors"
	"fmt"
)

// Bounds of LogConfig. The upper limits keep every byte position inside a
// segment representable as a uint32 (the in-memory index), even for a
// segment that overshoots SegmentBytes by one maximal frame.
const (
	// segmentBytesMin is the smallest segment size
	// (docs/operations.md#settings).
	segmentBytesMin = 4 << 10
	// segmentBytesLimit is the largest segment size accepted.
	segmentBytesLimit = 1 << 30
	// sealedFilesOpenMax bounds the sealed segments of one log whose files
	// stay open (the least recently read are closed, and reopened for a
	// read): with its active segment and its hwm file, an open log holds
	// at most this plus two descriptors, however many segments it keeps.
	sealedFilesOpenMax = 2
	// LogFilesOpenMax bounds the files an open log holds open: its hwm
	// file, its active segment and sealedFilesOpenMax sealed ones (a
	// consumer offset file being written adds one for a moment).
	LogFilesOpenMax = sealedFilesOpenMax + 2
	// stagedFilesOpenMax bounds the staged segments of a move's copy whose
	// files stay open: the newest, which the next chunks and a catch-up
	// pass extend.
	stagedFilesOpenMax = 2
	// stagedSegmentBytesMax bounds a staged segment a move copies: a log
	// rolls a segment once a frame took it past its size, so none holds
	// more than segmentBytesLimit plus one frame of frameBytesLimit.
	stagedSegmentBytesMax = segmentBytesLimit + frameBytesLimit
	// recordBytesLimit is the largest RecordBytesMax accepted.
	recordBytesLimit = 64 << 20
	// frameBytesLimit is the largest FrameBytesMax accepted.
	frameBytesLimit = recordBytesLimit + envelopeOverheadBytes + frameHeaderBytes
	// chunkBytesLimit is the largest ChunkBytesMax accepted.
	chunkBytesLimit = 64 << 20
	// writeBufferBytesLimit is the largest WriteBufferBytesMax accepted.
	writeBufferBytesLimit = 64 << 20
	// corruptOffsetsReportedLimit is the largest CorruptOffsetsReportedMax.
	corruptOffsetsReportedLimit = 1 << 20
	// readFileBytesMax bounds ReadFile, which loads a whole file in memory.
	readFileBytesMax = 64 << 20
	// hwmLagBytesLimit and hwmLagMsLimit are the largest HWMLagBytesMax
	// and HWMLagMsMax accepted.
	hwmLagBytesLimit = 1 << 30
	hwmLagMsLimit    = 60 * 60 * 1000
)

// LogConfig holds every limit of a partition log. Build one with
// DefaultLogConfig and change fields explicitly; OpenLog refuses a config
// that fails Validate.
type LogConfig struct {
	// SegmentBytes: the active segment rolls when the next frame would take
	// it past this size (a single frame larger than it gets a segment of its
	// own). Default 64 MiB, at least 4 KiB, at most 1 GiB.
	SegmentBytes int64
	// RecordBytesMax bounds len(Key)+len(Payload) of one record; Append
	// rejects more with ErrRecordTooLarge. Default 1 MiB.
	RecordBytesMax int
	// FrameBytesMax bounds an encoded frame, header included; decoders check
	// a frame's declared length against it before reading the frame. Must
	// be at least RecordBytesMax plus the frame and envelope overheads.
	FrameBytesMax int
	// ChunkBytesMax bounds one ReadChunk or WriteChunk of a move. Default
	// 1 MiB.
	ChunkBytesMax int
	// CorruptOffsetsReportedMax bounds the list Recovery.CorruptOffsets; the
	// count Recovery.CorruptCount is always exact. Default 64.
	CorruptOffsetsReportedMax int
	// WriteBufferBytesMax bounds the frames Append holds in memory before it
	// writes them to the active segment file (Sync always writes them
	// first). Batching writes this way is what lets a sync round of many
	// small records cost few system calls. Default 1 MiB.
	WriteBufferBytesMax int
	// HWMLagBytesMax and HWMLagMsMax bound how far the persisted high
	// watermark (the hwm file) may lag behind the durable log (doc.go, "The
	// sync round"): a round writes the hwm file once the frames appended
	// since the last write reach HWMLagBytesMax bytes, or the newest
	// record's time is HWMLagMsMax past the first of them, or a segment was
	// sealed; otherwise the round costs one data fsync only. They bound
	// the corruption window: acknowledged records above the persisted HWM
	// are trusted only as a contiguous run of valid frames, so media
	// damage to one of them also drops the records after it. 0 writes the
	// hwm file every round. Defaults 4 MiB and 1000 ms; at most 1 GiB and
	// one hour.
	HWMLagBytesMax int64
	HWMLagMsMax    int64
	// SegmentIndexFiles: each sealed segment that the persisted HWM covers
	// gets an index file, and recovery takes the segment's index from it
	// instead of reading the segment (doc.go, "Segment index files").
	// Default on; the simulator turns it off in some runs so that scans
	// of sealed segments stay under test.
	SegmentIndexFiles bool
	// ResidentPositionsBytesMax bounds the positions (4 bytes a record)
	// of the sealed segments a log keeps in memory once their index files
	// hold them: those read most recently, at least
	// residentSealedSegmentsMin of them (doc.go, "Segment index files").
	// Default 8 MiB; at most 1 GiB; the simulator draws small ones so
	// that paging stays under test.
	ResidentPositionsBytesMax int
}

// defaultRecordBytesMax fits the API's largest record: a 1 MiB payload
// plus a key of up to 4 KiB.
const defaultRecordBytesMax = 1<<20 + 4<<10

// DefaultLogConfig returns the production limits.
func DefaultLogConfig() LogConfig {
	return LogConfig{
		SegmentBytes:              64 << 20,
		RecordBytesMax:            defaultRecordBytesMax,
		FrameBytesMax:             defaultRecordBytesMax + envelopeOverheadBytes + frameHeaderBytes,
		ChunkBytesMax:             1 << 20,
		CorruptOffsetsReportedMax: 64,
		WriteBufferBytesMax:       1 << 20,
		HWMLagBytesMax:            4 << 20,
		HWMLagMsMax:               1000,
		SegmentIndexFiles:         true,
		ResidentPositionsBytesMax: 8 << 20,
	}
}

// Validate reports every problem of the config at once, each wrapping
// ErrInvalidConfig.
func (c LogConfig) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...))
		}
	}
	check(c.SegmentBytes >= segmentBytesMin && c.SegmentBytes <= segmentBytesLimit,
		"SegmentBytes %d not in [%d, %d]", c.SegmentBytes, segmentBytesMin, segmentBytesLimit)
	check(c.RecordBytesMax >= 1 && c.RecordBytesMax <= recordBytesLimit,
		"RecordBytesMax %d not in [1, %d]", c.RecordBytesMax, recordBytesLimit)
	check(c.FrameBytesMax >= c.RecordBytesMax+envelopeOverheadBytes+frameHeaderBytes,
		"FrameBytesMax %d below RecordBytesMax %d + overhead %d", c.FrameBytesMax, c.RecordBytesMax, envelopeOverheadBytes+frameHeaderBytes)
	check(c.FrameBytesMax <= frameBytesLimit, "FrameBytesMax %d above %d", c.FrameBytesMax, frameBytesLimit)
	check(c.ChunkBytesMax >= 1 && c.ChunkBytesMax <= chunkBytesLimit,
		"ChunkBytesMax %d not in [1, %d]", c.ChunkBytesMax, chunkBytesLimit)
	check(c.CorruptOffsetsReportedMax >= 0 && c.CorruptOffsetsReportedMax <= corruptOffsetsReportedLimit,
		"CorruptOffsetsReportedMax %d not in [0, %d]", c.CorruptOffsetsReportedMax, corruptOffsetsReportedLimit)
	check(c.WriteBufferBytesMax >= 1 && c.WriteBufferBytesMax <= writeBufferBytesLimit,
		"WriteBufferBytesMax %d not in [1, %d]", c.WriteBufferBytesMax, writeBufferBytesLimit)
	check(c.HWMLagBytesMax >= 0 && c.HWMLagBytesMax <= hwmLagBytesLimit,
		"HWMLagBytesMax %d not in [0, %d]", c.HWMLagBytesMax, hwmLagBytesLimit)
	check(c.HWMLagMsMax >= 0 && c.HWMLagMsMax <= hwmLagMsLimit,
		"HWMLagMsMax %d not in [0, %d]", c.HWMLagMsMax, hwmLagMsLimit)
	check(c.ResidentPositionsBytesMax >= 0 && c.ResidentPositionsBytesMax <= residentPositionsBytesLimit,
		"ResidentPositionsBytesMax %d not in [0, %d]", c.ResidentPositionsBytesMax, residentPositionsBytesLimit)
	return errors.Join(problems...)
}
