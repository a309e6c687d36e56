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

// nextIncarnation reads, increments and durably stores the node's start
// counter, so receipt handles of an earlier incarnation never match a
// reservation of this one (they answer 410 after a restart:
// docs/api.md#ack).
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
	next := previous%incarnationMax + 1
	if err := storage.WriteFileAtomic(fs, incarnationFile, binary.BigEndian.AppendUint64(nil, next)); err != nil {
		return 0, fmt.Errorf("write incarnation: %w", err)
	}
	return next, nil
}
