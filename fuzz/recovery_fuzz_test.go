package fuzz

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"path"
	"testing"

	"narad/storage"
)

// recoveryDir is the partition directory FuzzRecovery builds.
const recoveryDir = "topics/t/p00000"

// recoveryConfig has small segments so a few records span several.
func recoveryConfig() storage.LogConfig {
	return storage.LogConfig{
		SegmentBytes:              4096,
		RecordBytesMax:            600, // with the largest envelope overhead, a frame fits FrameBytesMax
		FrameBytesMax:             1024,
		ChunkBytesMax:             1024,
		CorruptOffsetsReportedMax: 16,
		WriteBufferBytesMax:       256,
	}
}

// mutationBytes is the size of one encoded mutation: target, kind, a
// 3-byte position and a value.
const mutationBytes = 6

func FuzzRecovery(f *testing.F) {
	f.Add(uint8(20), uint64(1), false, []byte{})
	f.Add(uint8(40), uint64(2), false, []byte{0, 0, 0, 1, 0, 0xff})   // flip in the first segment
	f.Add(uint8(60), uint64(3), false, []byte{1, 1, 0, 2, 0, 0})      // truncate the second file
	f.Add(uint8(30), uint64(4), true, []byte{0xff, 0, 0, 0, 5, 0x40}) // flip in the hwm file
	f.Add(uint8(90), uint64(5), true, []byte{0, 0, 0, 0, 0x30, 1, 2, 0, 0, 0x10, 0, 3, 0xff, 1, 0, 0, 7, 0})
	f.Add(uint8(50), uint64(6), false, []byte{0, 0, 0, 0, 0, 0x4e}) // damage the first magic
	f.Fuzz(func(t *testing.T, recordCount uint8, seed uint64, crash bool, mutations []byte) {
		fs := storage.NewMemFS(rand.New(rand.NewPCG(seed, 1)))
		appended := buildFuzzLog(t, fs, int(recordCount)%100+1, seed, crash)
		applyMutations(t, fs, mutations)
		log, recovery, err := storage.OpenLog(fs, recoveryDir, recoveryConfig())
		if err != nil {
			t.Fatalf("recovery failed: %v", err)
		}
		served := checkRecovered(t, log, recovery, appended)
		if err := log.Close(); err != nil {
			t.Fatal(err)
		}
		log, again, err := storage.OpenLog(fs, recoveryDir, recoveryConfig())
		if err != nil {
			t.Fatalf("second recovery failed: %v", err)
		}
		if again.HWM != recovery.HWM || again.CorruptCount != recovery.CorruptCount || again.TruncatedBytes != 0 || again.LostAcknowledged != 0 {
			t.Fatalf("second recovery %+v disagrees with the first %+v", again, recovery)
		}
		if servedAgain := checkRecovered(t, log, again, appended); servedAgain != served {
			t.Fatalf("second recovery serves %d records, first %d", servedAgain, served)
		}
	})
}

// buildFuzzLog appends count records with sizes drawn from seed, syncing
// in rounds and leaving a tail unsynced, and returns them by offset. With
// crash set it ends with a power loss instead of a clean close.
func buildFuzzLog(t *testing.T, fs *storage.MemFS, count int, seed uint64, crash bool) []storage.Record {
	sizes := rand.New(rand.NewPCG(seed, 2))
	log, _, err := storage.OpenLog(fs, recoveryDir, recoveryConfig())
	if err != nil {
		t.Fatal(err)
	}
	appended := make([]storage.Record, 0, count)
	for i := range count {
		record := storage.Record{TimeMs: int64(i), Payload: bytes.Repeat([]byte{byte(i)}, sizes.IntN(300))}
		if sizes.IntN(2) == 0 {
			record.Key = []byte{byte(i), 'k'}
		}
		if _, err := log.Append(record); err != nil {
			t.Fatal(err)
		}
		appended = append(appended, record)
		if sizes.IntN(8) == 0 && i < count-3 {
			if err := log.Sync(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if crash {
		fs.Crash()
		return appended
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	return appended
}

// applyMutations damages the log's files: each mutation picks a file (the
// segments in order, then the hwm file), and either flips a byte or
// truncates the file at a position.
func applyMutations(t *testing.T, fs *storage.MemFS, mutations []byte) {
	names, err := fs.List(recoveryDir)
	if err != nil {
		t.Fatal(err)
	}
	for len(mutations) >= mutationBytes {
		m := mutations[:mutationBytes]
		mutations = mutations[mutationBytes:]
		name := path.Join(recoveryDir, names[int(m[0])%len(names)])
		position := int64(m[2])<<16 | int64(m[3])<<8 | int64(m[4])
		mutateFile(t, fs, name, m[1]%2 == 0, position, m[5])
	}
}

// mutateFile flips the bits value at position (modulo the size) of name,
// or truncates it there, durably.
func mutateFile(t *testing.T, fs *storage.MemFS, name string, flip bool, position int64, value byte) {
	file, err := fs.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	size, err := file.Size()
	if err != nil || size == 0 {
		return
	}
	position %= size
	if !flip {
		must(t, file.Truncate(position))
		must(t, file.Sync())
		return
	}
	one := make([]byte, 1)
	if _, err := file.ReadAt(one, position); err != nil {
		t.Fatal(err)
	}
	one[0] ^= value | 1
	if _, err := file.WriteAt(one, position); err != nil {
		t.Fatal(err)
	}
	must(t, file.Sync())
}

// checkRecovered reads every offset of the recovered log: each is either
// the record appended there or ErrCorrupt, the ErrCorrupt ones are exactly
// those the Recovery counted (and listed, up to the bound), and nothing
// past what was appended is visible. It returns how many records it read.
func checkRecovered(t *testing.T, log *storage.Log, recovery storage.Recovery, appended []storage.Record) int {
	if recovery.HWM > uint64(len(appended)) || log.HWM() != recovery.HWM {
		t.Fatalf("recovered hwm %d (log %d), only %d appended", recovery.HWM, log.HWM(), len(appended))
	}
	var corrupt []uint64
	served := 0
	for offset := log.Oldest(); offset < log.HWM(); offset++ {
		record, err := log.Read(offset)
		if errors.Is(err, storage.ErrCorrupt) {
			corrupt = append(corrupt, offset)
			continue
		}
		if err != nil {
			t.Fatalf("read %d: %v", offset, err)
		}
		requireAppended(t, appended[offset], record, offset)
		served++
	}
	if uint64(len(corrupt)) != recovery.CorruptCount {
		t.Fatalf("%d offsets unreadable, recovery reported %d", len(corrupt), recovery.CorruptCount)
	}
	reported := corrupt[:min(len(corrupt), recoveryConfig().CorruptOffsetsReportedMax)]
	if len(reported) != len(recovery.CorruptOffsets) || (len(reported) > 0 && !equalOffsets(reported, recovery.CorruptOffsets)) {
		t.Fatalf("unreadable offsets %v, reported %v", reported, recovery.CorruptOffsets)
	}
	return served
}

// requireAppended fails unless got is exactly the record appended.
func requireAppended(t *testing.T, want, got storage.Record, offset uint64) {
	if want.TimeMs != got.TimeMs || !bytes.Equal(want.Key, got.Key) || !bytes.Equal(want.Payload, got.Payload) {
		t.Fatalf("offset %d served a record that was not appended there", offset)
	}
}

func equalOffsets(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func must(t *testing.T, err error) {
	if err != nil {
		t.Fatal(err)
	}
}
