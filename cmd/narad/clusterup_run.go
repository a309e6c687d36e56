package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"narad/proc"
)

// clusterDirMode keeps the development cluster's data private.
const clusterDirMode os.FileMode = 0o700

// clusterProgressInterval is how often the readiness wait says what it
// still waits for.
const clusterProgressInterval = 5 * time.Second

// devNode is a `narad serve` child of `cluster up`, started once, and
// again after it died when --restart-after is set (supervisor).
type devNode struct {
	plannedNode
	*proc.Process
	// retired is set when the node's readiness said its decommission is
	// complete (a `cluster decommission` of an earlier run): it serves
	// nothing, and the wait does not wait for it.
	retired bool
	// startedAt is when its current process started, and logStart the
	// size of its log then (what that process wrote comes after);
	// answered is set once that process answered /readyz 200, slowSaid
	// once the supervisor said it was not ready in time, down once the
	// supervisor took its exit. All are set by launch, the readiness
	// probes and the supervisor, on the goroutine that runs the cluster.
	startedAt time.Time
	logStart  int64
	answered  bool
	slowSaid  bool
	down      bool
}

// retiredReadiness is what a node's /readyz says once its decommission is
// complete (node.Node.Serving).
const retiredReadiness = "was decommissioned"

// runCluster starts the nodes of plan, waits until each is ready, and
// supervises them until ctx ends; it always stops what it started.
func (a *app) runCluster(ctx context.Context, plan clusterPlan) error {
	executable, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find the narad executable to start the nodes: %w", err)
	}
	if err := checkPortsFree(plan); err != nil { // before anything is written: a refused start leaves no directory
		return err
	}
	if err := os.MkdirAll(plan.dataDir, clusterDirMode); err != nil {
		return fmt.Errorf("cluster data directory: %w", err)
	}
	if plan.secrets, err = loadClusterSecrets(plan.dataDir); err != nil {
		return err
	}
	fmt.Fprintf(a.stderr, "narad cluster: starting %d nodes; data and logs in %s\n", len(plan.nodes), plan.dataDir)
	exits := make(chan *devNode, len(plan.nodes))
	nodes, err := startNodes(plan, executable, exits)
	defer a.stopNodes(nodes)
	if err != nil {
		return err
	}
	if err := a.waitClusterReady(ctx, nodes, exits); err != nil {
		return err
	}
	if len(serving(nodes)) == 0 {
		return errors.New("every node of the cluster was decommissioned: nothing serves (remove the data directory to start afresh)")
	}
	a.printClusterBanner(plan, nodes, commandName(executable))
	return a.newSupervisor(plan, nodes, exits).run(ctx)
}

// checkPortsFree refuses to start when a port of the plan is taken: a
// node left running by an earlier cluster up (killed with its nodes
// orphaned) would answer the readiness probe in place of the node this
// run starts, which then fails on the same data directory.
func checkPortsFree(plan clusterPlan) error {
	for _, planned := range plan.nodes {
		for _, address := range []string{planned.httpAddr, planned.clusterAddr} {
			listener, err := net.Listen("tcp", address)
			if err != nil {
				return fmt.Errorf("%s: %s is taken (a node of an earlier cluster up still running? stop it, or give --base-port): %w", planned.id, address, err)
			}
			_ = listener.Close()
		}
	}
	return nil
}

// startNodes starts every node; on an error it returns those it started.
func startNodes(plan clusterPlan, executable string, exits chan<- *devNode) ([]*devNode, error) {
	var nodes []*devNode
	for _, planned := range plan.nodes {
		n, err := startNode(plan, planned, executable, exits)
		if err != nil {
			return nodes, err
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func startNode(plan clusterPlan, planned plannedNode, executable string, exits chan<- *devNode) (*devNode, error) {
	if err := os.MkdirAll(planned.dataDir, clusterDirMode); err != nil {
		return nil, fmt.Errorf("%s: data directory: %w", planned.id, err)
	}
	n := &devNode{plannedNode: planned, Process: proc.NewProcess(plan.spec(executable, os.Environ(), planned))}
	if err := n.launch(exits); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", planned.id, executable, err)
	}
	return n, nil
}

// launch starts a process of n and sends n on exits once it was reaped.
func (n *devNode) launch(exits chan<- *devNode) error {
	n.logStart = 0
	if info, err := os.Stat(n.logPath); err == nil {
		n.logStart = info.Size() // the new process appends after it
	}
	if err := n.Start(); err != nil {
		return err
	}
	n.startedAt, n.answered, n.down, n.slowSaid = time.Now(), false, false, false
	exited := n.Exited()
	go func() {
		<-exited
		exits <- n // buffered for every node, and a node exits once a start: never blocks
	}()
	return nil
}

// waitClusterReady polls every node's /readyz until all answer 200,
// printing each as it becomes ready. A node that exits, the timeout, or
// ctx ending stops the wait with an error.
func (a *app) waitClusterReady(ctx context.Context, nodes []*devNode, exits <-chan *devNode) error {
	fmt.Fprintf(a.stderr, "waiting for %s to answer /readyz ...\n", nodeIDs(nodes))
	start := time.Now()
	waiting := append([]*devNode{}, nodes...)
	lastAnswers := map[string]string{}
	nextProgress := start.Add(clusterProgressInterval)
	for len(waiting) > 0 {
		select {
		case n := <-exits:
			return fmt.Errorf("%s exited before it was ready (%v); the end of %s:\n%s", n.id, n.ExitErr(), n.logPath, proc.LogTail(n.logPath))
		default:
		}
		waiting = a.probeReadiness(ctx, waiting, start, lastAnswers)
		if len(waiting) == 0 {
			return nil
		}
		if time.Since(start) > clusterReadyTimeout {
			return fmt.Errorf("not ready after %s: %s (see their logs in %s)", clusterReadyTimeout, describeWaiting(waiting, lastAnswers), waiting[0].logPath)
		}
		if time.Now().After(nextProgress) {
			fmt.Fprintf(a.stderr, "  still waiting for %s\n", describeWaiting(waiting, lastAnswers))
			nextProgress = nextProgress.Add(clusterProgressInterval)
		}
		if err := proc.SleepContext(ctx, clusterReadyPollInterval); err != nil {
			return errors.New("interrupted while waiting for the nodes to be ready")
		}
	}
	return nil
}

// probeReadiness asks each waiting node once and returns those still not
// ready, recording their last answer.
func (a *app) probeReadiness(ctx context.Context, waiting []*devNode, start time.Time, lastAnswers map[string]string) []*devNode {
	var still []*devNode
	for _, n := range waiting {
		if err := n.Ready(ctx); err != nil {
			if strings.Contains(err.Error(), retiredReadiness) {
				n.retired = true
				fmt.Fprintf(a.stderr, "  %s was decommissioned in an earlier run (it left the voters): it serves nothing, and the others go on without it\n", n.id)
				continue
			}
			lastAnswers[n.id] = err.Error()
			still = append(still, n)
			continue
		}
		n.answered = true
		fmt.Fprintf(a.stderr, "  %s ready on %s after %s\n", n.id, n.url(), time.Since(start).Round(100*time.Millisecond))
	}
	return still
}

func describeWaiting(waiting []*devNode, lastAnswers map[string]string) string {
	parts := make([]string, 0, len(waiting))
	for _, n := range waiting {
		parts = append(parts, fmt.Sprintf("%s (%s)", n.id, lastAnswers[n.id]))
	}
	return strings.Join(parts, ", ")
}

func nodeIDs(nodes []*devNode) string {
	ids := make([]string, 0, len(nodes))
	for _, n := range nodes {
		ids = append(ids, n.id)
	}
	return strings.Join(ids, ", ")
}

// commandName is how the user can run executable from here: "narad" when
// it is the one on PATH, else a path relative to the working directory
// when that is short, else the absolute path.
func commandName(executable string) string {
	if found, err := exec.LookPath("narad"); err == nil {
		if resolved, err := filepath.EvalSymlinks(found); err == nil && resolved == executable {
			return "narad"
		}
	}
	workingDir, err := os.Getwd()
	if err != nil {
		return executable
	}
	relative, err := filepath.Rel(workingDir, executable)
	if err != nil || strings.HasPrefix(relative, "..") {
		return executable
	}
	return "./" + relative
}

func (a *app) printClusterBanner(plan clusterPlan, nodes []*devNode, command string) {
	ready := serving(nodes)
	fmt.Fprintf(a.stdout, "narad cluster: %s ready (auth on), data in %s\n", nodeCount(len(ready)), plan.dataDir)
	secrets := filepath.Join(plan.dataDir, clusterSecretsFile)
	fmt.Fprintf(a.stdout, "  user admin, password %s (kept in %s)\n", plan.secrets.AdminPassword, secrets)
	fmt.Fprintf(a.stdout, "  a node joining this cluster needs its secret, cluster_secret in %s, as NARAD_CLUSTER_SECRET (narad cluster --help)\n", secrets)
	for _, n := range nodes {
		state := ""
		if n.retired {
			state = "  (decommissioned: serves nothing)"
		}
		fmt.Fprintf(a.stdout, "  %s  %s  node-to-node %s  pid %d  log %s%s\n", n.id, n.url(), n.clusterAddr, n.Pid(), n.logPath, state)
	}
	first, second := ready[0].url(), ready[len(ready)-1].url()
	fmt.Fprintf(a.stdout, `try, in another terminal (any node serves any request):
  export NARAD_USER=admin NARAD_PASS=%[5]s
  %[4]s -s %[1]s topic add orders --partitions 6
  %[4]s -s %[1]s pub orders hello
  %[4]s -s %[2]s sub orders
  %[4]s -s %[2]s cluster members
Ctrl-C stops all %[3]s
`, first, second, countWord(len(nodes)), command, plan.secrets.AdminPassword)
}

// serving returns the nodes that were not found decommissioned.
func serving(nodes []*devNode) []*devNode {
	var ready []*devNode
	for _, n := range nodes {
		if !n.retired {
			ready = append(ready, n)
		}
	}
	return ready
}

// nodeCount is "1 node" or "N nodes": a run whose other nodes were
// decommissioned earlier has one node ready.
func nodeCount(count int) string {
	if count == 1 {
		return "1 node"
	}
	return fmt.Sprintf("%d nodes", count)
}

func countWord(count int) string {
	switch count {
	case 3:
		return "three"
	case 5:
		return "five"
	default:
		return fmt.Sprint(count)
	}
}

func exitText(err error) string {
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

// stopNodes sends SIGTERM to every running node and waits for each, up to
// clusterStopTimeout in all; a node still running then is killed.
func (a *app) stopNodes(nodes []*devNode) {
	var running []*devNode
	for _, n := range nodes {
		if n.Running() {
			running = append(running, n)
			if _, err := n.Signal(syscall.SIGTERM, true); err != nil {
				_ = n.Kill()
			}
		}
	}
	if len(running) > 0 {
		fmt.Fprintf(a.stderr, "narad cluster: stopping %s ...\n", nodeIDs(running))
	}
	deadline := time.NewTimer(clusterStopTimeout)
	defer deadline.Stop()
	expired := false
	for _, n := range running {
		if !expired {
			select {
			case <-n.Exited():
				continue
			case <-deadline.C:
				expired = true
			}
		}
		if !hasExited(n) {
			fmt.Fprintf(a.stderr, "narad cluster: %s did not stop within %s; killing it\n", n.id, clusterStopTimeout)
		}
		_ = n.Kill()
	}
	for _, n := range nodes {
		<-n.Exited()
	}
	if len(running) > 0 {
		fmt.Fprintln(a.stderr, "narad cluster: all nodes stopped")
	}
}

// hasExited reports whether n's process has been reaped.
func hasExited(n *devNode) bool {
	select {
	case <-n.Exited():
		return true
	default:
		return false
	}
}
