package meta

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func randomHeartbeats(rng *rand.Rand) (ProposalID, MemberHeartbeats) {
	text := func() string {
		alphabet := []string{"n1", "a", "127.0.0.1:80", "<&>", "é", "\"", "\\", "\x01", "\x7f", ""}
		var s string
		for range rng.IntN(3) {
			s += alphabet[rng.IntN(len(alphabet))]
		}
		return s
	}
	number := func() uint64 {
		return []uint64{0, 1, 10, 1 << 53, 1<<63 - 1, 1 << 63, 1<<64 - 1, rng.Uint64()}[rng.IntN(8)]
	}
	id := ProposalID{Node: text(), Term: number(), Sequence: number()}
	var cmd MemberHeartbeats
	switch rng.IntN(4) {
	case 0:
	case 1:
		cmd.Beats = []MemberHeartbeat{}
	default:
		for range 1 + rng.IntN(6) {
			cmd.Beats = append(cmd.Beats, MemberHeartbeat{ID: text(), HTTPAddr: text(), ClusterAddr: text(),
				NowMs: int64(number()), Incarnation: number() * uint64(rng.IntN(2)), DiskLow: rng.IntN(2) == 0, DataID: text()})
		}
	}
	return id, cmd
}

// The canonical reader of heartbeats decodes exactly what encoding/json
// decodes (nil and empty lists apart), on what EncodeCommand writes and on
// that changed at random; and it takes the commands a cluster writes.
func TestHeartbeatsCanonicalAgreesWithJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	fast := 0
	for i := range 50_000 {
		id, cmd := randomHeartbeats(rng)
		data, err := EncodeCommand(id, cmd)
		require.NoError(t, err)
		envelope := data[commandHeaderBytes:]
		if i%2 == 1 {
			const bytes = "0123456789-.e,:{}[]\" tnulfase"
			envelope[rng.IntN(len(envelope))] = bytes[rng.IntN(len(bytes))]
		}
		gotID, gotCmd, ok := decodeHeartbeatsCanonical(envelope)
		wantID, wantCmd, wantErr := decodeAs[MemberHeartbeats](envelope)
		if i%2 == 0 && !hasSpecial(cmd, id) {
			require.True(t, ok, "canonical form refused: %s", envelope)
		}
		if !ok {
			continue
		}
		fast++
		require.NoError(t, wantErr, "%s", envelope)
		require.Equal(t, wantID, gotID, "%s", envelope)
		require.Equal(t, wantCmd, gotCmd, "%s", envelope)
		require.Equal(t, wantCmd.(MemberHeartbeats).Beats == nil, gotCmd.Beats == nil, "%s", envelope)
	}
	require.Greater(t, fast, 5_000)
}

// hasSpecial reports whether a string of the command needs more than
// printable ASCII without escapes.
func hasSpecial(cmd MemberHeartbeats, id ProposalID) bool {
	strs := []string{id.Node}
	for _, b := range cmd.Beats {
		strs = append(strs, b.ID, b.HTTPAddr, b.ClusterAddr, b.DataID)
	}
	for _, s := range strs {
		for _, c := range []byte(s) {
			if c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
				return true
			}
		}
	}
	return false
}
