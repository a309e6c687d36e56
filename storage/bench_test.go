package storage

import (
	"flag"
	"fmt"
	"os"
	"testing"
)

// Benchmarks of the partition log on the production FS, and of the raw
// write+fsync bandwidth of the same disk for comparison. Run them on a
// real disk: -benchdir points them at a directory (default b.TempDir()).
//
//	go test ./storage -run XXX -bench 'AppendSync|Read|RawFsync' -benchdir /path/on/disk

var benchDir = flag.String("benchdir", "", "directory for the storage benchmarks (default: b.TempDir())")

// benchRoot returns an empty directory on the benchmark disk.
func benchRoot(b *testing.B) string {
	if *benchDir == "" {
		return b.TempDir()
	}
	dir, err := os.MkdirTemp(*benchDir, "narad-storage-bench-") //determinism:ok
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { os.RemoveAll(dir) }) //determinism:ok
	return dir
}

var (
	benchRecordBytes = []int{256, 4 << 10}
	benchBatches     = []int{1, 10, 32, 1000}
)

// BenchmarkAppendSync appends batches of records and runs one sync round
// per batch: the group commit of the produce path.
func BenchmarkAppendSync(b *testing.B) {
	for _, recordBytes := range benchRecordBytes {
		for _, batch := range benchBatches {
			b.Run(fmt.Sprintf("record=%dB/batch=%d", recordBytes, batch), func(b *testing.B) {
				benchmarkAppendSync(b, recordBytes, batch)
			})
		}
	}
}

func benchmarkAppendSync(b *testing.B, recordBytes, batch int) {
	fs, err := NewOSFS(benchRoot(b))
	if err != nil {
		b.Fatal(err)
	}
	log, _, err := OpenLog(fs, "p", DefaultLogConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	record := Record{Key: []byte("benchmark-key"), TimeMs: 1, Payload: make([]byte, recordBytes-len("benchmark-key"))}
	b.SetBytes(int64(recordBytes * batch))
	b.ResetTimer()
	for b.Loop() {
		for range batch {
			if _, err := log.Append(record); err != nil {
				b.Fatal(err)
			}
		}
		if err := log.Sync(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
}

// BenchmarkRead reads a synced log sequentially, verifying every frame.
func BenchmarkRead(b *testing.B) {
	for _, recordBytes := range benchRecordBytes {
		b.Run(fmt.Sprintf("record=%dB", recordBytes), func(b *testing.B) {
			benchmarkRead(b, recordBytes)
		})
	}
}

func benchmarkRead(b *testing.B, recordBytes int) {
	const records = 20_000
	fs, err := NewOSFS(benchRoot(b))
	if err != nil {
		b.Fatal(err)
	}
	log, _, err := OpenLog(fs, "p", DefaultLogConfig())
	if err != nil {
		b.Fatal(err)
	}
	defer log.Close()
	for range records {
		if _, err := log.Append(Record{TimeMs: 1, Payload: make([]byte, recordBytes)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := log.Sync(); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(recordBytes))
	b.ResetTimer()
	offset := uint64(0)
	for b.Loop() {
		if _, err := log.Read(offset); err != nil {
			b.Fatal(err)
		}
		offset = (offset + 1) % records
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
}

// BenchmarkRawFsync measures the disk itself: one write of a batch's
// payload bytes to a plain file, then fsync, per iteration. It is the
// ceiling BenchmarkAppendSync is compared with.
func BenchmarkRawFsync(b *testing.B) {
	for _, recordBytes := range benchRecordBytes {
		for _, batch := range benchBatches {
			b.Run(fmt.Sprintf("record=%dB/batch=%d", recordBytes, batch), func(b *testing.B) {
				benchmarkRawFsync(b, recordBytes*batch)
			})
		}
	}
}

func benchmarkRawFsync(b *testing.B, batchBytes int) {
	file, err := os.Create(benchRoot(b) + "/raw") //determinism:ok
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	data := make([]byte, batchBytes)
	b.SetBytes(int64(batchBytes))
	b.ResetTimer()
	for b.Loop() {
		if _, err := file.Write(data); err != nil { //determinism:ok
			b.Fatal(err)
		}
		if err := file.Sync(); err != nil { //determinism:ok
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "syncs/s")
}

// BenchmarkSyncCommitted persists a moving committed consumer offset, as
// the node does every persist interval for each partition consumers ack.
//
//	go test ./storage -run XXX -bench SyncCommitted -benchdir /path/on/disk
func BenchmarkSyncCommitted(b *testing.B) {
	fs, err := NewOSFS(benchRoot(b))
	if err != nil {
		b.Fatal(err)
	}
	var log *Log
	defer func() {
		if log != nil {
			log.Close()
		}
	}()
	offset := uint64(0)
	for b.Loop() {
		offset = offset%benchCommittedLap + 1
		if offset == 1 { // the offset only moves forward: a new log each lap
			b.StopTimer()
			log = freshCommittedBenchLog(b, fs, log)
			b.StartTimer()
		}
		log.SetCommitted(offset)
		if err := log.SyncCommitted(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "persists/s")
}

// benchCommittedLap is how many records BenchmarkSyncCommitted's log
// holds: its offsets to commit before it starts on a new one.
const benchCommittedLap = 1 << 12

// freshCommittedBenchLog closes old (if any), deletes its partition and
// opens it again with benchCommittedLap synced records.
func freshCommittedBenchLog(b *testing.B, fs FS, old *Log) *Log {
	if old != nil {
		old.Close()
	}
	if err := DeletePartition(fs, "p"); err != nil {
		b.Fatal(err)
	}
	log, _, err := OpenLog(fs, "p", DefaultLogConfig())
	if err != nil {
		b.Fatal(err)
	}
	for range benchCommittedLap {
		if _, err := log.Append(Record{Payload: make([]byte, 16)}); err != nil {
			b.Fatal(err)
		}
	}
	if err := log.Sync(); err != nil {
		b.Fatal(err)
	}
	return log
}
