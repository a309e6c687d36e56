package meta

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

// The hand-written encoding of a member record is json.Marshal's, byte
// for byte, and it takes every record whose strings are plain.
func TestMemberRecordEncodesAsJSONDoes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	taken := 0
	for range 50_000 {
		member := Member{ID: randomText(rng), HTTPAddr: randomText(rng), ClusterAddr: randomText(rng), Alive: rng.IntN(2) == 0,
			LastHeartbeatMs: int64(randomNumber(rng)), Incarnation: randomOptional(rng), Draining: rng.IntN(2) == 0,
			DiskLow: rng.IntN(2) == 0, DataID: randomText(rng)}
		want, err := json.Marshal(&member)
		require.NoError(t, err)
		got, ok := appendMemberJSON(nil, &member)
		require.Equal(t, !hasSpecial([]string{member.ID, member.HTTPAddr, member.ClusterAddr, member.DataID}), ok, "%s", want)
		if ok {
			taken++
			require.Equal(t, string(want), string(got))
			require.LessOrEqual(t, len(got)-len(member.ID)-len(member.HTTPAddr)-len(member.ClusterAddr)-len(member.DataID), memberJSONFixedBytesMax,
				"the record fits the room encodeMember makes for it")
		}
		data, present := encodeMember(&member)
		require.True(t, present)
		require.Equal(t, string(want), string(data))
	}
	require.Greater(t, taken, 1_000)
	_, present := encodeMember(nil)
	require.False(t, present, "no member, no record")
}

// appendMemberJSON writes every field of Member: a field added to it must
// be added there too (this list with it).
func TestMemberRecordEncodingKnowsEveryField(t *testing.T) {
	var names []string
	for field := range reflect.TypeFor[Member]().Fields() {
		names = append(names, field.Name)
	}
	require.Equal(t, []string{"ID", "HTTPAddr", "ClusterAddr", "Alive", "LastHeartbeatMs", "Incarnation", "Draining", "DiskLow", "DataID"}, names)
}

// BenchmarkMemberRecord measures the encoding of a member record, written
// at each of its heartbeats, by hand and by encoding/json (the reference).
func BenchmarkMemberRecord(b *testing.B) {
	member := Member{ID: "n3", HTTPAddr: "10.0.0.3:8080", ClusterAddr: "10.0.0.3:7943", Alive: true,
		LastHeartbeatMs: 1_700_000_123_456, Incarnation: 1_700_000_000_001, DataID: "4f9c2a7d1e3b5a60"}
	b.Run("hand", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodeMember(&member)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			encodePresent(&member)
		}
	})
}
