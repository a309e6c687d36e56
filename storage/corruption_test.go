package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// damagedSource writes 60 records to a log in dir, syncs and closes it
// (which persists the HWM), damages the first frame of the segment starting at
// base, and reopens it: recovery skips that offset.
func damagedSource(t *testing.T, fs FS, dir string, cfg LogConfig, base uint64) *Log {
	t.Helper()
	log, _ := openTestLog(t, fs, dir, cfg)
	appendTestRecords(t, log, 0, 60)
	require.NoError(t, log.Sync())
	require.NoError(t, log.Close())
	flipByte(t, fs, segmentPath(dir, base), frameHeaderBytes+1)
	log, recovery := openTestLog(t, fs, dir, cfg)
	require.Equal(t, uint64(1), recovery.CorruptCount)
	require.Equal(t, []uint64{base}, recovery.CorruptOffsets)
	return log
}

// stageCopy copies source into a staged copy in dir, with its HWM.
func stageCopy(t *testing.T, fs FS, dir string, cfg LogConfig, source *Log) {
	t.Helper()
	staged, err := CreateStaged(fs, dir, cfg)
	require.NoError(t, err)
	copyPass(t, source, staged)
	require.NoError(t, staged.SetState(source.HWM(), 0))
	require.NoError(t, staged.Sync())
	require.NoError(t, staged.Close())
}

// A log reports the corruption its recovery found, and a staged copy with
// exactly that corruption verifies (the record is lost already); a copy
// with one more corrupt offset, damaged in the copy itself, does not, nor
// does a copy with the source's damage checked against no corruption.
func TestMoveCopyCarriesTheSourcesCorruption(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		source := damagedSource(t, fs, "src", cfg, 0)
		allowed := source.Corruption()
		require.Equal(t, Corruption{Count: 1, Offsets: []uint64{0}}, allowed)

		stageCopy(t, fs, "same", cfg, source)
		recovery, err := VerifyStaged(fs, "same", cfg, 60, allowed)
		require.NoError(t, err)
		require.Equal(t, []uint64{0}, recovery.CorruptOffsets)
		log, _, err := OpenVerified(fs, "same", cfg, 60, allowed)
		require.NoError(t, err)
		_, err = log.Read(0)
		require.ErrorIs(t, err, ErrCorrupt, "the new log answers the lost record as the source did")
		require.Equal(t, allowed, log.Corruption())
		require.NoError(t, log.Close())

		_, err = VerifyStaged(fs, "same", cfg, 60, Corruption{})
		require.ErrorIs(t, err, ErrCorrupt, "a copy's corruption the source did not report is refused")

		stageCopy(t, fs, "more", cfg, source)
		segments := source.Segments()
		flipByte(t, fs, segmentPath("more", segments[1].Base), frameHeaderBytes+1)
		_, err = VerifyStaged(fs, "more", cfg, 60, allowed)
		require.ErrorIs(t, err, ErrStagedBehind)
		require.ErrorIs(t, err, ErrCorrupt)
		_, _, err = OpenVerified(fs, "more", cfg, 60, allowed)
		require.ErrorIs(t, err, ErrCorrupt, "OpenVerified refuses what VerifyStaged refuses")
		require.NoError(t, source.Close())
	})
}

// The rule compares the count exactly and the listed offsets as far as
// both lists go, and wants every listed offset below the copy's HWM.
func TestCheckCorruption(t *testing.T) {
	found := Recovery{HWM: 10, CorruptCount: 3, CorruptOffsets: []uint64{2, 5}}
	cases := []struct {
		name    string
		allowed Corruption
		ok      bool
	}{
		{"same", Corruption{Count: 3, Offsets: []uint64{2, 5}}, true},
		{"shorter list", Corruption{Count: 3, Offsets: []uint64{2}}, true},
		{"longer list", Corruption{Count: 3, Offsets: []uint64{2, 5, 7}}, true},
		{"other count", Corruption{Count: 4, Offsets: []uint64{2, 5}}, false},
		{"other offset", Corruption{Count: 3, Offsets: []uint64{2, 6}}, false},
		{"none", Corruption{}, false},
	}
	for _, c := range cases {
		err := checkCorruption(found, c.allowed)
		require.Equal(t, c.ok, err == nil, "%s: %v", c.name, err)
		require.Equal(t, !c.ok, errors.Is(err, ErrCorrupt), c.name)
	}
	above := Recovery{HWM: 5, CorruptCount: 1, CorruptOffsets: []uint64{5}}
	require.Error(t, checkCorruption(above, Corruption{Count: 1, Offsets: []uint64{5}}), "an offset at the copy's HWM")
	require.NoError(t, checkCorruption(Recovery{HWM: 5}, Corruption{Count: 2}), "a copy without corruption is always accepted")
}

// Corruption lists a sealed segment's gap (offsets up to the next base
// recovery could not find) as recovery did, and stops at the log's bound.
func TestLogCorruptionListsGapsAndIsBounded(t *testing.T) {
	forEachLogFS(t, func(t *testing.T, fs FS) {
		cfg := smallLogConfig()
		writeClosedTestLog(t, fs, "gap", cfg, 150)
		segments := func() []SegmentInfo {
			log, _ := openTestLog(t, fs, "gap", cfg)
			defer func() { require.NoError(t, log.Close()) }()
			return log.Segments()
		}()
		require.Greater(t, len(segments), 2)
		first := segments[0]
		truncateFile(t, fs, segmentPath("gap", first.Base), first.Size-1)
		log, recovery := openTestLog(t, fs, "gap", cfg)
		require.Positive(t, recovery.CorruptCount)
		require.Equal(t, Corruption{Count: recovery.CorruptCount, Offsets: recovery.CorruptOffsets}, log.Corruption())
		require.NoError(t, log.Close())

		cfg.CorruptOffsetsReportedMax = 0
		log, recovery = openTestLog(t, fs, "gap", cfg)
		require.Equal(t, Corruption{Count: recovery.CorruptCount}, log.Corruption())
		require.NoError(t, log.Close())
	})
}

// A record whose payload holds an encoded frame claiming the record's own
// offset: when media damage hits the record's CRC below the persisted HWM,
// recovery must report the offset corrupt, never serve the inner frame.
func TestResyncRefusesAFrameInsideTheDamagedOnesPayloadClaimingItsOffset(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig() // HWMLag 0: the hwm file covers every synced record
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	forged := EncodeFrame(nil, 10, EncodeRecord(nil, Record{TimeMs: 1, Payload: []byte("FORGED")}))
	genuine := Record{TimeMs: 1_010, Payload: append([]byte("genuine:"), forged...)}
	_, err := log.Append(genuine) // offset 10
	require.NoError(t, err)
	appendTestRecords(t, log, 11, 20)
	require.NoError(t, log.Sync())
	before, err := log.Read(10)
	require.NoError(t, err)
	requireSameRecord(t, genuine, before)
	name, position := framePosition(t, log, 10)
	require.NoError(t, log.Close())
	require.NoError(t, fs.FlipDurableByte(name, position+17)) // media damage to frame 10's CRC, below the persisted HWM
	log, recovery := openTestLog(t, fs, "p", cfg)
	after, err := log.Read(10)
	t.Logf("persisted hwm %d, corrupt count %d, offset 10 now: payload %q, err %v", recovery.PersistedHWM, recovery.CorruptCount, after.Payload, err)
	require.ErrorIs(t, err, ErrCorrupt, "a damaged frame below the persisted HWM must read as ErrCorrupt")
	require.Equal(t, []uint64{10}, recovery.CorruptOffsets)
	requireTestRecords(t, log, 11, 20)
	require.NoError(t, log.Close())
}

// A record whose payload holds an encoded frame claiming the next offset:
// when media damage hits the record's CRC, the next offset, read before,
// must keep its record.
func TestResyncRefusesAFrameInsideTheDamagedOnesPayloadClaimingTheNextOffset(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	log, _ := openTestLog(t, fs, "p", cfg)
	appendTestRecords(t, log, 0, 10)
	forged := Record{TimeMs: 1, Payload: []byte("FORGED")}
	payload := EncodeFrame(nil, 11, EncodeRecord(nil, forged))
	_, err := log.Append(Record{TimeMs: 1_010, Payload: payload}) // offset 10
	require.NoError(t, err)
	appendTestRecords(t, log, 11, 20)
	require.NoError(t, log.Sync())
	before, err := log.Read(11)
	require.NoError(t, err)
	requireSameRecord(t, testRecord(11), before)
	name, position := framePosition(t, log, 10)
	require.NoError(t, log.Close())
	require.NoError(t, fs.FlipDurableByte(name, position+17)) // media damage to frame 10's CRC
	log, recovery := openTestLog(t, fs, "p", cfg)
	t.Logf("recovery: corrupt %d %v, hwm %d", recovery.CorruptCount, recovery.CorruptOffsets, recovery.HWM)
	after, err := log.Read(11)
	t.Logf("offset 11 after recovery: payload %q, err %v", after.Payload, err)
	require.Equal(t, before.Payload, after.Payload, "offset 11 changed its record")
	require.Equal(t, []uint64{10}, recovery.CorruptOffsets)
	require.NoError(t, log.Close())
}

// strayFrame is a frame encoded into a payload, claiming offset: what a
// topic carrying raw segment bytes, or a crafted record, holds.
func strayFrame(offset uint64) []byte {
	return EncodeFrame(nil, offset, EncodeRecord(nil, Record{TimeMs: 1, Payload: []byte("FORGED")}))
}

// payloadLog is a log built by logWithPayloads, closed: the file of its
// one segment, the position of every frame in it, and the records read
// back before any damage.
type payloadLog struct {
	name      string
	positions []int64
	read      []Record
}

// logWithPayloads appends testRecord(i) for every offset below count, with
// payloads[i] as the payload where given, syncs and closes the log (which
// persists the HWM). Every frame must fit the first segment.
func logWithPayloads(t *testing.T, fs FS, cfg LogConfig, count uint64, payloads map[uint64][]byte) payloadLog {
	t.Helper()
	log, _ := openTestLog(t, fs, "p", cfg)
	for offset := range count {
		record := testRecord(offset)
		if payload, ok := payloads[offset]; ok {
			record.Payload = payload
		}
		_, err := log.Append(record)
		require.NoError(t, err)
	}
	require.NoError(t, log.Sync())
	built := payloadLog{positions: make([]int64, count), read: make([]Record, count)}
	for offset := range count {
		var err error
		built.read[offset], err = log.Read(offset)
		require.NoError(t, err)
		var name string
		name, built.positions[offset] = framePosition(t, log, offset)
		require.True(t, built.name == "" || built.name == name, "offset %d is not in the first segment", offset)
		built.name = name
	}
	require.NoError(t, log.Close())
	return built
}

// setLengthField overwrites the envelope length field of the frame at
// position, durably: damage that leaves a plausible length.
func setLengthField(t *testing.T, fs FS, name string, position int64, length uint32) {
	t.Helper()
	file, err := fs.Open(name)
	require.NoError(t, err)
	_, err = file.WriteAt(binary.BigEndian.AppendUint32(nil, length), position+frameLengthStart)
	require.NoError(t, err)
	require.NoError(t, file.Sync())
	require.NoError(t, file.Close())
}

// requireOnlyCorrupt checks that exactly the offsets corrupt were
// reported and read as ErrCorrupt, and every other offset still reads as
// the record read before the damage.
func requireOnlyCorrupt(t *testing.T, log *Log, recovery Recovery, built payloadLog, corrupt ...uint64) {
	t.Helper()
	count := uint64(len(built.read))
	require.Equal(t, uint64(len(corrupt)), recovery.CorruptCount)
	require.Equal(t, corrupt, recovery.CorruptOffsets)
	require.Equal(t, count, recovery.HWM)
	for offset := range count {
		got, err := log.Read(offset)
		if slices.Contains(corrupt, offset) {
			require.ErrorIs(t, err, ErrCorrupt, "offset %d", offset)
			continue
		}
		require.NoError(t, err, "offset %d", offset)
		requireSameRecord(t, built.read[offset], got, "offset %d", offset)
	}
}

// Damage to the length field of frame 10 sends resync to the byte scan,
// which meets a stray frame at the end of the damaged payload, right
// before the genuine frame 11. Claiming 10, it cannot be genuine (frame 10
// began where the damaged one did); claiming 11, it is not corroborated
// (the frame after it claims 11 too). The scan goes on to the genuine 11.
func TestResyncLengthFieldHitFindsTheGenuineNextFramePastAStrayOne(t *testing.T) {
	for _, claimed := range []uint64{10, 11} {
		// 5: the length turns implausible; 7: it stays plausible but points
		// into a later frame.
		for _, delta := range []int64{5, 7} {
			t.Run(fmt.Sprintf("stray claims %d, byte %d", claimed, delta), func(t *testing.T) {
				fs := newLogMemFS(1)
				cfg := smallLogConfig()
				payload := append(bytes.Repeat([]byte("genuine:"), 8), strayFrame(claimed)...)
				built := logWithPayloads(t, fs, cfg, 20, map[uint64][]byte{10: payload})
				require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+delta))
				log, recovery := openTestLog(t, fs, "p", cfg)
				requireOnlyCorrupt(t, log, recovery, built, 10)
				require.NoError(t, log.Close())
			})
		}
	}
}

// Whatever byte of frame 10 is damaged, header or envelope, the frames its
// payload holds are never served: offset 10 alone is reported, and every
// other offset keeps the record read before.
func TestResyncEveryByteOfADamagedFrameWithFramesInItsPayload(t *testing.T) {
	payload := slices.Concat([]byte("genuine:"), strayFrame(10), []byte("middle"), strayFrame(11), strayFrame(10), strayFrame(11))
	frameBytes := int64(frameHeaderBytes + len(EncodeRecord(nil, Record{TimeMs: 1_010, Payload: payload})))
	for delta := range frameBytes {
		fs := newLogMemFS(1)
		cfg := smallLogConfig()
		built := logWithPayloads(t, fs, cfg, 20, map[uint64][]byte{10: payload})
		require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+delta))
		log, recovery := openTestLog(t, fs, "p", cfg)
		requireOnlyCorrupt(t, log, recovery, built, 10)
		require.NoError(t, log.Close())
	}
}

// Damage outside the length field: resync follows frame 10's declared
// length to the genuine 11 and never looks inside the payload, whose chain
// of frames claiming 11 and 12 the byte scan alone could not refuse (each
// corroborates the one before).
func TestResyncFollowsTheDamagedFramesLengthPastAChainInItsPayload(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	payload := slices.Concat([]byte("genuine:"), strayFrame(11), strayFrame(12), []byte("rest"))
	built := logWithPayloads(t, fs, cfg, 20, map[uint64][]byte{10: payload})
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+17))
	log, recovery := openTestLog(t, fs, "p", cfg)
	requireOnlyCorrupt(t, log, recovery, built, 10)
	require.NoError(t, log.Close())
}

// Frames 10 and 11 are both damaged in their CRC, and 11's payload ends
// with a frame claiming 11, which the genuine 12 right after it would
// corroborate: the walk follows the lengths through the damaged 11 to 12
// and never looks inside either payload.
func TestResyncWalksARunOfDamagedFramesPastFramesInTheirPayloads(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	payloads := map[uint64][]byte{10: append([]byte("genuine:"), strayFrame(11)...), 11: append([]byte("genuine:"), strayFrame(11)...)}
	built := logWithPayloads(t, fs, cfg, 20, payloads)
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+17))
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[11]+17))
	log, recovery := openTestLog(t, fs, "p", cfg)
	requireOnlyCorrupt(t, log, recovery, built, 10, 11)
	require.NoError(t, log.Close())
}

// Frames 10 and 11 are both damaged, 10 in its length field, so the walk
// stops at once and the byte scan runs through frame 10's payload: the
// frame claiming 11 at its end is followed by the damaged 11, so nothing
// corroborates it, and the scan goes on to the genuine 12.
func TestResyncScanSkipsAStrayFrameBeforeADamagedOne(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	built := logWithPayloads(t, fs, cfg, 20, map[uint64][]byte{10: append([]byte("genuine:"), strayFrame(11)...)})
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+5))
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[11]+17))
	log, recovery := openTestLog(t, fs, "p", cfg)
	requireOnlyCorrupt(t, log, recovery, built, 10, 11)
	require.NoError(t, log.Close())
}

// Frame 10's length field is damaged to point at a frame claiming 11 in
// the middle of its own payload: the walk reaches it, but nothing after it
// corroborates it. When the genuine 11 follows, the byte scan finds it,
// corroborated and claiming no more, and it is taken instead; when frame
// 10 is the last, the scan finds nothing, and 11, at the persisted HWM, is
// no offset that must exist: the damaged frame is reported corrupt and
// kept, and the HWM stays at the persisted one.
func TestResyncRefusesADamagedLengthPointingIntoThePayload(t *testing.T) {
	for _, count := range []uint64{20, 11} {
		t.Run(fmt.Sprintf("%d records", count), func(t *testing.T) {
			fs := newLogMemFS(1)
			cfg := smallLogConfig()
			payload := slices.Concat([]byte("genuine:"), strayFrame(11), []byte("rest of the payload"))
			built := logWithPayloads(t, fs, cfg, count, map[uint64][]byte{10: payload})
			stray := bytes.Index(EncodeRecord(nil, built.read[10]), strayFrame(11)) // its place in the envelope
			require.Positive(t, stray)
			setLengthField(t, fs, built.name, built.positions[10], uint32(stray))
			log, recovery := openTestLog(t, fs, "p", cfg)
			if count > 11 {
				requireOnlyCorrupt(t, log, recovery, built, 10)
			} else {
				require.Equal(t, []uint64{10}, recovery.CorruptOffsets)
				require.Zero(t, recovery.LostAcknowledged)
				require.Equal(t, uint64(11), recovery.HWM)
			}
			require.NoError(t, log.Close())
		})
	}
}

// A damaged length field of frame 10 that points exactly at the genuine
// frame 12: the frame the length leads to must claim 11, so resync falls
// back to the byte scan, which finds the intact 11 rather than skipping it.
func TestResyncByLengthTakesOnlyTheNextOffset(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	built := logWithPayloads(t, fs, cfg, 20, nil)
	setLengthField(t, fs, built.name, built.positions[10], uint32(built.positions[12]-built.positions[10]-frameHeaderBytes))
	log, recovery := openTestLog(t, fs, "p", cfg)
	requireOnlyCorrupt(t, log, recovery, built, 10)
	require.NoError(t, log.Close())
}

// Frames 10 and 12 are damaged, 11 is intact between them: the length of
// frame 10 leads to 11, which nothing corroborates (12 is invalid), but
// the byte scan's corroborated frame claims more (13), so 11 is kept.
func TestResyncKeepsAnIntactFrameBetweenTwoDamagedOnes(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	built := logWithPayloads(t, fs, cfg, 20, nil)
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+17))
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[12]+17))
	log, recovery := openTestLog(t, fs, "p", cfg)
	requireOnlyCorrupt(t, log, recovery, built, 10, 12)
	require.NoError(t, log.Close())
}

// The same at the end of the log: 12 is its damaged last frame, so the
// byte scan finds nothing, and 11, an acknowledged offset below the
// persisted HWM, is kept; 12 is reported corrupt, and the HWM stays.
func TestResyncKeepsAnIntactFrameBeforeADamagedLastOne(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	built := logWithPayloads(t, fs, cfg, 13, nil)
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+17))
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[12]+17))
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, []uint64{10, 12}, recovery.CorruptOffsets)
	require.Zero(t, recovery.LostAcknowledged)
	require.Equal(t, uint64(13), recovery.HWM)
	requireTestRecords(t, log, 11, 12)
	require.NoError(t, log.Close())
}

// The byte scan takes the last frame of a segment without a frame after
// it to corroborate it: it ends where the segment's content does, at the
// end of a sealed segment's file or at the active segment's zero tail.
func TestResyncScanTakesTheLastFrameOfASegment(t *testing.T) {
	t.Run("sealed", func(t *testing.T) {
		fs := newLogMemFS(1)
		cfg := smallLogConfig()
		log, _ := openTestLog(t, fs, "p", cfg)
		appendTestRecords(t, log, 0, 120)
		require.NoError(t, log.Sync())
		last := log.segments[1].base - 1
		name, position := framePosition(t, log, last-1)
		require.NoError(t, log.Close())
		require.NoError(t, fs.FlipDurableByte(name, position+5)) // the length turns implausible
		log, recovery := openTestLog(t, fs, "p", cfg)
		require.Equal(t, []uint64{last - 1}, recovery.CorruptOffsets)
		requireTestRecords(t, log, last, 120)
		require.NoError(t, log.Close())
	})
	t.Run("zero tail", func(t *testing.T) {
		fs := newLogMemFS(1)
		cfg := smallLogConfig()
		built := logWithPayloads(t, fs, cfg, 20, nil)
		fs.Crash() // the close kept a short zero tail, and its trim of the rest was not synced: the whole tail comes back
		require.NoError(t, fs.FlipDurableByte(built.name, built.positions[18]+5))
		log, recovery := openTestLog(t, fs, "p", cfg)
		require.Positive(t, recovery.ZeroTailBytes)
		requireOnlyCorrupt(t, log, recovery, built, 18)
		require.NoError(t, log.Close())
	})
}

// The last frame of the log is damaged in its length field and its
// payload ends with a frame claiming the next offset, which was never
// written: the byte scan reaches the end of the log on it, but an offset
// at the persisted HWM is not one that must exist, so it is refused; the
// damaged frame is reported corrupt, as without the stray frame, and the
// next append takes offset 11, never 10 again.
func TestResyncRefusesAFrameEndingTheLastPayload(t *testing.T) {
	fs := newLogMemFS(1)
	cfg := smallLogConfig()
	built := logWithPayloads(t, fs, cfg, 11, map[uint64][]byte{10: append([]byte("genuine:"), strayFrame(11)...)})
	require.NoError(t, fs.FlipDurableByte(built.name, built.positions[10]+5))
	log, recovery := openTestLog(t, fs, "p", cfg)
	require.Equal(t, uint64(11), recovery.PersistedHWM)
	require.Equal(t, []uint64{10}, recovery.CorruptOffsets)
	require.Zero(t, recovery.LostAcknowledged)
	require.Equal(t, uint64(11), recovery.HWM)
	requireTestRecords(t, log, 0, 10)
	offset, err := log.Append(testRecord(11))
	require.NoError(t, err)
	require.Equal(t, uint64(11), offset)
	require.NoError(t, log.Close())
}

// A close that leaves a sealed segment past the persisted HWM (records
// appended after the last round rolled it), then damage to the frame just
// below that HWM, whose intact successor ends the sealed segment: the
// successor claims an offset below the next segment's base, which was
// appended, so the first recovery takes it as every later one does (the
// first writes an HWM past the segment). Refused by the first alone, the
// two disagreed on the corrupt offsets, and a move's copy, recovered under
// the source's HWM, was refused at every try.
func TestRecoveriesAgreeOnASealedSegmentPastThePersistedHWM(t *testing.T) {
	fs, cfg := newLogMemFS(1), smallLogConfig()
	const frameBytes = frameHeaderBytes + recordOverheadBytes + 200 // 17 fit a segment of smallLogConfig
	record := func(i uint64) Record { return Record{TimeMs: int64(i), Payload: bytes.Repeat([]byte{byte(i)}, 200)} }
	log, _ := openTestLog(t, fs, "p", cfg)
	for i := range uint64(18) {
		_, err := log.Append(record(i))
		require.NoError(t, err)
		if i == 15 {
			require.NoError(t, log.Sync()) // persists 16: records 16 and 17 are never synced
		}
	}
	require.Equal(t, uint64(17), log.active().base, "record 17 rolled the segment holding 16")
	require.NoError(t, log.Close())
	flipByte(t, fs, segmentPath("p", 0), 15*frameBytes+frameHeaderBytes+100) // the payload of 15

	source, first := openTestLog(t, fs, "p", cfg)
	require.Equal(t, []uint64{15}, first.CorruptOffsets)
	got, err := source.Read(16)
	require.NoError(t, err)
	requireSameRecord(t, record(16), got)
	stageCopy(t, fs, "copy", cfg, source)
	_, err = VerifyStaged(fs, "copy", cfg, source.HWM(), source.Corruption())
	require.NoError(t, err, "the copy recovers with the source's corruption")
	require.NoError(t, source.Close())

	again, second := openTestLog(t, fs, "p", cfg)
	require.Equal(t, first.CorruptOffsets, second.CorruptOffsets)
	require.Equal(t, first.HWM, second.HWM)
	require.NoError(t, again.Close())
}
