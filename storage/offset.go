package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path"
)

// The committed consumer offset (the contiguous acknowledged frontier)
// lives in two files of the same format, consumer.offset and
// consumer.offset.b: 8 bytes big-endian, then a CRC32C of those 8 bytes.
// A round overwrites the file holding the lower value (or a damaged or
// missing one) in place and fsyncs it, so a torn write can only damage
// the file being written while the other keeps the previous value;
// recovery takes the highest valid value. A file that is not there yet is
// created by atomic replace (WriteFileAtomic), which needs a block: a disk
// with no room for it refuses the round's write and keeps the offset dirty
// (SyncRound.refuseCommitted), as it does an in-place write. An offset below a
// file's value replaces both (committedTargetFor), so the in-place writes
// need no directory sync and change no metadata: an atomic replace of a
// partition every persist interval (a temporary file, its fsync, a rename
// and a directory fsync, which journal file systems commit each time)
// held every round that carried one for milliseconds. A release that
// reads consumer.offset alone (those before this one) finds the value of
// one of the last two rounds that persisted it.
const committedFileBytes = 8 + 4

// committedFiles is how many files hold the committed offset.
const committedFiles = 2

// committedFileNames are the files, by index.
var committedFileNames = [committedFiles]string{committedFileName, committedFileName + ".b"}

// encodeCommitted returns the content of a committed offset file.
func encodeCommitted(offset uint64) []byte {
	data := binary.BigEndian.AppendUint64(make([]byte, 0, committedFileBytes), offset)
	return binary.BigEndian.AppendUint32(data, crc32.Checksum(data, castagnoli))
}

// decodeCommitted parses a committed offset file.
func decodeCommitted(data []byte) (uint64, bool) {
	if len(data) != committedFileBytes {
		return 0, false
	}
	if binary.BigEndian.Uint32(data[8:]) != crc32.Checksum(data[:8], castagnoli) {
		return 0, false
	}
	return binary.BigEndian.Uint64(data), true
}

// committedState is what recovery found in the committed offset files.
type committedState struct {
	// files is each file's own state.
	files [committedFiles]committedFile
}

// highest is the highest valid value, 0 without one.
func (s committedState) highest() uint64 {
	var value uint64
	for _, file := range s.files {
		if file.valid {
			value = max(value, file.value)
		}
	}
	return value
}

// damaged reports a file present with none valid: no whole value left
// (a torn in-place write damages one file only).
func (s committedState) damaged() bool {
	present, valid := false, false
	for _, file := range s.files {
		present, valid = present || file.exists, valid || file.valid
	}
	return present && !valid
}

// committedFile is what one committed offset file holds.
type committedFile struct {
	value         uint64
	exists, valid bool
}

// readCommittedState reads the committed offset files of dir. Missing
// files are not an error.
func readCommittedState(fs FS, dir string) (committedState, error) {
	var state committedState
	for i, name := range committedFileNames {
		data, err := ReadFile(fs, path.Join(dir, name))
		if errors.Is(err, ErrNotExist) {
			continue
		}
		if err != nil {
			return committedState{}, err
		}
		value, valid := decodeCommitted(data)
		state.files[i] = committedFile{value: value, exists: true, valid: valid}
	}
	return state, nil
}

// olderFile is the file the next write overwrites: a missing or damaged
// one, else the one with the lower value, so the highest stays intact.
func (s committedState) olderFile() int {
	return olderOfTwo([2]bool{s.files[0].valid, s.files[1].valid}, [2]uint64{s.files[0].value, s.files[1].value})
}

// setCommittedFiles records in l what the committed offset files hold
// and which one the next round writes, as state found them.
func (l *Log) setCommittedFiles(state committedState) {
	l.committedFiles = state.files
	l.committedNext = state.olderFile()
}

// committedTarget is where a round writes the committed offset: the
// file, and whether it holds a whole value already (written in place) or
// not (created by atomic replace); or, with fresh, both files at once
// (writeFreshCommittedFiles).
type committedTarget struct {
	index int
	whole bool
	fresh bool
}

// committedTargetFor is where the next round writes offset: in place in
// the file the last round did not write, unless offset is below the value
// of a file on disk (recovery clamped the offset down: its log lost
// records): written in place beside that file it would lose to it at the
// next recovery, once new records took the lost offsets, and they would
// never be delivered; so both files are replaced then.
func (l *Log) committedTargetFor(offset uint64) committedTarget {
	for _, file := range l.committedFiles {
		if file.valid && file.value > offset {
			return committedTarget{fresh: true}
		}
	}
	return committedTarget{index: l.committedNext, whole: l.committedFiles[l.committedNext].valid}
}

// wroteCommitted records a round's write of offset to target.
func (l *Log) wroteCommitted(target committedTarget, offset uint64) {
	written := committedFile{value: offset, exists: true, valid: true}
	if target.fresh {
		l.committedFiles = [committedFiles]committedFile{written}
		l.committedNext = 1
		return
	}
	l.committedFiles[target.index] = written
	l.committedNext = 1 - target.index
}

// writeCommittedFile persists offset as the committed offset of dir, in
// the target file, and makes it durable.
func writeCommittedFile(fs FS, dir string, target committedTarget, offset uint64) error {
	if target.fresh {
		return writeFreshCommittedFiles(fs, dir, offset)
	}
	name := path.Join(dir, committedFileNames[target.index])
	if !target.whole {
		return WriteFileAtomic(fs, name, encodeCommitted(offset))
	}
	file, err := writeCommittedInPlace(fs, name, offset)
	if err != nil {
		return err
	}
	return errors.Join(file.Sync(), file.Close())
}

// writeCommittedInPlace overwrites the committed offset file name with
// offset, without making it durable, and returns it open.
func writeCommittedInPlace(fs FS, name string, offset uint64) (File, error) {
	file, err := fs.Open(name)
	if err != nil {
		return nil, err
	}
	n, err := file.WriteAt(encodeCommitted(offset), 0)
	if err != nil {
		return nil, errors.Join(err, file.Close())
	}
	assert(n == committedFileBytes, "short committed offset write without error: %d bytes", n)
	return file, nil
}

// writeFreshCommittedFiles makes offset the committed offset of a
// directory whose files may hold anything: consumer.offset by atomic
// replace, and consumer.offset.b removed (a staged copy's state, or an
// offset that moved down). The directory sync of the replace makes the
// removal durable too.
func writeFreshCommittedFiles(fs FS, dir string, offset uint64) error {
	if err := fs.Remove(path.Join(dir, committedFileNames[1])); err != nil && !errors.Is(err, ErrNotExist) {
		return err
	}
	return WriteFileAtomic(fs, path.Join(dir, committedFileNames[0]), encodeCommitted(offset))
}

// PersistedBacklog reads what the files of dir say of its backlog without
// opening (recovering) the log: the high watermark its hwm file holds and
// the committed consumer offset of its committed offset files (0 without
// one), at most that high watermark. ok is false when dir holds no
// persisted high watermark, or committed offset files none of which decodes:
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
	if err != nil || state.damaged() {
		return 0, 0, false, err
	}
	return hwm, min(state.highest(), hwm), true, nil
}
