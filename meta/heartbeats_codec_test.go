package meta

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// randomText is a string of zero to two pieces, some plain and some that
// JSON escapes or that are not ASCII.
func randomText(rng *rand.Rand) string {
	alphabet := []string{"n1", "a", "127.0.0.1:80", "<&>", "é", "\"", "\\", "\x01", "\x7f", ""}
	var s string
	for range rng.IntN(3) {
		s += alphabet[rng.IntN(len(alphabet))]
	}
	return s
}

// randomNumber is a number at the edges of the integer types, or any.
func randomNumber(rng *rand.Rand) uint64 {
	return []uint64{0, 1, 10, 1 << 53, 1<<63 - 1, 1 << 63, 1<<64 - 1, rng.Uint64()}[rng.IntN(8)]
}

func randomProposal(rng *rand.Rand) ProposalID {
	return ProposalID{Node: randomText(rng), Term: randomNumber(rng), Sequence: randomNumber(rng)}
}

func randomHeartbeats(rng *rand.Rand) (ProposalID, MemberHeartbeats) {
	id := randomProposal(rng)
	var cmd MemberHeartbeats
	switch rng.IntN(4) {
	case 0:
	case 1:
		cmd.Beats = []MemberHeartbeat{}
	default:
		for range 1 + rng.IntN(6) {
			cmd.Beats = append(cmd.Beats, MemberHeartbeat{ID: randomText(rng), HTTPAddr: randomText(rng), ClusterAddr: randomText(rng),
				NowMs: int64(randomNumber(rng)), Incarnation: randomNumber(rng) * uint64(rng.IntN(2)), DiskLow: rng.IntN(2) == 0, DataID: randomText(rng)})
		}
	}
	return id, cmd
}

func heartbeatTexts(cmd MemberHeartbeats) []string {
	var texts []string
	for _, b := range cmd.Beats {
		texts = append(texts, b.ID, b.HTTPAddr, b.ClusterAddr, b.DataID)
	}
	return texts
}

// The canonical reader of heartbeats decodes exactly what encoding/json
// decodes (nil and empty lists included), on what EncodeCommand writes
// and on that changed at random; and it takes the commands a cluster
// writes.
func TestHeartbeatsCanonicalAgreesWithJSON(t *testing.T) {
	requireCanonicalAgrees(t, randomHeartbeats, heartbeatTexts, (*canonicalScan).heartbeats, 5_000)
}

// requireCanonicalAgrees checks, on 50,000 commands that random makes
// and half of them changed at one byte, that decodeCanonical reading
// bodies with body decodes exactly what decodeAs decodes whenever it
// takes an envelope, and that it takes every unchanged one whose strings
// (the proposer's and those texts lists) are plain ASCII, more than
// takenMin of them.
func requireCanonicalAgrees[T Command](t *testing.T, random func(*rand.Rand) (ProposalID, T), texts func(T) []string, body func(*canonicalScan) T, takenMin int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for i := range 50_000 {
		id, cmd := random(rng)
		data, err := EncodeCommand(id, cmd)
		require.NoError(t, err)
		envelope := data[commandHeaderBytes:]
		if i%2 == 1 {
			const bytes = "0123456789-.e,:{}[]\" tnulfase"
			envelope[rng.IntN(len(envelope))] = bytes[rng.IntN(len(bytes))]
		}
		gotID, gotCmd, ok := decodeCanonical(envelope, body)
		wantID, wantCmd, wantErr := decodeAs[T](envelope)
		if i%2 == 0 && !hasSpecial(append(texts(cmd), id.Node)) {
			require.True(t, ok, "canonical form refused: %s", envelope)
		}
		if !ok {
			continue
		}
		fast++
		require.NoError(t, wantErr, "%s", envelope)
		require.Equal(t, wantID, gotID, "%s", envelope)
		require.Equal(t, wantCmd, Command(gotCmd), "%s", envelope)
	}
	require.Greater(t, fast, takenMin)
}

// hasSpecial reports whether a string needs more than printable ASCII
// without escapes.
func hasSpecial(strs []string) bool {
	for _, s := range strs {
		for _, c := range []byte(s) {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return true
			}
		}
	}
	return false
}
