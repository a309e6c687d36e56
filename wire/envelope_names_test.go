package wire_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
	"narad/wire"
)

// TestEnvelopeNamesShareOneAllocation: an envelope's sender and receiver
// decode intact, each alone or both empty, and together cost one
// allocation more than an envelope without them (every peer message
// decodes them; they took two).
func TestEnvelopeNamesShareOneAllocation(t *testing.T) {
	message := msg.Subscribe{Topic: "orders", ForMs: 5}
	for _, names := range [][2]string{{"node-1", "node-22"}, {"", "n2"}, {"n1", ""}, {"", ""}} {
		decoded := roundTrip(t, msg.Envelope{From: names[0], To: names[1], Message: message})
		require.Equal(t, names, [2]string{decoded.From, decoded.To})
		require.Equal(t, message, decoded.Message)
	}
	allocations := func(env msg.Envelope) float64 {
		encoded, err := wire.EncodeEnvelope(nil, env)
		require.NoError(t, err)
		return testing.AllocsPerRun(100, func() { _, _ = wire.DecodeEnvelope(encoded) })
	}
	named := allocations(msg.Envelope{From: "node-1", To: "node-2", Message: message})
	unnamed := allocations(msg.Envelope{Message: message})
	require.Equal(t, 1.0, named-unnamed)
}
