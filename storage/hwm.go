package storage

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"path"
)

// The hwm file holds two fixed-size slots, each a checksummed copy of a
// persisted high watermark. A sync round overwrites the older slot in place
// (WriteAt) and fsyncs it, so a torn write can only damage the slot being
// written while the other keeps the previous value; recovery takes the
// highest valid slot. Slot layout, big-endian:
//
//	magic  4 bytes  hwmSlotMagic
//	value  8 bytes  the high watermark (first offset not covered)
//	crc    4 bytes  CRC32C over the slot index byte and bytes [0,12)
//
// The slot index is inside the CRC so a slot copied to the wrong place
// does not validate.
const (
	hwmSlotMagic = 0x48574d32
	hwmSlotBytes = 16
	hwmSlots     = 2
	hwmFileBytes = hwmSlots * hwmSlotBytes
)

// encodeHWMSlot appends slot number slot holding value to dst.
func encodeHWMSlot(dst []byte, slot int, value uint64) []byte {
	assert(slot >= 0 && slot < hwmSlots, "hwm slot %d out of [0, %d)", slot, hwmSlots)
	start := len(dst)
	dst = binary.BigEndian.AppendUint32(dst, hwmSlotMagic)
	dst = binary.BigEndian.AppendUint64(dst, value)
	return binary.BigEndian.AppendUint32(dst, hwmSlotCRC(slot, dst[start:]))
}

// hwmSlotCRC is the checksum of slot number slot with content body.
func hwmSlotCRC(slot int, body []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, []byte{byte(slot)}), castagnoli, body)
}

// decodeHWMSlot returns the value of slot number slot if b holds a valid
// copy of it.
func decodeHWMSlot(b []byte, slot int) (uint64, bool) {
	if len(b) < hwmSlotBytes || binary.BigEndian.Uint32(b) != hwmSlotMagic {
		return 0, false
	}
	if binary.BigEndian.Uint32(b[12:16]) != hwmSlotCRC(slot, b[:12]) {
		return 0, false
	}
	return binary.BigEndian.Uint64(b[4:12]), true
}

// hwmState is what recovery found in the hwm file.
type hwmState struct {
	// exists: the file is present.
	exists bool
	// valid[i] and values[i]: slot i decoded, and its value.
	valid  [hwmSlots]bool
	values [hwmSlots]uint64
	// wellFormed: the file has exactly hwmFileBytes bytes, so both slots
	// can be overwritten in place.
	wellFormed bool
}

// highest returns the highest valid slot value, and false if no slot is
// valid.
func (s hwmState) highest() (uint64, bool) {
	var value uint64
	found := false
	for slot := range hwmSlots {
		if s.valid[slot] && (!found || s.values[slot] > value) {
			value, found = s.values[slot], true
		}
	}
	return value, found
}

// olderSlot is the slot the next write should overwrite: an invalid one,
// else the one with the lower value, so the highest stays intact.
func (s hwmState) olderSlot() int { return olderOfTwo(s.valid, s.values) }

// olderOfTwo is which of two copies of a value that only grows a write
// should overwrite: an invalid one, else the lower, so the highest stays
// intact (the hwm file's slots, the committed offset's files).
func olderOfTwo(valid [2]bool, values [2]uint64) int {
	if !valid[0] || (valid[1] && values[0] <= values[1]) {
		return 0
	}
	return 1
}

// PersistedHWM returns the high-watermark the hwm file of dir holds, and
// false if it holds none: every record below it was acknowledged and
// synced, so recovery treats a damaged frame there as corruption, never
// as a torn tail.
func PersistedHWM(fs FS, dir string) (uint64, bool, error) {
	state, err := readHWMState(fs, dir)
	if err != nil {
		return 0, false, err
	}
	hwm, ok := state.highest()
	return hwm, ok, nil
}

// readHWMState reads the hwm file of dir. A missing file is not an error.
func readHWMState(fs FS, dir string) (hwmState, error) {
	data, err := ReadFile(fs, path.Join(dir, hwmFileName))
	if errors.Is(err, ErrNotExist) {
		return hwmState{}, nil
	}
	if err != nil {
		return hwmState{}, err
	}
	state := hwmState{exists: true, wellFormed: len(data) == hwmFileBytes}
	for slot := range hwmSlots {
		if len(data) >= (slot+1)*hwmSlotBytes {
			state.values[slot], state.valid[slot] = decodeHWMSlot(data[slot*hwmSlotBytes:], slot)
		}
	}
	return state, nil
}

// hwmFile is the open hwm file of a log.
type hwmFile struct {
	// file is open for in-place slot writes. Owned by the Log.
	file File
	// nextSlot is the slot the next write overwrites. Invariant: the other
	// slot holds value, durably. Changed only by write.
	nextSlot int
	// value is the highest durable slot value. Invariant: never decreases
	// while the file is open. Changed only by write.
	value uint64
	// slotBuffer is scratch for one encoded slot.
	slotBuffer []byte
}

// writeHWMFile replaces the hwm file of dir atomically with both slots
// holding value, used when a file is created, malformed, or must move
// down (a lower value written in place would lose to the other slot).
func writeHWMFile(fs FS, dir string, value uint64) error {
	data := encodeHWMSlot(nil, 0, value)
	data = encodeHWMSlot(data, 1, value)
	return WriteFileAtomic(fs, path.Join(dir, hwmFileName), data)
}

// openHWMFile opens a well-formed hwm file for slot writes.
func openHWMFile(fs FS, dir string, state hwmState) (*hwmFile, error) {
	value, ok := state.highest()
	assert(state.wellFormed && ok, "opening hwm file of %s without a valid slot (state %+v)", dir, state)
	file, err := fs.Open(path.Join(dir, hwmFileName))
	if err != nil {
		return nil, err
	}
	return &hwmFile{file: file, nextSlot: state.olderSlot(), value: value}, nil
}

// write persists value in the older slot and fsyncs it. Only after it
// returns nil may anything depend on value being durable.
func (h *hwmFile) write(value uint64) error {
	assert(value >= h.value, "hwm moving down in place from %d to %d", h.value, value)
	h.slotBuffer = encodeHWMSlot(h.slotBuffer[:0], h.nextSlot, value)
	if err := writeHWMSlot(h.file, h.slotBuffer, h.nextSlot); err != nil {
		return err
	}
	h.value, h.nextSlot = value, 1-h.nextSlot
	return nil
}

// writeHWMSlot writes the encoded slot number slot in place and fsyncs
// the file. It touches only file, so a sync round may run it off the loop.
func writeHWMSlot(file File, encoded []byte, slot int) error {
	if err := writeHWMSlotUnsynced(file, encoded, slot); err != nil {
		return err
	}
	return file.Sync()
}

// writeHWMSlotUnsynced writes an encoded slot without making it durable.
func writeHWMSlotUnsynced(file File, encoded []byte, slot int) error {
	n, err := file.WriteAt(encoded, int64(slot*hwmSlotBytes))
	if err != nil {
		return err
	}
	assert(n == hwmSlotBytes, "short hwm slot write without error: %d bytes", n)
	return nil
}
