package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
	"narad/proc"
)

// movesWatchInterval is how often moves --watch polls.
const movesWatchInterval = time.Second

func newClusterCommand(a *app) *cobra.Command {
	cmd := newGroupCommand("cluster", "Inspect the cluster, decommission nodes, run a local one",
		newMembersCommand(a), newMovesCommand(a), newDecommissionCommand(a), newClusterUpCommand(a))
	cmd.Long = `Inspect the cluster, decommission nodes, run a local one.

To add a node to a running cluster, start "narad serve --node-id <new id>"
on it with:
  NARAD_CLUSTER_SECRET           the cluster's secret (of a cluster up:
                                 cluster_secret in <data-dir>/secrets.json)
  NARAD_CLUSTER_ADDR             its own node-to-node address, host:port
  NARAD_CLUSTER_PEERS            itself and at least one member, such as
                                 n4@host4:7943,n1@host1:7943
  NARAD_CLUSTER_INITIAL_MEMBERS  the members in that list, itself left out
                                 (n1)
It asks to join until the leader adds it as a voter, then receives its
share of partitions. Never reuse a node id. More in docs/operations.md
("A cluster of your own").`
	return cmd
}

func newMembersCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "members",
		Short: "List the cluster's members with their partition counts",
		Long: `List the cluster's members, sorted by id, one line each:
  ADDR            its HTTP API address
  STATUS          alive, or dead (no heartbeat for cluster.dead_after_ms)
  DRAINING        yes once its decommission started (until cancelled)
  VOTER           yes while it votes in the metastore
  DISK LOW        yes when its last heartbeat said its free space was under
                  storage.disk_reserve_bytes: it refuses writes into its
                  partitions, and the planner moves no partition to it;
                  it gets no keyless records or new partitions while
                  another member has room
  PARTITIONS      the partitions it owns
  OUTBOUND MOVES  moves of its partitions to other members in flight
  INBOUND MOVES   moves onto it in flight
A draining member is drained when the last three are 0.`,
		Example: "  narad cluster members\n  narad cluster members --json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			members, err := broker.ClusterMembers(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, append([]client.Member{}, members...))
			}
			a.printMembers(members)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func (a *app) printMembers(members []client.Member) {
	if len(members) == 0 {
		fmt.Fprintln(a.stdout, "no members")
		return
	}
	table := newTable(a.stdout)
	table.row("ID", "ADDR", "STATUS", "DRAINING", "VOTER", "DISK LOW", "PARTITIONS", "OUTBOUND MOVES", "INBOUND MOVES")
	for _, member := range members {
		table.row(member.ID, member.Addr, member.Status, yesOrDash(member.Draining), yesOrDash(member.Voter), yesOrDash(member.DiskLow),
			strconv.Itoa(member.OwnedPartitions), strconv.Itoa(member.OutboundMoves), strconv.Itoa(member.InboundMoves))
	}
	table.flush()
}

func newMovesCommand(a *app) *cobra.Command {
	var asJSON, watch bool
	cmd := &cobra.Command{
		Use:   "moves",
		Short: "List partition moves in flight",
		Example: `  narad cluster moves
  narad cluster moves --watch     # re-poll every second until Ctrl-C`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			if watch {
				return a.watchMoves(cmd.Context(), broker, asJSON)
			}
			return a.showMoves(cmd.Context(), broker, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&watch, "watch", false, "re-poll every second until interrupted (a failure a retry may mend, such as a 503 while a node restarts, is reported and polled again)")
	return cmd
}

func (a *app) showMoves(ctx context.Context, broker *client.Client, asJSON bool) error {
	moves, err := broker.ClusterMoves(ctx)
	if err != nil {
		return err
	}
	if asJSON {
		return printJSON(a.stdout, append([]client.Move{}, moves...))
	}
	a.printMoves(moves, time.Now())
	return nil
}

// watchMoves polls until ctx ends; an interrupt is a normal end. A poll
// that fails in a way a retry may mend (a node restarting: 503, a refused
// connection) is reported on stderr and polled again, as decommission
// --wait does: a watch of a drain outlives such a moment.
func (a *app) watchMoves(ctx context.Context, broker *client.Client, asJSON bool) error {
	for {
		if !asJSON {
			fmt.Fprintln(a.stdout, a.style().dim(time.Now().In(a.location).Format("15:04:05")))
		}
		err := a.showMoves(ctx, broker, asJSON)
		switch {
		case err == nil || ctx.Err() != nil:
		case !retryable(err):
			return err
		default:
			fmt.Fprintf(a.stderr, "reading the moves failed: %v (retrying)\n", err)
		}
		if proc.SleepContext(ctx, movesWatchInterval) != nil {
			return nil
		}
		fmt.Fprintln(a.stdout)
	}
}

func (a *app) printMoves(moves []client.Move, now time.Time) {
	if len(moves) == 0 {
		fmt.Fprintln(a.stdout, "no moves in flight")
		return
	}
	table := newTable(a.stdout)
	table.row("TOPIC", "PARTITION", "FROM", "TO", "PHASE", "COPIED", "AGE")
	for _, move := range moves {
		table.row(move.Topic, strconv.Itoa(move.Partition), move.From, move.To, dashIfEmpty(move.Phase),
			moveProgress(move), moveAge(move, now))
	}
	table.flush()
}

func dashIfEmpty(text string) string {
	if text == "" {
		return "-"
	}
	return text
}

// moveProgress is the share copied, at most 100 %: bytes_copied counts
// the bytes of segments the source's retention removed after they were
// copied, bytes_total only the source's size now, so the first can pass
// the second while the catch-up goes on (and the answer does not say how
// much of what is left the copy holds).
func moveProgress(move client.Move) string {
	if move.BytesTotal <= 0 {
		return "-"
	}
	return fmt.Sprintf("%d%%", min(move.BytesCopied, move.BytesTotal)*100/move.BytesTotal)
}

func moveAge(move client.Move, now time.Time) string {
	if move.StartedAtMs <= 0 {
		return "-"
	}
	return shortDuration(now.Sub(time.UnixMilli(move.StartedAtMs)).Round(time.Second))
}

func newDecommissionCommand(a *app) *cobra.Command {
	var cancel, wait bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "decommission <node-id>",
		Short: "Drain a node's partitions away (or --cancel the drain)",
		Long: `Marks the node draining: its partitions move to the other nodes by live
copy while produce goes on, and once it owns nothing the leader takes it
out of the voters (never below three). The command returns once the drain
has started; with --wait it follows the drain, printing on stderr how many
partitions are left whenever that changes (and every 5 s while it does
not, with the time the wait has taken), and returns with exit 0 once
the node owns none and the leader took it out of the voters: only then
may it be stopped. A voter of a three-voter cluster stays one, which the
wait says at once, and in a larger cluster it waits up to 30 s for the
removal, then says why the node may still be one; both end with exit 1
(keep the node running), as does a drain cancelled, --timeout passing or
an interrupt (the drain itself goes on).

Once out of the voters, the node still forwards its clients' requests to
the owners for cluster.dead_after_ms (NARAD_CLUSTER_DEAD_AFTER_MS, 30s by
default) after it learned of its removal, and refuses them 503 after
that: move the clients still sending to it to other nodes within that
window, then stop its process (never start it again under this id).`,
		Example: `  narad cluster decommission n3
  narad cluster decommission n3 --wait --timeout 30m
  narad cluster decommission n3 --cancel`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case cancel && wait:
				return usagef("--wait follows a drain; it cannot be used with --cancel")
			case timeout < 0:
				return usagef("--timeout must not be negative")
			case timeout > 0 && !wait:
				return usagef("--timeout bounds --wait; give --wait too")
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			if cancel {
				return a.cancelDecommission(cmd.Context(), broker, args[0])
			}
			if err := broker.Decommission(cmd.Context(), args[0], false); err != nil {
				return err
			}
			switch {
			case !wait:
				a.sayDecommissioned(cmd.Context(), broker, args[0])
				return nil
			}
			fmt.Fprintf(a.stderr, "%s is draining; waiting until it owns no partition, then for it to leave the voters (Ctrl-C stops waiting, not the drain)\n", args[0])
			ctx := cmd.Context()
			if timeout > 0 {
				var stop context.CancelFunc
				ctx, stop = context.WithTimeoutCause(ctx, timeout, errDrainTimeout)
				defer stop()
			}
			return a.waitForDrain(ctx, broker, args[0], a.drainPoll())
		},
	}
	cmd.Flags().BoolVar(&cancel, "cancel", false, "cancel a decommission in progress (the planner then moves partitions back onto the node to rebalance)")
	cmd.Flags().BoolVar(&wait, "wait", false, "follow the drain until the node owns no partition and leaves the voters")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "with --wait: stop waiting after this long (0: no limit)")
	return cmd
}

// drainPoll is how often decommission --wait reads the members.
func (a *app) drainPoll() time.Duration {
	if a.drainPollEvery > 0 {
		return a.drainPollEvery
	}
	return drainPollInterval
}

func yesOrDash(flag bool) string {
	if flag {
		return "yes"
	}
	return "-"
}
