package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"path"

	"narad/storage"
)

const (
	incarnationFile = "incarnation"
	// incarnationNonceShift places the incarnation above every nonce one
	// incarnation can hand out (2^40 reservations per partition).
	incarnationNonceShift = 40
	// incarnationMax keeps incarnation << shift inside a uint64.
	incarnationMax = 1<<(64-incarnationNonceShift) - 1
)

// nextIncarnation reads the node's start counter and returns the next
// one, which storeIncarnation makes durable once the start is accepted:
// receipt handles of an earlier incarnation never match a reservation of
// this one (they answer 410 after a restart: docs/api.md#ack).
func nextIncarnation(fs storage.FS) (uint64, error) {
	var previous uint64
	data, err := storage.ReadFile(fs, incarnationFile)
	switch {
	case errors.Is(err, storage.ErrNotExist):
	case err != nil:
		return 0, fmt.Errorf("read incarnation: %w", err)
	case len(data) != 8:
		return 0, fmt.Errorf("incarnation file has %d bytes, want 8", len(data))
	default:
		previous = binary.BigEndian.Uint64(data)
	}
	return previous%incarnationMax + 1, nil
}

// storeIncarnation durably stores the start counter nextIncarnation
// returned: by atomic replace, or, on a disk with no room for the new
// file, over the old file's 8 bytes (overwriteIncarnation).
func storeIncarnation(fs storage.FS, incarnation uint64) error {
	data := binary.BigEndian.AppendUint64(nil, incarnation)
	err := storage.WriteFileAtomic(fs, incarnationFile, data)
	if errors.Is(err, storage.ErrNoSpace) {
		if overwriteErr := overwriteIncarnation(fs, data); overwriteErr != nil {
			err = errors.Join(err, overwriteErr)
		} else {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("write incarnation: %w", err)
	}
	return nil
}

// overwriteIncarnation writes the counter over the existing file in place
// and syncs it, then its directory, for a start on a full disk: the
// file's block takes the new value where a new file would need one (a
// node stopped by a full disk could not start again before space was
// freed, though the rest of a start has room: the metastore's ahead of
// its file, the hwm raised in place). The 8 bytes lie in the file's first
// sector, which a disk writes whole, so a crash leaves the old value or
// the new one. The directory sync covers an atomic replace whose rename
// went through before its own directory sync failed: the file written
// over is then the renamed one, and the rename must be durable too, or a
// crash would bring back the old file and this start's number with it. A
// first start has no file to overwrite, and fails as before.
func overwriteIncarnation(fs storage.FS, data []byte) error {
	file, err := fs.Open(incarnationFile)
	if err != nil {
		return err
	}
	if _, err := file.WriteAt(data, 0); err != nil {
		return errors.Join(err, file.Close())
	}
	if err := errors.Join(file.Sync(), file.Close()); err != nil {
		return err
	}
	return fs.SyncDir(path.Dir(incarnationFile))
}
