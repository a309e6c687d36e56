package storage

import (
	"errors"
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
		log, _ := openTestLog(t, fs, "gap", cfg)
		appendTestRecords(t, log, 0, 150)
		require.NoError(t, log.Sync())
		require.NoError(t, log.Close())
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
