package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path"
)

// The consumer.offset file holds the committed consumer offset (the
// contiguous acknowledged frontier): 8 bytes big-endian, then a CRC32C of
// those 8 bytes. It is replaced atomically (WriteFileAtomic), so it is
// never torn; the CRC catches bit rot.
const committedFileBytes = 8 + 4

// encodeCommitted returns the content of a consumer.offset file.
func encodeCommitted(offset uint64) []byte {
	data := binary.BigEndian.AppendUint64(make([]byte, 0, committedFileBytes), offset)
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// decodeCommitted parses a consumer.offset file.
func decodeCommitted(data []byte) (uint64, bool) {
	if len(data) != committedFileBytes {
		return 0, false
	}
	if binary.BigEndian.Uint32(data[8:]) != crc32.Checksum(data[:8], castagnoli) {
		return 0, false
	}
	return binary.BigEndian.Uint64(data), true
}

// committedState is what recovery found in the consumer.offset file.
type committedState struct {
	offset uint64
	// exists: the file is present; valid: its content decoded.
	exists, valid bool
}

// readCommittedState reads the consumer.offset file of dir. A missing file
// is not an error.
func readCommittedState(fs FS, dir string) (committedState, error) {
	data, err := ReadFile(fs, path.Join(dir, committedFileName))
	if errors.Is(err, ErrNotExist) {
		return committedState{}, nil
	}
	if err != nil {
		return committedState{}, err
	}
	offset, valid := decodeCommitted(data)
	return committedState{offset: offset, exists: true, valid: valid}, nil
}

// writeCommittedFile persists offset as the committed offset of dir.
func writeCommittedFile(fs FS, dir string, offset uint64) error {
	return WriteFileAtomic(fs, path.Join(dir, committedFileName), encodeCommitted(offset))
}

// PersistedBacklog reads what the files of dir say of its backlog without
// opening (recovering) the log: the high watermark its hwm file holds and
// the committed consumer offset of its consumer.offset file (0 without
// one), at most that high watermark. ok is false when dir holds no
// persisted high watermark, or a consumer.offset that does not decode:
// only the log's recovery can tell more. The high watermark may be behind
// the log's end (the hwm file is written lazily, after the rounds it
// covers: a crash can leave acknowledged frames past it, which recovery
// takes), and the committed offset may be below the oldest record
// retention kept: the log, once open, knows both exactly.
func PersistedBacklog(fs FS, dir string) (hwm, committed uint64, ok bool, err error) {
	hwm, ok, err = PersistedHWM(fs, dir)
	if err != nil || !ok {
		return 0, 0, false, err
	}
	state, err := readCommittedState(fs, dir)
	if err != nil || (state.exists && !state.valid) {
		return 0, 0, false, err
	}
	return hwm, min(state.offset, hwm), true, nil
}
