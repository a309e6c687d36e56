package storage

import (
	"errors"
	"fmt"
	"maps"
	"slices"
)

// Store holds the open logs of one node, keyed by partition directory. It
// opens logs on demand and closes idle ones; the node calls it from its
// single loop, so it is not safe for concurrent use.
type Store struct {
	// fs and cfg are fixed at NewStore and used for every log.
	fs  FS
	cfg LogConfig
	// open maps a directory to its open log. Invariant: every log in it is
	// open. Changed by Log, CloseIdle, Close and CloseAll; iterated in
	// sorted key order only.
	open map[string]*storeEntry
}

// storeEntry is one open log and when it was last used.
type storeEntry struct {
	log *Log
	// lastUseMs is the nowMs of the latest Store.Log call for it.
	lastUseMs int64
}

// NewStore returns an empty store opening logs with cfg.
func NewStore(fs FS, cfg LogConfig) *Store {
	return &Store{fs: fs, cfg: cfg, open: make(map[string]*storeEntry)}
}

// Log returns the open log of dir, opening (and recovering) it if needed,
// and records nowMs as its last use. The Recovery is zero when the log was
// already open.
func (s *Store) Log(dir string, nowMs int64) (*Log, Recovery, error) {
	if entry, ok := s.open[dir]; ok {
		entry.lastUseMs = max(entry.lastUseMs, nowMs)
		return entry.log, Recovery{}, nil
	}
	log, recovery, err := OpenLog(s.fs, dir, s.cfg)
	if err != nil {
		return nil, Recovery{}, err
	}
	s.open[dir] = &storeEntry{log: log, lastUseMs: nowMs}
	return log, recovery, nil
}

// CloseIdle closes the logs unused for at least idleMs that have nothing
// to sync (neither Dirty nor CommittedDirty), and returns their
// directories, sorted. Close errors are joined; the log is dropped anyway.
func (s *Store) CloseIdle(nowMs, idleMs int64) ([]string, error) {
	assert(idleMs > 0, "idle close with a non-positive idle time %d ms", idleMs)
	var closed []string
	var errs []error
	for _, dir := range s.OpenDirs() {
		entry := s.open[dir]
		if nowMs-entry.lastUseMs < idleMs || entry.log.Dirty() || entry.log.CommittedDirty() {
			continue
		}
		errs = append(errs, s.Close(dir))
		closed = append(closed, dir)
	}
	return closed, errors.Join(errs...)
}

// Close closes the log of dir if it is open.
func (s *Store) Close(dir string) error {
	entry, ok := s.open[dir]
	if !ok {
		return nil
	}
	delete(s.open, dir)
	if err := entry.log.Close(); err != nil {
		return fmt.Errorf("storage: closing %s: %w", dir, err)
	}
	return nil
}

// CloseAll closes every open log (without syncing) and joins the errors.
func (s *Store) CloseAll() error {
	var errs []error
	for _, dir := range s.OpenDirs() {
		errs = append(errs, s.Close(dir))
	}
	return errors.Join(errs...)
}

// IsOpen reports whether the log of dir is open.
func (s *Store) IsOpen(dir string) bool {
	_, open := s.open[dir]
	return open
}

// OpenDirs returns the directories of the open logs, sorted.
func (s *Store) OpenDirs() []string {
	return slices.Sorted(maps.Keys(s.open))
}

// Adopt adds a log the caller opened (a move's verified copy, see
// OpenVerified) as the open log of dir. It fails if dir has one already.
func (s *Store) Adopt(dir string, log *Log, nowMs int64) error {
	if _, ok := s.open[dir]; ok {
		return fmt.Errorf("storage: adopt %s: a log is open there already", dir)
	}
	s.open[dir] = &storeEntry{log: log, lastUseMs: nowMs}
	return nil
}
