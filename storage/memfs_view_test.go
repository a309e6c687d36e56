package storage

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// A view shares its files' bytes with the original, and no write to the
// view (an overwrite, a cut then an append, an append into a chunk's
// room) reaches the original, across chunks of a few bytes.
func TestMemFSDurableCloneDirViewWritesNeverReachTheOriginal(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for round := range 300 {
		fs := newTestMemFS(uint64(round))
		fs.fileChunkBytes = int64(1 + rng.IntN(6))
		require.NoError(t, fs.MkdirAll("t/p"))
		require.NoError(t, fs.SyncDir("."))
		require.NoError(t, fs.SyncDir("t"))
		durable := "0123456789abcdef"[:1+rng.IntN(16)]
		memDurableFile(t, fs, "t/p/f", durable)
		memAppend(t, fs, "t/p/f", "+volatile").Close()

		view := fs.DurableCloneDirView("t/p")
		require.Equal(t, durable, conformReadFile(t, view, "t/p/f"))
		want := []byte(durable)
		file, err := view.Open("t/p/f")
		require.NoError(t, err)
		for range 4 {
			switch rng.IntN(3) {
			case 0:
				if len(want) > 0 {
					off := rng.IntN(len(want))
					p := []byte("XYZ"[:min(3, len(want)-off)])
					_, err := file.WriteAt(p, int64(off))
					require.NoError(t, err)
					copy(want[off:], p)
				}
			case 1:
				size := rng.IntN(len(want) + 1)
				require.NoError(t, file.Truncate(int64(size)))
				want = want[:size]
			default:
				_, err := file.WriteAt([]byte("++"), int64(len(want)))
				require.NoError(t, err)
				want = append(want, "++"...)
			}
			require.Equal(t, string(want), conformReadFile(t, view, "t/p/f"))
			require.Equal(t, durable+"+volatile", conformReadFile(t, fs, "t/p/f"), "the original is unchanged")
			fs.checkInvariants()
			view.checkInvariants()
		}
		require.NoError(t, file.Close())
	}
}
