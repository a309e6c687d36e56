package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/proc"
)

func TestClusterUpPlanLaysOutLoopbackPorts(t *testing.T) {
	plan := planCluster("/data", 3, 7942)
	require.Len(t, plan.nodes, 3)
	for i, want := range []struct{ id, http, cluster string }{
		{"n1", "127.0.0.1:7942", "127.0.0.1:7943"},
		{"n2", "127.0.0.1:7952", "127.0.0.1:7953"},
		{"n3", "127.0.0.1:7962", "127.0.0.1:7963"},
	} {
		n := plan.nodes[i]
		assert.Equal(t, want.id, n.id)
		assert.Equal(t, want.http, n.httpAddr)
		assert.Equal(t, want.cluster, n.clusterAddr)
		assert.Equal(t, filepath.Join("/data", want.id), n.dataDir)
		assert.Equal(t, filepath.Join("/data", want.id+".log"), n.logPath)
	}
	assert.Equal(t, "n1@127.0.0.1:7943,n2@127.0.0.1:7953,n3@127.0.0.1:7963", plan.peers())
	assert.Len(t, planCluster("/data", 5, 8000).nodes, 5)
	assert.Equal(t, "127.0.0.1:8041", planCluster("/data", 5, 8000).nodes[4].clusterAddr)
}

func TestClusterUpNodeEnvironmentDropsStrayNaradVariables(t *testing.T) {
	plan := planCluster("/data", 3, 7942)
	plan.secrets = clusterSecrets{AdminPassword: "pw", ClusterSecret: "a-cluster-secret-16+"}
	spec := plan.spec("narad", []string{"HOME=/root", "NARAD_CLUSTER_INITIAL_MEMBERS=x", "NARAD_SECURITY_ENABLED=false", "PATH=/bin"}, plan.nodes[1])
	assert.Equal(t, []string{"HOME=/root", "PATH=/bin", "NARAD_SECURITY_ENABLED=true", "NARAD_ADMIN_PASSWORD=pw",
		"NARAD_CLUSTER_SECRET=a-cluster-secret-16+", "NARAD_CLUSTER_ADDR=127.0.0.1:7953",
		"NARAD_CLUSTER_PEERS=n1@127.0.0.1:7943,n2@127.0.0.1:7953,n3@127.0.0.1:7963"}, spec.Environ())
	assert.Equal(t, []string{"serve", "--addr", "127.0.0.1:7952", "--data-dir", filepath.Join("/data", "n2"),
		"--log-format", "text", "--node-id", "n2"}, spec.Args())
}

// The node's serve configuration built from the plan passes validation:
// the same layering a child process applies.
func TestClusterUpNodeConfigurationIsValid(t *testing.T) {
	plan := planCluster(t.TempDir(), 5, 9000)
	var err error
	plan.secrets, err = loadClusterSecrets(plan.dataDir)
	require.NoError(t, err)
	for _, n := range plan.nodes {
		h := newHarness(t)
		spec := plan.spec("narad", nil, n)
		for _, entry := range spec.Environ() {
			name, value, _ := strings.Cut(entry, "=")
			h.env[name] = value
		}
		h.runOK(spec.Args()...)
		require.NotNil(t, h.hostConfig)
		assert.Equal(t, n.id, h.hostConfig.Cluster.NodeID)
		assert.Len(t, h.hostConfig.Cluster.Peers, 5)
		assert.True(t, h.hostConfig.Security.Enabled)
		assert.Equal(t, plan.secrets.AdminPassword, h.hostConfig.Security.AdminPassword)
	}
}

// The secrets of a development cluster are made once, kept private and
// found again by the next run.
func TestClusterUpSecretsPersist(t *testing.T) {
	dir := t.TempDir()
	first, err := loadClusterSecrets(dir)
	require.NoError(t, err)
	assert.Len(t, first.AdminPassword, 32)
	assert.NotEqual(t, first.AdminPassword, first.ClusterSecret)
	info, err := os.Stat(filepath.Join(dir, clusterSecretsFile))
	require.NoError(t, err)
	assert.Equal(t, clusterSecretsMode, info.Mode().Perm())
	again, err := loadClusterSecrets(dir)
	require.NoError(t, err)
	assert.Equal(t, first, again)
	require.NoError(t, os.WriteFile(filepath.Join(dir, clusterSecretsFile), []byte("{}"), clusterSecretsMode))
	_, err = loadClusterSecrets(dir)
	assert.ErrorContains(t, err, "damaged")
}

func TestClusterUpRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"cluster", "up", "--nodes", "4"},
		{"cluster", "up", "--nodes", "1"},
		{"cluster", "up", "--base-port", "80"},
		{"cluster", "up", "--base-port", "65530"},
		{"cluster", "up", "extra"},
		{"cluster", "up", "--restart-after", "500ms"},
		{"cluster", "up", "--restart-after", "2h"},
		{"cluster", "up", "--restart-after", "-1s"},
		{"cluster", "up", "--restart-after", "soon"},
	} {
		h := newHarness(t)
		assert.Equal(t, exitUsage, h.run(args...), "%v", args)
		assert.Contains(t, h.stderr.String(), "narad:", "%v", args)
	}
}

func TestClusterUpDefaultDataDirIsPerLayout(t *testing.T) {
	h := newHarness(t)
	root := newRootCommand(h.app)
	command, _, err := root.Find([]string{"cluster", "up"})
	require.NoError(t, err)
	require.NoError(t, command.ParseFlags(nil))
	plan, err := h.app.planFromOptions(command, clusterUpOptions{nodes: 5, basePort: 8000})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(h.homeDir, ".narad", "cluster", "5-nodes-port-8000"), plan.dataDir,
		"a cluster of another size or ports must not reuse this one's raft state")
}

func TestClusterUpHelpExplainsItself(t *testing.T) {
	h := newHarness(t)
	h.runOK("cluster", "up", "--help")
	help := h.stdout.String()
	for _, want := range []string{"--nodes", "--base-port", "--data-dir", "Ctrl-C", "7942/7943, 7952/7953, 7962/7963", "/readyz", "--restart-after"} {
		assert.Contains(t, help, want)
	}
}

// A port of the plan already taken (a node an earlier cluster up left
// running) stops cluster up before it starts anything, naming the node
// and the address; free ports pass.
func TestClusterUpRefusesTakenPorts(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	port := taken.Addr().(*net.TCPAddr).Port
	err = checkPortsFree(planCluster(t.TempDir(), 1, port)) // n1's HTTP port is the taken one
	require.ErrorContains(t, err, "n1: "+taken.Addr().String()+" is taken")

	// Free ports pass. A port drawn free may be taken again by the time it
	// is checked, and its neighbour (the cluster port) was never checked:
	// other tests' connections take ports beside it. So a few draws
	// outside the ephemeral range, of which one must pass.
	var errs []error
	for range 10 {
		addr, err := proc.FreeAddr()
		require.NoError(t, err)
		_, portText, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(portText)
		require.NoError(t, err)
		if err = checkPortsFree(planCluster(t.TempDir(), 1, port)); err == nil {
			return
		}
		errs = append(errs, err)
	}
	t.Fatalf("no plan on free ports passed: %v", errs)
}

// A cluster up refused for a taken port writes nothing: no data directory
// and no secrets.json, whose secrets a later run on free ports would have
// kept (operations audit: the refused run left secrets.json behind).
func TestClusterUpRefusedForATakenPortLeavesNoDirectory(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	dir := filepath.Join(t.TempDir(), "cluster")
	h := newHarness(t)
	err = h.app.runCluster(context.Background(), planCluster(dir, 1, taken.Addr().(*net.TCPAddr).Port))
	require.ErrorContains(t, err, "is taken")
	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "the refused run made %s: %v", dir, err)
}

// How to add a node to a running cluster is in the cluster command's
// help, with the variables it needs, and cluster up names the secret a
// joining node needs (grow/drain audit: the auditor had to find both in
// operations.md and secrets.json).
func TestClusterHelpSaysHowToAddANode(t *testing.T) {
	h := newHarness(t)
	h.runOK("cluster", "--help")
	for _, want := range []string{"To add a node to a running cluster", "NARAD_CLUSTER_SECRET", "NARAD_CLUSTER_ADDR",
		"NARAD_CLUSTER_PEERS", "NARAD_CLUSTER_INITIAL_MEMBERS", "cluster_secret in <data-dir>/secrets.json"} {
		assert.Contains(t, h.stdout.String(), want)
	}
	h = newHarness(t)
	h.runOK("cluster", "up", "--help")
	assert.Contains(t, strings.Join(strings.Fields(h.stdout.String()), " "), "needs the secret (cluster_secret in secrets.json) as NARAD_CLUSTER_SECRET")
	// The nodes drop the caller's NARAD_* variables (spec): the help says
	// so, and that the disk reserve stays at its default (disk-full audit:
	// NARAD_STORAGE_DISK_RESERVE_BYTES was silently ignored, and on a
	// small disk every produce of the new cluster was 503).
	assert.Contains(t, strings.Join(strings.Fields(h.stdout.String()), " "), "The nodes get none of this shell's NARAD_* variables")
	assert.Contains(t, strings.Join(strings.Fields(h.stdout.String()), " "), "storage.disk_reserve_bytes among them")

	h = newHarness(t)
	dir := t.TempDir()
	plan := planCluster(dir, 3, 8000)
	plan.secrets = clusterSecrets{AdminPassword: "pw", ClusterSecret: "s3cret"}
	var nodes []*devNode
	for _, n := range plan.nodes {
		nodes = append(nodes, &devNode{plannedNode: n, Process: proc.NewProcess(proc.Spec{ID: n.id, HTTPAddr: n.httpAddr})})
	}
	h.app.printClusterBanner(plan, nodes, "narad")
	assert.Contains(t, h.stdout.String(), "a node joining this cluster needs its secret, cluster_secret in "+
		filepath.Join(dir, "secrets.json")+", as NARAD_CLUSTER_SECRET")
}
