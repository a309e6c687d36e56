package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/proc"
)

// exitedNode is a devNode whose process ran /bin/false (it exits 1 at
// once, as a node that died does) and was reaped; answered says whether
// it had answered /readyz since that start.
func exitedNode(t *testing.T, id string, answered bool) *devNode {
	t.Helper()
	falseBinary, err := exec.LookPath("false")
	if err != nil {
		t.Skip("no false binary on this system")
	}
	planned := plannedNode{id: id, logPath: filepath.Join(t.TempDir(), id+".log")}
	n := &devNode{plannedNode: planned, Process: proc.NewProcess(proc.Spec{ID: id, Binary: falseBinary, LogPath: planned.logPath})}
	exits := make(chan *devNode, 1)
	require.NoError(t, n.launch(exits))
	require.Same(t, n, <-exits)
	n.answered = answered
	return n
}

// Property: with --restart-after, the supervisor starts again only a node
// that died (a non-zero exit, or a signal) after it had answered /readyz:
// not one that died while starting (it would die again), nor one that
// stopped cleanly (stopped on purpose, a decommissioned node say; the
// review found such a node started again), nor a decommissioned one.
func TestClusterUpRestartsOnlyANodeThatDiedAfterServing(t *testing.T) {
	var stderr bytes.Buffer
	plan := clusterPlan{restartAfter: time.Hour} // no restart comes due within the test
	served := exitedNode(t, "n1", true)
	starting := exitedNode(t, "n2", false)
	stopped := &devNode{plannedNode: plannedNode{id: "n3"}, Process: proc.NewProcess(proc.Spec{ID: "n3"}), answered: true}
	retired := exitedNode(t, "n4", true)
	retired.retired = true
	nodes := []*devNode{served, starting, stopped, retired}
	s := (&app{stderr: &stderr}).newSupervisor(plan, nodes, make(chan *devNode, len(nodes)))
	defer s.cancelPending()
	for _, n := range nodes {
		s.exited(n)
	}
	require.Len(t, s.pending, 1, "only n1 waits to be started again:\n%s", stderr.String())
	require.Contains(t, s.pending, "n1")
	out := stderr.String()
	require.Contains(t, out, "n1 exited (exit status 1); 3 node(s) keep running")
	require.Contains(t, out, "starting it again in 1h0m0s (--restart-after)")
	require.Contains(t, out, "n2 exited (exit status 1); 2 node(s) keep running")
	require.Contains(t, out, "not started again: it died before it answered /readyz")
	require.Contains(t, out, "not started again: it stopped cleanly (status 0)")
	require.Contains(t, out, "n4 exited (exit status 1); 0 node(s) keep running")
}
