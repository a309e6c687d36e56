package storage

import "errors"

// Expected conditions of the partition log. Callers test them with
// errors.Is; the returned errors may wrap them with detail.
var (
	// ErrBeyondHWM: the offset is at or above the high watermark, so it is
	// not (yet) visible.
	ErrBeyondHWM = errors.New("storage: offset at or beyond the high watermark")
	// ErrAgedOut: the offset is below the oldest retained offset.
	ErrAgedOut = errors.New("storage: offset aged out of retention")
	// ErrCorrupt: the bytes of a record failed verification (CRC, header or
	// envelope), or recovery skipped the offset as corrupt.
	ErrCorrupt = errors.New("storage: corrupt record")
	// ErrRecordTooLarge: key plus payload exceed LogConfig.RecordBytesMax.
	ErrRecordTooLarge = errors.New("storage: record too large")
	// ErrSegmentNotCreated: an append needed a new segment and its file
	// could not be created (descriptors or inodes ran out). Nothing was
	// written or lost; the log stays usable and the next append that
	// needs the segment tries again.
	ErrSegmentNotCreated = errors.New("storage: the next segment could not be created")
	// ErrFrameTruncated: the buffer ends before the frame does.
	ErrFrameTruncated = errors.New("storage: frame truncated")
	// ErrFrameCorrupt: the frame header or its CRC is wrong.
	ErrFrameCorrupt = errors.New("storage: frame corrupt")
	// ErrLogFailed wraps the first write-path I/O error of a log. The log is
	// then fail-stop: every later call returns the same error and the node
	// must reopen the log from disk.
	ErrLogFailed = errors.New("storage: log failed")
	// ErrChunkPosition: a chunk of a move does not start where the staged
	// segment ends, or reads past the durable size of a segment.
	ErrChunkPosition = errors.New("storage: chunk position out of sequence")
	// ErrChunkTooLarge: a chunk of a move exceeds LogConfig.ChunkBytesMax.
	ErrChunkTooLarge = errors.New("storage: chunk too large")
	// ErrNoSegment: no retained segment has the given base offset.
	ErrNoSegment = errors.New("storage: no such segment")
	// ErrStagedBehind: a staged copy recovers to less than required, or
	// with corrupt records below its high watermark.
	ErrStagedBehind = errors.New("storage: staged copy behind or incomplete")
	// ErrStagedState: the state given to a staged copy is inconsistent
	// (committed offset above the high watermark).
	ErrStagedState = errors.New("storage: inconsistent staged state")
	// ErrFileTooLarge: ReadFile refused a file above readFileBytesMax.
	ErrFileTooLarge = errors.New("storage: file too large to read whole")
	// ErrInvalidConfig: LogConfig.Validate found a problem.
	ErrInvalidConfig = errors.New("storage: invalid log config")
)
