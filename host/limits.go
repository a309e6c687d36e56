package host

import (
	"fmt"
	"syscall"
	"time"

	"narad/msg"
	"narad/storage"
)

// The descriptor budget. A node's descriptors go mostly to open partition
// logs and to HTTP connections; the rest (peers, the metastore, listeners,
// files opened briefly) fit in what these shares leave.
const (
	// descriptorsPerLogBudget is what one open partition log is budgeted:
	// the files it holds open (storage.LogFilesOpenMax: its hwm file, its
	// active segment and the few sealed ones it keeps open) and a consumer
	// offset file being written.
	descriptorsPerLogBudget = storage.LogFilesOpenMax + 1
	// logsShareDivisor: open logs may use 1/2 of the descriptor limit.
	logsShareDivisor = 2
	// openLogsDerivedMin and openLogsDerivedMax clamp the derived cap of
	// open logs.
	openLogsDerivedMin = 16
	openLogsDerivedMax = 65_536
)

// descriptorLimit is the process's soft RLIMIT_NOFILE (the Go runtime
// raises it to the hard limit at start).
func descriptorLimit() (uint64, error) {
	var limit syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &limit); err != nil {
		return 0, fmt.Errorf("read the descriptor limit: %w", err)
	}
	return limit.Cur, nil
}

// logsDescriptorShare is how many open logs fit in the logs' share of a
// descriptor limit.
func logsDescriptorShare(limit uint64) uint64 {
	return limit / logsShareDivisor / descriptorsPerLogBudget
}

// openLogsOverdraft is how many logs one produce may open past the cap of
// open logs (its own partitions, until its sync round: node's
// makeRoomForLog): at most one per record and one per partition of its
// topic.
func openLogsOverdraft(partitionsMax int) uint64 {
	return uint64(min(partitionsMax, msg.ProduceBatchRecordsMax))
}

// openLogsCap derives the cap of open logs from the descriptor limit
// when configured is 0, and refuses a configured cap the limit cannot
// hold. The logs' share of the limit holds the cap plus the overdraft of
// one produce (openLogsOverdraft).
func openLogsCap(configured int, overdraft, limit uint64) (int, error) {
	share := logsDescriptorShare(limit)
	room := share - min(share, overdraft)
	if configured == 0 {
		return int(min(max(room, openLogsDerivedMin), openLogsDerivedMax)), nil
	}
	if uint64(configured) > room {
		return 0, fmt.Errorf("storage.open_logs_max %d, plus the %d logs one produce may open past it, needs about %d file descriptors, "+
			"more than half the process limit %d: raise the limit (ulimit -n) or lower the setting (at most %d here)",
			configured, overdraft, (uint64(configured)+overdraft)*descriptorsPerLogBudget, limit, room)
	}
	return configured, nil
}

// The optional profiling server's (Options.PprofAddr) bounds on slow and
// idle clients.
const (
	pprofHeaderTimeout = 10 * time.Second
	pprofIdleTimeout   = 60 * time.Second
)
