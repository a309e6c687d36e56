package sim

import (
	"encoding/json"
	"hash/fnv"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// The padding check without building the padding agrees with the
// padding, whose seed is hash/fnv's FNV-1a.
func TestPaddingCheckAgreesWithPadding(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		id := randomText(rng, 1+rng.IntN(20))
		h := fnv.New64a()
		h.Write([]byte(id))
		require.Equal(t, h.Sum64(), paddingSeed(id))
		padding := paddingOf(id, rng.IntN(64))
		require.True(t, isPaddingOf(id, padding))
		if len(padding) > 0 {
			changed := []byte(padding)
			changed[i%len(changed)] ^= 1
			require.False(t, isPaddingOf(id, string(changed)))
		}
	}
}

// plainJSONString takes exactly what encoding/json decodes to the same
// string, and nothing it would refuse or decode otherwise.
func TestPlainJSONStringAgreesWithJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for range 20_000 {
		raw := []byte(randomText(rng, rng.IntN(12)))
		if rng.IntN(2) == 0 {
			raw = append(append([]byte{'"'}, raw...), '"')
		}
		got, ok := plainJSONString(raw)
		var want string
		err := json.Unmarshal(raw, &want)
		if ok {
			require.NoError(t, err, "%q", raw)
			require.Equal(t, want, got, "%q", raw)
		}
	}
}

func randomText(rng *rand.Rand, n int) string {
	const alphabet = "ab-1\"\\ \x01\x7fé{}|"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}
