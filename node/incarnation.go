package node

import (
	"encoding/binary"
	"errors"
	"fmt"

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
// returned.
func storeIncarnation(fs storage.FS, incarnation uint64) error {
	if err := storage.WriteFileAtomic(fs, incarnationFile, binary.BigEndian.AppendUint64(nil, incarnation)); err != nil {
		return fmt.Errorf("write incarnation: %w", err)
	}
	return nil
}
