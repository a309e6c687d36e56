package main

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"narad/proc"

	"github.com/spf13/cobra"
)

// Bounds of `narad cluster up`.
const (
	// clusterPortStride separates the ports of consecutive nodes: node i
	// serves HTTP on base+stride*i and node-to-node on that plus one.
	clusterPortStride = 10
	// clusterPortMin keeps the dev cluster off the privileged ports.
	clusterPortMin = 1024
	// clusterReadyTimeout bounds the wait for every node's /readyz.
	clusterReadyTimeout = 90 * time.Second
	// clusterReadyPollInterval is the pause between readiness probes.
	clusterReadyPollInterval = 200 * time.Millisecond
	// clusterStopTimeout bounds the wait for a SIGTERMed node (its own
	// shutdown grace is 10 s); past it the node is killed.
	clusterStopTimeout = 15 * time.Second
	// clusterRestartAfterMin and clusterRestartAfterMax bound
	// --restart-after when it is not 0 (off): below a second a node that
	// keeps dying would be started again as fast as it dies.
	clusterRestartAfterMin = time.Second
	clusterRestartAfterMax = time.Hour
	// clusterProbeTimeout bounds one readiness probe of a node started
	// again, so that a node that hangs does not hold up the supervision.
	clusterProbeTimeout = time.Second
)

// clusterSizes are the node counts `cluster up` accepts: odd, so a
// majority survives one (or two) lost nodes.
var clusterSizes = []int{3, 5}

// clusterUpOptions are the flags of `cluster up`.
type clusterUpOptions struct {
	nodes        int
	basePort     int
	dataDir      string
	restartAfter time.Duration
}

func newClusterUpCommand(a *app) *cobra.Command {
	options := clusterUpOptions{nodes: 3, basePort: portDefault}
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local development cluster of 3 (or 5) nodes on loopback",
		Long: `Start a development cluster on this machine: 3 (or --nodes 5) "narad serve"
processes on 127.0.0.1, with authentication on. Node i (n1, n2, ...) serves
HTTP on --base-port + 10*(i-1) and talks to the other nodes on the port after
it: 7942/7943, 7952/7953, 7962/7963 by default. Each node keeps its data in
a subdirectory of --data-dir and writes its log next to it (n1.log, ...);
the same directory is reused by the next run, so topics survive a restart.
The root user is "admin"; its password and the nodes' cluster secret are
made on the first run, kept in secrets.json (mode 0600) in --data-dir, and
the password is printed with the addresses. A node joining this cluster
needs the secret (cluster_secret in secrets.json) as NARAD_CLUSTER_SECRET:
see "narad cluster --help" for how to add a node.

The nodes get none of this shell's NARAD_* variables (a stray one could
change the cluster), and there is no --config: every other setting keeps
its default. storage.disk_reserve_bytes among them: a node whose data
directory's file system has less than 256 MiB free refuses every write
into its partitions (503, "under its reserve"; disk-low in its log).

The command waits until every node answers /readyz, prints their addresses
and an example, and then runs until Ctrl-C, which stops all the nodes
gracefully (SIGTERM, then SIGKILL after 15 s). A node that dies meanwhile
(try kill -9 on one) is reported and the others keep running. With
--restart-after D, a node that died is started again on its data D later,
and said ready again once it answers /readyz: time enough to watch the
others lead and serve without it, then take it back. A node that dies
before it answered /readyz since its last start is not started again (it
would likely die again; what it logged is printed), nor one that stopped
cleanly (status 0: stopped on purpose, as a decommissioned node is). Without
--restart-after, a dead node comes back only when the whole run is
stopped and started again.`,
		Example: `  narad cluster up
  narad cluster up --nodes 5 --base-port 8000 --data-dir ./cluster-data
  narad cluster up --restart-after 10s    # then kill -9 a node's pid
  make cluster`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			plan, err := a.planFromOptions(cmd, options)
			if err != nil {
				return err
			}
			return a.runCluster(cmd.Context(), plan)
		},
	}
	flags := cmd.Flags()
	flags.IntVar(&options.nodes, "nodes", options.nodes, "number of nodes: 3 or 5")
	flags.IntVar(&options.basePort, "base-port", options.basePort, "HTTP port of n1; node i uses base+10*(i-1), node-to-node one above")
	flags.StringVar(&options.dataDir, "data-dir", "", "directory for the nodes' data and logs (default ~/.narad/cluster/<nodes>-nodes-port-<base>)")
	flags.DurationVar(&options.restartAfter, "restart-after", 0, "start a node that died again after this long (1s to 1h; 0, the default: never)")
	return cmd
}

// plannedNode is one node of a development cluster; fixed by
// planCluster, the same across runs of the same flags.
type plannedNode struct {
	// id is n1, n2, ...: the node id and the name of its files.
	id string
	// httpAddr and clusterAddr are loopback host:port pairs, cluster one
	// port above HTTP.
	httpAddr, clusterAddr string
	// dataDir is the node's data directory, logPath its log file, both
	// inside the plan's directory.
	dataDir, logPath string
}

// clusterPlan is the whole development cluster, derived from the flags.
type clusterPlan struct {
	// dataDir is absolute and holds every node's directory and log.
	dataDir string
	// nodes are in id order (n1 first).
	nodes []plannedNode
	// secrets are the admin password and cluster secret every node gets;
	// set by runCluster from the data directory.
	secrets clusterSecrets
	// restartAfter is how long after a node died it is started again
	// (--restart-after); 0 never.
	restartAfter time.Duration
}

// planFromOptions validates the flags and resolves the data directory.
func (a *app) planFromOptions(cmd *cobra.Command, options clusterUpOptions) (clusterPlan, error) {
	if err := options.validate(); err != nil {
		return clusterPlan{}, err
	}
	dataDir := options.dataDir
	if !cmd.Flags().Changed("data-dir") {
		home, err := a.userHomeDir()
		if err != nil {
			return clusterPlan{}, fmt.Errorf("find the home directory for the cluster's data (use --data-dir): %w", err)
		}
		dataDir = filepath.Join(home, ".narad", "cluster", fmt.Sprintf("%d-nodes-port-%d", options.nodes, options.basePort))
	}
	absolute, err := filepath.Abs(dataDir)
	if err != nil {
		return clusterPlan{}, fmt.Errorf("data directory %s: %w", dataDir, err)
	}
	plan := planCluster(absolute, options.nodes, options.basePort)
	plan.restartAfter = options.restartAfter
	return plan, nil
}

func (o clusterUpOptions) validate() error {
	if o.nodes != clusterSizes[0] && o.nodes != clusterSizes[1] {
		return usagef("--nodes must be 3 or 5 (got %d)", o.nodes)
	}
	highest := o.basePort + clusterPortStride*(o.nodes-1) + 1
	if o.basePort < clusterPortMin || highest > 65535 {
		return usagef("--base-port %d: the ports %d..%d must lie in %d..65535", o.basePort, o.basePort, highest, clusterPortMin)
	}
	if o.restartAfter != 0 && (o.restartAfter < clusterRestartAfterMin || o.restartAfter > clusterRestartAfterMax) {
		return usagef("--restart-after %s must be 0 (never) or from 1s to 1h", o.restartAfter)
	}
	return nil
}

// planCluster lays out nodes n1..nN on loopback from basePort.
func planCluster(dataDir string, nodes, basePort int) clusterPlan {
	plan := clusterPlan{dataDir: dataDir}
	for i := range nodes {
		id := "n" + strconv.Itoa(i+1)
		port := basePort + clusterPortStride*i
		plan.nodes = append(plan.nodes, plannedNode{
			id:          id,
			httpAddr:    net.JoinHostPort(devLoopback, strconv.Itoa(port)),
			clusterAddr: net.JoinHostPort(devLoopback, strconv.Itoa(port+1)),
			dataDir:     filepath.Join(dataDir, id),
			logPath:     filepath.Join(dataDir, id+".log"),
		})
	}
	return plan
}

// peers is the NARAD_CLUSTER_PEERS value: every node as id@cluster-addr.
func (p clusterPlan) peers() string {
	entries := make([]string, 0, len(p.nodes))
	for _, n := range p.nodes {
		entries = append(entries, n.id+"@"+n.clusterAddr)
	}
	return strings.Join(entries, ",")
}

// spec is how node n is started from executable: `narad serve` with a
// text log (people read it), in its own process group, with the inherited
// environment less every NARAD_* variable (a stray
// NARAD_CLUSTER_INITIAL_MEMBERS would change the cluster), plus the
// cluster settings.
func (p clusterPlan) spec(executable string, inherited []string, n plannedNode) proc.Spec {
	base := make([]string, 0, len(inherited))
	for _, entry := range inherited {
		if !strings.HasPrefix(entry, "NARAD_") {
			base = append(base, entry)
		}
	}
	return proc.Spec{Binary: executable, ID: n.id, HTTPAddr: n.httpAddr, ClusterAddr: n.clusterAddr, DataDir: n.dataDir,
		LogPath: n.logPath, LogFormat: "text", BaseEnv: base, SysProcAttr: childProcessAttributes(),
		Env: []string{"NARAD_SECURITY_ENABLED=true", "NARAD_ADMIN_PASSWORD=" + p.secrets.AdminPassword,
			"NARAD_CLUSTER_SECRET=" + p.secrets.ClusterSecret, "NARAD_CLUSTER_ADDR=" + n.clusterAddr, "NARAD_CLUSTER_PEERS=" + p.peers()}}
}

// url is the base URL of node n's HTTP API.
func (n plannedNode) url() string { return "http://" + n.httpAddr }
