package host

import (
	"errors"
	"log/slog"
	"os"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
)

// Room for the metastore on a full disk. The disk reserve
// (storage.disk_reserve_bytes) holds back only the node's own records;
// when other programs fill the file system, the node's next metastore
// write that needs a new block fails and stops the node, and every node
// writes its metastore while idle (the members' heartbeats), so a full
// disk stopped an idle node within seconds (measured: 2 s after dd
// filled a 300 MB ext4). bbolt writes its file copy-on-write, growing it
// (a truncate up, whose tail has no blocks yet) and reusing the pages
// it freed: the writes that need new blocks are those past what the file
// ever held. So the loop keeps metaStoreAheadBytes allocated past the
// file's end (fallocate with FALLOC_FL_KEEP_SIZE: the blocks are the
// file's, its size is bbolt's), topped up once a second (checkDisk)
// whenever less than metaStoreAheadLowBytes is left, and bbolt's growth
// lands in blocks the file already has. While the disk stays full the
// node keeps heartbeating, serving reads, consumes and acks and applying
// metadata changes, for as long as that room lasts.
const (
	// metaStoreAheadBytes is the disk allocated past the end of the
	// metastore's file after a top-up. It covers bbolt's largest growth
	// step from the sizes at which a top-up runs: a file of up to 16 MiB
	// grows to twice its size, a larger one by 16 MiB past its need.
	metaStoreAheadBytes = 32 << 20
	// metaStoreAheadLowBytes is the room past the end under which the
	// next check tops it up.
	metaStoreAheadLowBytes = metaStoreAheadBytes / 2
)

// metaRoom keeps the metastore's file allocated ahead of its end. Only
// the loop's goroutine calls keep.
type metaRoom struct {
	// path is the metastore's bbolt file.
	path string
	// ahead is the room allocated past the file's end at the last check
	// (0 when it has none, or holes); read by /metrics.
	ahead atomic.Int64
	// unsupported is set once the file system refused fallocate as not
	// supported: the node runs without the room, as it did before, and
	// said so once.
	unsupported bool
	// failing is set while top-ups fail (a full disk, an I/O error): the
	// first failure of a streak is a warning, its end an info line.
	failing bool
}

// keep tops up the room past the file's end when it is under
// metaStoreAheadLowBytes, and records what there is.
func (r *metaRoom) keep(logger *slog.Logger) {
	if r.unsupported {
		return
	}
	file, err := os.OpenFile(r.path, os.O_RDWR, 0)
	if err != nil {
		r.failed(logger, err)
		return
	}
	defer file.Close()
	size, allocated, err := allocation(file)
	if err != nil {
		r.failed(logger, err)
		return
	}
	if allocated < size+metaStoreAheadLowBytes {
		err = unix.Fallocate(int(file.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size+metaStoreAheadBytes)
		if grown, now, statErr := allocation(file); statErr == nil {
			size, allocated = grown, now
		}
	}
	r.ahead.Store(max(allocated-size, 0))
	switch {
	case errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS):
		r.unsupported = true
		logger.Info("the data directory's file system cannot allocate the metastore's room ahead (fallocate): "+
			"a full disk stops the node at its next metastore write that needs a new block", "file", r.path, "error", err)
	case err != nil:
		r.failed(logger, err)
	case r.failing:
		r.failing = false
		logger.Info("the metastore's room ahead is allocated again", "file", r.path, "ahead_bytes", allocated-size)
	}
}

// register publishes the room as narad_metastore_room_ahead_bytes.
func (r *metaRoom) register(reg prometheus.Registerer) {
	reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "narad", Name: "metastore_room_ahead_bytes",
		Help: "Disk allocated past the end of the metastore's file at the last check (about once a second), topped up to 32 MiB when under 16 MiB: " +
			"what the metastore can still grow by on a full disk. 0 where the file system cannot allocate ahead."},
		func() float64 { return float64(r.ahead.Load()) }))
}

// failed records a top-up that failed.
func (r *metaRoom) failed(logger *slog.Logger, err error) {
	if !r.failing {
		logger.Warn("cannot allocate the metastore's room ahead (fallocate); retrying every second: "+
			"the node stops at its next metastore write past the room it has", "file", r.path, "ahead_bytes", r.ahead.Load(), "error", err)
	}
	r.failing = true
}

// allocation returns a file's size and the bytes of disk allocated to it
// (blocks past its end included).
func allocation(file *os.File) (size, allocated int64, err error) {
	var stat unix.Stat_t
	if err := unix.Fstat(int(file.Fd()), &stat); err != nil {
		return 0, 0, err
	}
	return stat.Size, stat.Blocks * 512, nil
}
