package storage

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// Store holds the open logs of one node, keyed by partition directory. It
// opens logs on demand, never more than its cap at once, and closes idle
// ones; the node calls it from its single loop, so it is not safe for
// concurrent use.
type Store struct {
	// fs and cfg are fixed at NewStore and used for every log.
	fs  FS
	cfg LogConfig
	// openMax caps the open logs (each holds file descriptors: its hwm
	// file and one per segment). Fixed at NewStore; at least 1.
	openMax int
	// open maps a directory to its open log. Invariant: every log in it is
	// open, and len(open) <= openMax except after an Adopt, which may
	// overshoot by one until the next eviction, or a LogPastCap, which
	// overshoots by as many logs as its caller opened that way (the caller
	// bounds them). Changed by Log, LogPastCap, Adopt, CloseIdle, Close,
	// Evict and CloseAll (closeOpen); iterated in sorted key order
	// (LeastRecent walks recency instead).
	open map[string]*storeEntry
	// recency is the ring of open's entries in the order of their latest
	// use (Log, LogPastCap, Adopt), least recent first: recency.next is
	// the least recently used, recency.previous the most. The ring holds
	// exactly the entries of open; recency itself is its sentinel, holding
	// no log. Changed with open, by add, use and closeOpen.
	recency storeEntry
	// lastUseFloorMs is at most the lastUseMs of every open log (uses only
	// raise those): CloseIdle skips its scan of the open logs while no
	// log can be idle yet. math.MaxInt64 with no log open. Lowered by
	// add, recomputed by CloseIdle's scan.
	lastUseFloorMs int64
	// ensured holds the directories whose entries in their parents this
	// Store made durable (ensureDirKnown, by an open or EnsureDir): a log
	// reopened there (after an eviction, say) syncs no directory, and a
	// partition's first open syncs only what is new above it. An entry
	// of a removed directory lingers until ensureDirKnown finds it missing
	// and drops it, before making it again. At most ensuredDirsMax
	// entries: cleared when full. Changed by openNew and EnsureDir only.
	ensured map[string]struct{}
	// recoveryBuffer is the read window every recovery of an open reuses
	// (up to 2×FrameBytesMax; nothing an open log holds points into it).
	// Only openNew changes it.
	recoveryBuffer []byte
	// kept maps a directory to the log an eviction or idle close closed
	// cleanly there, kept for a warm reopen (reopen.go); keptOrder rings
	// them least recently closed first (its sentinel holds no log), and
	// keptBytes sums their keptBytes. Invariant: keptBytes <= keptBytesMax
	// (fixed at NewStore; 0 keeps nothing), no directory is both open and
	// kept, and every kept log is reopenable and not spent. Changed by
	// keep, forget and openNew.
	kept         map[string]*storeEntry
	keptOrder    storeEntry
	keptBytes    int64
	keptBytesMax int64
}

// storeEntry is one open log and when it was last used, or one kept
// closed (Store.kept).
type storeEntry struct {
	// dir is the entry's key in Store.open (or Store.kept).
	dir string
	log *Log
	// lastUseMs is the nowMs of the latest Store.Log call for it.
	lastUseMs int64
	// keptBytes is the log's keptBytes while it is kept.
	keptBytes int64
	// previous and next link the entry into Store.recency, the order of
	// latest uses (unlike the clock, it tells apart uses within one
	// millisecond), or into Store.keptOrder; only the Store's link and
	// unlink change them.
	previous, next *storeEntry
}

// link puts entry at the most recent end of the recency ring.
func (s *Store) link(entry *storeEntry) { linkLast(&s.recency, entry) }

// linkLast puts entry at the most recent end of the ring of ring.
func linkLast(ring, entry *storeEntry) {
	last := ring.previous
	entry.previous, entry.next = last, ring
	last.next, ring.previous = entry, entry
}

// unlink takes entry out of its ring (recency or keptOrder).
func (s *Store) unlink(entry *storeEntry) {
	entry.previous.next, entry.next.previous = entry.next, entry.previous
	entry.previous, entry.next = nil, nil
}

// ErrOpenLogsFull: the Store holds its cap of open logs; close one first.
var ErrOpenLogsFull = errors.New("storage: open logs at their cap")

// NewStore returns an empty store opening logs with cfg, at most openMax
// (at least 1) at once, keeping logs it closes for a warm reopen within
// keptBytesMax of memory (0: none).
func NewStore(fs FS, cfg LogConfig, openMax int, keptBytesMax int64) *Store {
	assert(openMax >= 1 && keptBytesMax >= 0, "store with an open-log cap of %d, %d bytes of kept logs", openMax, keptBytesMax)
	s := &Store{fs: fs, cfg: cfg, openMax: openMax, open: make(map[string]*storeEntry), lastUseFloorMs: math.MaxInt64,
		ensured: make(map[string]struct{}), kept: make(map[string]*storeEntry), keptBytesMax: keptBytesMax}
	s.recency.previous, s.recency.next = &s.recency, &s.recency
	s.keptOrder.previous, s.keptOrder.next = &s.keptOrder, &s.keptOrder
	return s
}

// Log returns the open log of dir, opening (and recovering) it if needed,
// and records nowMs as its last use. The Recovery is zero when the log was
// already open. Opening a log while the cap is reached fails with
// ErrOpenLogsFull: the caller chooses what to close (LeastRecent, then Close).
func (s *Store) Log(dir string, nowMs int64) (*Log, Recovery, error) {
	if log, ok := s.Use(dir, nowMs); ok {
		return log, Recovery{}, nil
	}
	if s.Full() {
		return nil, Recovery{}, fmt.Errorf("%w (%d)", ErrOpenLogsFull, s.openMax)
	}
	return s.openNew(dir, nowMs)
}

// Use records a use of dir's log at nowMs and returns it, if it is open;
// it opens nothing.
func (s *Store) Use(dir string, nowMs int64) (*Log, bool) {
	entry, ok := s.open[dir]
	if !ok {
		return nil, false
	}
	entry.lastUseMs = max(entry.lastUseMs, nowMs)
	if s.recency.previous != entry {
		s.unlink(entry)
		s.link(entry)
	}
	return entry.log, true
}

// openNew opens dir's log and adds it, used at nowMs: warm, from the
// log kept there if the directory is as it left it, else by recovery.
func (s *Store) openNew(dir string, nowMs int64) (*Log, Recovery, error) {
	if entry, ok := s.kept[dir]; ok {
		s.forget(dir)
		log, ok, err := entry.log.reopen()
		if err != nil {
			return nil, Recovery{}, err
		}
		if ok {
			s.add(dir, log, nowMs)
			return log, log.warmRecovery(), nil
		}
	}
	s.boundEnsured()
	log, recovery, err := openLog(s.fs, dir, s.cfg, &s.recoveryBuffer, s.ensured)
	if err != nil {
		return nil, Recovery{}, err
	}
	s.add(dir, log, nowMs)
	return log, recovery, nil
}

// keep keeps log, just closed from dir, for a warm reopen, if its close
// left it reopenable: the least recently closed kept logs go to make room
// within keptBytesMax, and a log larger than all of it is not kept.
func (s *Store) keep(dir string, log *Log) {
	if !log.reopenable {
		return
	}
	bytes := log.indexBytes()
	if bytes > s.keptBytesMax {
		return
	}
	for s.keptBytes+bytes > s.keptBytesMax {
		assert(len(s.kept) > 0, "kept logs: %d bytes counted and none kept", s.keptBytes)
		s.forget(s.keptOrder.next.dir)
	}
	entry := &storeEntry{dir: dir, log: log, keptBytes: bytes}
	s.kept[dir] = entry
	linkLast(&s.keptOrder, entry)
	s.keptBytes += bytes
}

// forget drops the log kept for dir, if any.
func (s *Store) forget(dir string) {
	entry, ok := s.kept[dir]
	if !ok {
		return
	}
	delete(s.kept, dir)
	s.unlink(entry)
	s.keptBytes -= entry.keptBytes
}

// CloseUnder closes (Close) every open log of dir and of the directories
// below it, in sorted order, and forgets the logs kept there: a topic's
// directory, going with its partitions'. Errors of logs closed already
// are dropped; the others are joined.
func (s *Store) CloseUnder(dir string) error {
	under := func(other string) bool { return other == dir || strings.HasPrefix(other, dir+"/") }
	for kept := range s.kept { //determinism:ok forgetting is order-free and has no output
		if under(kept) {
			s.forget(kept)
		}
	}
	var errs []error
	for _, open := range s.OpenDirs() {
		if !under(open) {
			continue
		}
		if err := s.Close(open); err != nil && !errors.Is(err, ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Kept reports how many closed logs the Store keeps for a warm reopen,
// and the memory they hold (at most the keptBytesMax of NewStore).
func (s *Store) Kept() (logs int, bytes int64) { return len(s.kept), s.keptBytes }

// EnsureDir creates dir and its missing ancestors and makes their entries
// durable, syncing only those this Store did not make durable before (a
// node stamps a partition's directory before its log's first open there,
// and a move's staged copy).
func (s *Store) EnsureDir(dir string) error {
	s.boundEnsured()
	return ensureDirKnown(s.fs, dir, s.ensured)
}

// boundEnsured empties Store.ensured when it is full: it only spares
// syncs, so forgetting costs a few of them again.
func (s *Store) boundEnsured() {
	if len(s.ensured) >= ensuredDirsMax {
		clear(s.ensured)
	}
}

// ensuredDirsMax bounds Store.ensured: a few times the partitions a node
// may hold (node.Config.PartitionsPerNodeMax, 20,000 by default) with
// their topics' directories: at most about 20 MB of names at the longest
// (255-byte topic names), a few MB as topics are usually named.
const ensuredDirsMax = 65_536

// add makes log the open log of dir, used at nowMs: the one place an
// entry joins open, so the floor of last uses stays a lower bound.
func (s *Store) add(dir string, log *Log, nowMs int64) {
	entry := &storeEntry{dir: dir, log: log, lastUseMs: nowMs}
	s.open[dir] = entry
	s.link(entry)
	s.lastUseFloorMs = min(s.lastUseFloorMs, nowMs)
}

// LogPastCap is Log without the cap: the caller opens a log past it
// because every open one must stay open for now, and bounds how far it
// goes (the node: the partitions of one produce, closed back under the
// cap once they are synced; PastCap tells when).
func (s *Store) LogPastCap(dir string, nowMs int64) (*Log, Recovery, error) {
	if log, ok := s.Use(dir, nowMs); ok {
		return log, Recovery{}, nil
	}
	return s.openNew(dir, nowMs)
}

// Full reports whether opening one more log would exceed the cap.
func (s *Store) Full() bool { return len(s.open) >= s.openMax }

// PastCap reports whether more logs are open than the cap allows.
func (s *Store) PastCap() bool { return len(s.open) > s.openMax }

// OpenMax is the cap of open logs.
func (s *Store) OpenMax() int { return s.openMax }

// LeastRecent returns the least recently used open log that can be closed
// without losing anything (neither Dirty nor CommittedDirty) and that
// keep does not claim; ok is false when there is none. It walks the
// recency ring from its least recent end, so it looks at the logs in use
// (a round's, usually few) and stops at the first it may close, where a
// scan of every open log cost each open past the cap thousands of checks.
func (s *Store) LeastRecent(keep func(dir string) bool) (dir string, ok bool) {
	for entry := s.recency.next; entry != &s.recency; entry = entry.next {
		if entry.log.Dirty() || entry.log.CommittedDirty() || keep(entry.dir) {
			continue
		}
		return entry.dir, true
	}
	return "", false
}

// CloseIdle closes the logs unused for at least idleMs that have nothing
// to sync (neither Dirty nor CommittedDirty), and returns their
// directories, sorted. Close errors are joined; the log is dropped anyway.
// The node calls it on every tick and a log is rarely idle, so it does
// not look at the open logs until the least recently used may be idle
// (lastUseFloorMs), and sorts the idle directories only, not every open
// one.
func (s *Store) CloseIdle(nowMs, idleMs int64) ([]string, error) {
	if idleMs <= 0 { // guarded: the arguments would allocate on every call
		assert(false, "idle close with a non-positive idle time %d ms", idleMs)
	}
	if nowMs-s.lastUseFloorMs < idleMs {
		return nil, nil
	}
	var closed []string
	s.lastUseFloorMs = math.MaxInt64
	for dir, entry := range s.open { //determinism:ok sorted below, before any is closed; a minimum
		if nowMs-entry.lastUseMs >= idleMs && !entry.log.Dirty() && !entry.log.CommittedDirty() {
			closed = append(closed, dir)
			continue
		}
		s.lastUseFloorMs = min(s.lastUseFloorMs, entry.lastUseMs)
	}
	slices.Sort(closed)
	var errs []error
	for _, dir := range closed {
		errs = append(errs, s.Evict(dir))
	}
	return closed, errors.Join(errs...)
}

// Close closes the log of dir if it is open, and forgets any log kept for
// a warm reopen there: whoever removes or replaces a partition directory
// closes it first.
func (s *Store) Close(dir string) error {
	s.forget(dir)
	_, err := s.closeOpen(dir)
	return err
}

// Evict closes the log of dir, if it is open, to make room or because it
// is idle: the directory stays as it is, so the log is kept for a warm
// reopen when its close left it reopenable.
func (s *Store) Evict(dir string) error {
	log, err := s.closeOpen(dir)
	if log != nil && err == nil {
		s.keep(dir, log)
	}
	return err
}

// closeOpen closes the open log of dir and returns it (nil if none).
func (s *Store) closeOpen(dir string) (*Log, error) {
	entry, ok := s.open[dir]
	if !ok {
		return nil, nil
	}
	delete(s.open, dir)
	s.unlink(entry)
	if err := entry.log.Close(); err != nil {
		return entry.log, fmt.Errorf("storage: closing %s: %w", dir, err)
	}
	return entry.log, nil
}

// CloseAll closes every open log (without syncing), forgets the kept
// ones, and joins the errors.
func (s *Store) CloseAll() error {
	var errs []error
	for _, dir := range s.OpenDirs() {
		errs = append(errs, s.Close(dir))
	}
	for len(s.kept) > 0 {
		s.forget(s.keptOrder.next.dir)
	}
	return errors.Join(errs...)
}

// IsOpen reports whether the log of dir is open.
func (s *Store) IsOpen(dir string) bool {
	_, open := s.open[dir]
	return open
}

// ZeroTailBytes sums the zero tails of the open logs (Log.ZeroTailBytes):
// disk preallocated ahead of their frames.
func (s *Store) ZeroTailBytes() int64 {
	var total int64
	for entry := s.recency.next; entry != &s.recency; entry = entry.next {
		total += entry.log.ZeroTailBytes()
	}
	return total
}

// OpenIndexBytes is the memory the open logs' indexes hold: 4 bytes a
// record and a few hundred bytes a segment, as a kept log's
// (Log.indexBytes). The open-log cap bounds how many logs hold one, not
// their size: this is the figure an operator watches.
func (s *Store) OpenIndexBytes() int64 {
	var total int64
	for entry := s.recency.next; entry != &s.recency; entry = entry.next {
		total += entry.log.indexBytes()
	}
	return total
}

// OpenDirs returns the directories of the open logs, sorted.
func (s *Store) OpenDirs() []string {
	return slices.Sorted(maps.Keys(s.open))
}

// Adopt adds a log the caller opened (a move's verified copy, see
// OpenVerified) as the open log of dir. It fails if dir has one already.
// It does not check the cap (the log is open already): the caller makes
// room at once (the node closes its least recently used logs past the
// cap, LogPastCap and Close).
func (s *Store) Adopt(dir string, log *Log, nowMs int64) error {
	if _, ok := s.open[dir]; ok {
		return fmt.Errorf("storage: adopt %s: a log is open there already", dir)
	}
	s.forget(dir)
	s.add(dir, log, nowMs)
	return nil
}
