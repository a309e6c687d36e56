package storage

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// System call numbers and flags of linux/amd64 that package syscall does
// not name.
const (
	sysPwritev2 = 328 // pwritev2(2)
	rwfDSync    = 0x2 // RWF_DSYNC: this write is durable when the call returns
	// rusageThread is RUSAGE_THREAD: getrusage(2) of the calling thread.
	rusageThread = 1
)

// BenchmarkDurableWrite compares the ways to make a small write durable
// on the benchmark disk, each overwriting zeros written and synced
// beforehand (as the log's zero tail does, so no call changes the file's
// size): write then fdatasync (what the log does), pwritev2 with
// RWF_DSYNC (one call), a write to a file opened O_DSYNC, and fdatasync
// alone with nothing written. Besides time it reports the CPU time of
// the calling thread per durable write, user and system, which is what a
// busy broker pays.
//
//	go test ./storage -run XXX -bench DurableWrite -benchdir /path/on/disk
func BenchmarkDurableWrite(b *testing.B) {
	for _, writeBytes := range []int{256, 4 << 10, 64 << 10} {
		for _, mode := range []string{"write+fdatasync", "pwritev2-dsync", "o_dsync", "fdatasync-only"} {
			b.Run(fmt.Sprintf("%s/%dB", mode, writeBytes), func(b *testing.B) {
				benchmarkDurableWrite(b, mode, writeBytes)
			})
		}
	}
}

// durableWriteSpanBytes is the zeroed span the writes of one run cycle
// through.
const durableWriteSpanBytes = 64 << 20

func benchmarkDurableWrite(b *testing.B, mode string, writeBytes int) {
	flags := os.O_CREATE | os.O_RDWR
	if mode == "o_dsync" {
		flags |= syscall.O_DSYNC
	}
	file, err := os.OpenFile(benchRoot(b)+"/durable", flags, 0o644) //determinism:ok
	if err != nil {
		b.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteAt(make([]byte, durableWriteSpanBytes), 0); err != nil { //determinism:ok
		b.Fatal(err)
	}
	if err := file.Sync(); err != nil { //determinism:ok
		b.Fatal(err)
	}
	fd, data := int(file.Fd()), make([]byte, writeBytes)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	startCPU := threadCPU()
	b.ResetTimer()
	offset := int64(0)
	for b.Loop() {
		if err := durableWrite(mode, fd, data, offset); err != nil {
			b.Fatal(err)
		}
		offset = (offset + int64(writeBytes)) % (durableWriteSpanBytes - int64(writeBytes))
	}
	b.ReportMetric(float64((threadCPU()-startCPU).Microseconds())/float64(b.N), "cpu-µs/op")
}

// durableWrite makes data durable at offset of fd the way mode says.
func durableWrite(mode string, fd int, data []byte, offset int64) error {
	switch mode {
	case "pwritev2-dsync":
		vector := syscall.Iovec{Base: &data[0]}
		vector.SetLen(len(data))
		_, _, errno := syscall.Syscall6(sysPwritev2, uintptr(fd), uintptr(unsafe.Pointer(&vector)), 1,
			uintptr(offset), uintptr(offset>>32), rwfDSync) //determinism:ok
		if errno != 0 {
			return errno
		}
		return nil
	case "fdatasync-only":
		return syscall.Fdatasync(fd) //determinism:ok
	}
	if _, err := syscall.Pwrite(fd, data, offset); err != nil { //determinism:ok
		return err
	}
	if mode == "write+fdatasync" {
		return syscall.Fdatasync(fd) //determinism:ok
	}
	return nil // o_dsync: the write itself was durable
}

// threadCPU is the user and system CPU time of the calling thread.
func threadCPU() time.Duration {
	var usage syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &usage); err != nil { //determinism:ok
		panic(err)
	}
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}
