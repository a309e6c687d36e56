package host

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/config"
)

// startMember starts cluster member id on dir with the given addresses
// and peer list (security off).
func startMember(t *testing.T, id, dir, httpAddr, clusterAddr string, peers []string) *Host {
	t.Helper()
	cfg := config.Default()
	cfg.Security.Enabled = false
	cfg.HTTP.Addr, cfg.Cluster.Addr, cfg.Cluster.NodeID, cfg.Cluster.Peers, cfg.Storage.DataDir = httpAddr, clusterAddr, id, peers, dir
	opts, err := OptionsFrom(cfg)
	require.NoError(t, err)
	h, err := Start(opts, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	return h
}

// A voter restarted on its data at a new cluster address tells its peers
// (a Join with its address), who reach it there until its heartbeat
// records the address in the metastore: it becomes ready again, and the
// members list its new address. Before, the others kept sending its raft
// messages to the old address, taken from the metastore over any
// configuration, and it never heard of a leader again (host review, high).
func TestAVoterRestartedAtANewClusterAddressRejoins(t *testing.T) {
	addrs := freeLoopbackAddrs(t, 7)
	dirs := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	peers := func(third string) []string { return []string{"n1@" + addrs[0], "n2@" + addrs[1], "n3@" + third} }
	hosts := make([]*Host, 3)
	for i := range 3 {
		hosts[i] = startMember(t, fmt.Sprintf("n%d", i+1), dirs[i], addrs[3+i], addrs[i], peers(addrs[2]))
	}
	defer func() {
		for _, h := range hosts {
			_ = h.Shutdown()
		}
	}()
	ready := func(h *Host) func() bool {
		return func() bool { status, _ := call(t, h, get("/readyz")); return status == 200 }
	}
	eventually(t, 30*time.Second, "n3 ready", ready(hosts[2]))

	require.NoError(t, hosts[2].Shutdown())
	hosts[2] = startMember(t, "n3", dirs[2], addrs[5], addrs[6], peers(addrs[6]))
	eventually(t, 40*time.Second, "n3, at its new cluster address, never became ready again", ready(hosts[2]))
	eventually(t, 20*time.Second, "the members never recorded n3's new address", func() bool {
		_, body := call(t, hosts[0], get("/v1/cluster/members"))
		return strings.Contains(body, addrs[5]) // the heartbeat that records the new addresses applied
	})
}
