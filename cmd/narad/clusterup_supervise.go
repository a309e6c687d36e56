package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"narad/proc"
)

// supervisor follows the nodes of a `cluster up` run once they are all
// ready, until the run ends. It reports every exit. With --restart-after
// (plan.restartAfter) it starts a node that died again on its data once
// that delay has passed, and reports when it answers /readyz again, unless
// the node died before it had answered since its last start (it would most
// likely die again: a port taken, a damaged directory; what that start
// logged is printed) or stopped cleanly (exit status 0: stopped on
// purpose, as a decommissioned node is). Everything runs on the goroutine
// of run; timers only hand nodes back to it.
type supervisor struct {
	a    *app
	plan clusterPlan
	// nodes are the run's nodes, the same slice runCluster stops at its end.
	nodes []*devNode
	// exits receives a node each time its process was reaped.
	exits chan *devNode
	// due receives a node whose restart delay has passed; a node has at
	// most one restart pending (it is down until then), so a buffer of
	// one per node never blocks a timer.
	due chan *devNode
	// pending are the timers of the restarts not yet due, by node id.
	pending map[string]*time.Timer
	// returning are the nodes started again that have not answered
	// /readyz yet, probed every clusterReadyPollInterval.
	returning []*devNode
}

func (a *app) newSupervisor(plan clusterPlan, nodes []*devNode, exits chan *devNode) *supervisor {
	return &supervisor{a: a, plan: plan, nodes: nodes, exits: exits,
		due: make(chan *devNode, len(nodes)), pending: map[string]*time.Timer{}}
}

// run supervises until ctx ends. It returns an error only when every node
// is down and none is waiting to be started again.
func (s *supervisor) run(ctx context.Context) error {
	defer s.cancelPending()
	probes := time.NewTicker(clusterReadyPollInterval)
	defer probes.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case n := <-s.exits:
			s.exited(n)
			if s.running() == 0 && len(s.pending) == 0 {
				return errors.New("every node of the cluster has exited")
			}
		case n := <-s.due:
			delete(s.pending, n.id)
			if ctx.Err() != nil {
				return nil // Ctrl-C came with the restart: nothing starts now
			}
			s.restart(n)
			if s.running() == 0 && len(s.pending) == 0 {
				return errors.New("every node of the cluster has exited")
			}
		case <-probes.C:
			s.probeReturning(ctx)
		}
	}
}

// exited reports n's exit and, when --restart-after allows it, schedules
// its restart.
func (s *supervisor) exited(n *devNode) {
	s.returning = removeNode(s.returning, n)
	n.down = true
	stderr := s.a.stderr
	fmt.Fprintf(stderr, "narad cluster: %s exited (%v); %d node(s) keep running; its log: %s\n", n.id, exitText(n.ExitErr()), s.up(), n.logPath)
	switch {
	case n.retired:
	case s.plan.restartAfter == 0:
		fmt.Fprintf(stderr, "  it stays down: start cluster up with --restart-after to have a node that dies started again\n")
	case n.ExitErr() == nil:
		fmt.Fprintf(stderr, "  not started again: it stopped cleanly (status 0), so it was stopped on purpose (a decommissioned node, say); Ctrl-C and cluster up start it again\n")
	case !n.answered:
		fmt.Fprintf(stderr, "  not started again: it died before it answered /readyz since its start %s ago; what it logged:\n%s",
			time.Since(n.startedAt).Round(100*time.Millisecond), logSince(n.logPath, n.logStart))
	default:
		s.pending[n.id] = time.AfterFunc(s.plan.restartAfter, func() { s.due <- n })
		fmt.Fprintf(stderr, "  starting it again in %s (--restart-after)\n", s.plan.restartAfter)
	}
}

// restart starts n again on its data.
func (s *supervisor) restart(n *devNode) {
	if err := n.launch(s.exits); err != nil {
		fmt.Fprintf(s.a.stderr, "narad cluster: %s could not be started again: %v\n", n.id, err)
		return
	}
	s.returning = append(s.returning, n)
	fmt.Fprintf(s.a.stderr, "narad cluster: %s started again (pid %d); waiting for it to answer /readyz ...\n", n.id, n.Pid())
}

// probeReturning asks each node started again whether it is ready, and
// stops waiting for one after clusterReadyTimeout (it keeps running).
func (s *supervisor) probeReturning(ctx context.Context) {
	var still []*devNode
	for _, n := range s.returning {
		probe, cancel := context.WithTimeout(ctx, clusterProbeTimeout)
		err := n.Ready(probe)
		cancel()
		switch {
		case err == nil:
			n.answered = true
			fmt.Fprintf(s.a.stderr, "narad cluster: %s ready again on %s after %s\n", n.id, n.url(), time.Since(n.startedAt).Round(100*time.Millisecond))
		case strings.Contains(err.Error(), retiredReadiness):
			n.retired = true
			fmt.Fprintf(s.a.stderr, "narad cluster: %s was decommissioned meanwhile: it serves nothing\n", n.id)
		case time.Since(n.startedAt) > clusterReadyTimeout && !n.slowSaid:
			n.slowSaid = true
			fmt.Fprintf(s.a.stderr, "narad cluster: %s is not ready %s after it was started again (%v); it keeps running, see %s\n",
				n.id, clusterReadyTimeout, err, n.logPath)
			still = append(still, n)
		default:
			still = append(still, n)
		}
	}
	s.returning = still
}

// running counts the nodes with a process not yet reaped.
func (s *supervisor) running() int {
	count := 0
	for _, n := range s.nodes {
		if n.Running() {
			count++
		}
	}
	return count
}

// up counts the nodes whose exit the supervisor has not taken: when
// several die at once, each report counts one fewer.
func (s *supervisor) up() int {
	count := 0
	for _, n := range s.nodes {
		if !n.down {
			count++
		}
	}
	return count
}

// logSince is what the log at path holds from offset on (what one process
// wrote), at most its last proc.LogTailBytes, ending in a newline.
func logSince(path string, offset int64) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return err.Error() + "\n"
	}
	data = data[min(offset, int64(len(data))):]
	if len(data) > proc.LogTailBytes {
		data = data[len(data)-proc.LogTailBytes:]
	}
	if len(data) == 0 {
		return "  (nothing)\n"
	}
	if data[len(data)-1] != '\n' {
		data = append(data, '\n')
	}
	return string(data)
}

// cancelPending stops the restarts not yet due: the run is ending.
func (s *supervisor) cancelPending() {
	for id, timer := range s.pending {
		timer.Stop()
		delete(s.pending, id)
	}
}

// removeNode returns nodes without n, in place.
func removeNode(nodes []*devNode, n *devNode) []*devNode {
	kept := nodes[:0]
	for _, other := range nodes {
		if other != n {
			kept = append(kept, other)
		}
	}
	return kept
}
