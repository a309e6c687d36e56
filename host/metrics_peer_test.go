package host

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"narad/peer"
)

// narad_peer_dropped_total counts a peer's drops by kind, the cluster's
// control traffic apart from the client data, so that an alert can tell
// a flood of client data from Raft messages lost.
func TestPeerDropsAreLabelledByKind(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newPeerCollector(func() peer.Stats {
		return peer.Stats{Peers: map[string]peer.PeerStats{"n2": {Dropped: 885, DroppedData: 880, DroppedControl: 5}}}
	}))
	families, err := reg.Gather()
	require.NoError(t, err)
	dropped := map[string]float64{}
	for _, family := range families {
		if family.GetName() != "narad_peer_dropped_total" {
			continue
		}
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, pair := range metric.GetLabel() {
				labels[pair.GetName()] = pair.GetValue()
			}
			require.Equal(t, "n2", labels["peer"])
			dropped[labels["kind"]] = metric.GetCounter().GetValue()
		}
	}
	require.Equal(t, map[string]float64{"data": 880, "control": 5}, dropped)
}
