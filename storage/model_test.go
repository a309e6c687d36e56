package storage

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// logModel is the deliberately naive model of a partition log: a slice of
// every record at its offset, and the few numbers the properties need.
type logModel struct {
	// fs is the file system under test; memFS is the same one when it is a
	// MemFS (crash and fault actions need it), else nil.
	fs    FS
	memFS *MemFS
	log   *Log
	cfg   LogConfig
	// records[i] is the record appended at offset i; len(records) == Next.
	records []Record
	// hwm is the highest HWM seen: the visible prefix, which must never
	// shrink, across crashes included.
	hwm uint64
	// acknowledged is the Next of the last successful Sync: every record
	// below it must survive any crash.
	acknowledged uint64
	// oldest is the log's Oldest, moved only by retention.
	oldest uint64
	// committedSynced is the last committed offset SyncCommitted made
	// durable; after a reopen the committed offset is at least this.
	committedSynced uint64
	// nowMs is the model clock; every append moves it forward.
	nowMs int64
}

// TestLogModel runs random sequences of log operations, crashes (with
// tears chosen by rapid, so shrinking can remove them) and injected sync
// failures against the model. Properties: a record whose Sync completed is
// never lost; the visible prefix never shrinks; Read returns exactly the
// record appended at that offset or a defined error; the committed offset
// after a reopen is at least the last synced one.
func TestLogModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		memFS := newLogMemFS(rapid.Uint64().Draw(t, "seed"))
		runLogModel(t, &logModel{fs: memFS, memFS: memFS})
	})
}

// TestLogModelOS runs the same model on the production FS, without the
// crash and fault actions only MemFS can perform, so both file systems
// satisfy one contract.
func TestLogModelOS(t *testing.T) {
	root := t.TempDir()
	runs := 0
	rapid.Check(t, func(t *rapid.T) {
		runs++
		fs, err := NewOSFS(filepath.Join(root, fmt.Sprint(runs)))
		require.NoError(t, err)
		runLogModel(t, &logModel{fs: fs})
	})
}

// runLogModel opens the log and runs random actions against the model.
func runLogModel(t *rapid.T, m *logModel) {
	m.cfg, m.nowMs = smallLogConfig(), 1_000
	m.cfg.WriteBufferBytesMax = rapid.IntRange(1, 2_000).Draw(t, "writeBufferBytes")
	log, recovery, err := OpenLog(m.fs, "topics/t/p00000", m.cfg)
	require.NoError(t, err)
	require.Equal(t, uint64(0), recovery.HWM)
	m.log = log
	actions := map[string]func(*rapid.T){
		"append":        m.append,
		"sync":          m.sync,
		"read":          m.read,
		"setCommitted":  m.setCommitted,
		"syncCommitted": m.syncCommitted,
		"reopen":        m.reopen,
		"retention":     m.retention,
		"":              m.check,
	}
	if m.memFS != nil {
		actions["crash"] = m.crashAndReopen
		actions["failSync"] = m.failSync
	}
	t.Repeat(actions)
}

// append appends a batch of records of random sizes (empty keys and
// payloads included); batches make the logs long enough to roll segments
// and give retention something to delete.
func (m *logModel) append(t *rapid.T) {
	for range rapid.IntRange(1, 20).Draw(t, "batch") {
		m.appendOne(t)
	}
}

func (m *logModel) appendOne(t *rapid.T) {
	m.nowMs += rapid.Int64Range(0, 50).Draw(t, "elapsedMs")
	key := rapid.SliceOfN(rapid.Byte(), 0, 16).Draw(t, "key")
	payloadBytes := rapid.OneOf(rapid.IntRange(0, 64), rapid.IntRange(0, m.cfg.RecordBytesMax-len(key))).Draw(t, "payloadBytes")
	record := Record{Key: key, TimeMs: m.nowMs, Payload: bytes.Repeat([]byte{byte(len(m.records))}, payloadBytes)}
	offset, err := m.log.Append(record)
	require.NoError(t, err)
	require.Equal(t, uint64(len(m.records)), offset)
	m.records = append(m.records, record)
}

func (m *logModel) sync(t *rapid.T) {
	require.NoError(t, m.log.Sync())
	require.Equal(t, uint64(len(m.records)), m.log.HWM(), "a sync round covers everything appended")
	m.acknowledged = m.log.HWM()
	m.hwm = m.log.HWM()
}

func (m *logModel) read(t *rapid.T) {
	offset := rapid.Uint64Range(0, uint64(len(m.records))+2).Draw(t, "offset")
	got, err := m.log.Read(offset)
	switch {
	case offset < m.oldest:
		require.ErrorIs(t, err, ErrAgedOut)
	case offset >= m.log.HWM():
		require.ErrorIs(t, err, ErrBeyondHWM)
	default:
		require.NoError(t, err, "offset %d", offset)
		requireSameRecord(t, m.records[offset], got, "offset %d", offset)
	}
}

func (m *logModel) setCommitted(t *rapid.T) {
	offset := rapid.Uint64Range(m.log.Committed(), m.log.HWM()).Draw(t, "committed")
	m.log.SetCommitted(offset)
}

func (m *logModel) syncCommitted(t *rapid.T) {
	require.NoError(t, m.log.SyncCommitted())
	m.committedSynced = m.log.Committed()
	require.False(t, m.log.CommittedDirty())
}

// failSync injects a failed fsync into a sync round: the log must fail,
// then the node crashes and recovers, losing nothing acknowledged.
func (m *logModel) failSync(t *rapid.T) {
	if !m.log.Dirty() {
		t.Skip("nothing to sync")
	}
	op := rapid.SampledFrom([]FaultOp{FaultSync, FaultWrite, FaultSyncDir}).Draw(t, "faultOp")
	m.memFS.FailNext(op, errInjectedSync, 1)
	err := m.log.Sync()
	m.memFS.ClearFaults()
	if err == nil {
		m.acknowledged, m.hwm = m.log.HWM(), m.log.HWM() // the fault hit nothing this round used
		return
	}
	require.ErrorIs(t, err, ErrLogFailed)
	_, err = m.log.Append(Record{})
	require.ErrorIs(t, err, ErrLogFailed, "fail-stop")
	m.crashAndReopen(t)
}

// crashAndReopen loses power (rapid draws how much of each unsynced write
// survives) and recovers.
func (m *logModel) crashAndReopen(t *rapid.T) {
	m.memFS.CrashWith(func(name string, writeBytes int64) int64 {
		return rapid.Int64Range(0, writeBytes).Draw(t, "keptBytes")
	})
	m.recover(t)
}

// reopen closes the log (a clean shutdown without a final Sync) and
// recovers it.
func (m *logModel) reopen(t *rapid.T) {
	require.NoError(t, m.log.Close())
	m.recover(t)
}

// recover opens the log again and checks what survived against the model.
func (m *logModel) recover(t *rapid.T) {
	log, recovery, err := OpenLog(m.fs, "topics/t/p00000", m.cfg)
	require.NoError(t, err)
	m.log = log
	require.Zero(t, recovery.CorruptCount, "a crash without bit rot corrupts nothing")
	require.Zero(t, recovery.LostAcknowledged)
	require.GreaterOrEqual(t, recovery.HWM, m.acknowledged, "an acknowledged record was lost")
	require.GreaterOrEqual(t, recovery.HWM, m.hwm, "the visible prefix shrank")
	require.LessOrEqual(t, recovery.HWM, uint64(len(m.records)), "recovery invented records")
	require.Equal(t, m.oldest, log.Oldest())
	require.GreaterOrEqual(t, log.Committed(), m.committedSynced, "a synced committed offset went back")
	m.records = m.records[:recovery.HWM]
	m.hwm, m.acknowledged = recovery.HWM, recovery.HWM
	m.committedSynced = log.Committed()
	for offset := m.oldest; offset < recovery.HWM; offset++ {
		got, err := log.Read(offset)
		require.NoError(t, err, "offset %d", offset)
		requireSameRecord(t, m.records[offset], got, "offset %d after recovery", offset)
	}
}

func (m *logModel) retention(t *rapid.T) {
	retentionMs := rapid.Int64Range(0, 2_000).Draw(t, "retentionMs")
	committedBefore := m.log.Committed()
	result, err := m.log.ApplyRetention(m.nowMs, retentionMs)
	require.NoError(t, err)
	newOldest := m.log.Oldest()
	require.GreaterOrEqual(t, newOldest, m.oldest)
	require.LessOrEqual(t, newOldest, m.log.HWM(), "retention deleted a record above the hwm")
	require.Equal(t, newOldest-m.oldest, result.RecordsDeleted)
	for offset := m.oldest; offset < newOldest; offset++ {
		require.Less(t, m.records[offset].TimeMs, m.nowMs-retentionMs, "offset %d deleted before it expired", offset)
	}
	require.Equal(t, max(committedBefore, newOldest)-committedBefore, result.UnackedDropped)
	m.oldest = newOldest
}

// check runs after every action.
func (m *logModel) check(t *rapid.T) {
	stats := m.log.Stats()
	require.Equal(t, uint64(len(m.records)), stats.Next)
	require.LessOrEqual(t, stats.HWM, stats.Next)
	require.GreaterOrEqual(t, stats.HWM, m.hwm, "the hwm moved back")
	require.Equal(t, m.oldest, stats.Oldest)
	require.LessOrEqual(t, m.log.Committed(), stats.HWM)
	require.GreaterOrEqual(t, m.log.Committed(), stats.Oldest)
	require.Equal(t, stats.Next > stats.HWM, m.log.Dirty())
	m.hwm = stats.HWM
	if errors.Is(m.log.usable(), ErrLogFailed) {
		t.Fatalf("log left failed after an action")
	}
}
