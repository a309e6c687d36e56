package main

import (
	"time"

	"github.com/spf13/cobra"

	"narad/client"
)

func newTopicAttachCommand(a *app) *cobra.Command {
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "attach <parent> <child>",
		Short: "Make an existing topic a fan-out child of another and print the parent as JSON",
		Long: `Every record committed in the parent after the attach is copied into the
child, keys kept (no backfill of older records). With --delay the child is a
delay child: a record reaches it no earlier than its commit time plus the
delay, and clients may not produce to it directly. The parent's retention
must be at least the delay plus an hour. A parent has at most 108 children; a child
has one parent and cannot itself be a parent.`,
		Example: `  narad topic attach orders orders-audit
  narad topic attach orders orders-reminders --delay 24h`,
		Args: usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if delay < 0 {
				return usagef("--delay must not be negative")
			}
			if err := wholeMilliseconds("--delay", delay); err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			parent, err := broker.AttachChild(cmd.Context(), args[0], client.AttachChildRequest{Child: args[1], DelayMs: delay.Milliseconds()})
			if err != nil {
				return err
			}
			return printJSON(a.stdout, parent)
		},
	}
	cmd.Flags().DurationVar(&delay, "delay", 0, "make the child a delay child: records arrive this long after their commit, e.g. 15m (at most 8760h)")
	return cmd
}

func newTopicDetachCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:     "detach <parent> <child>",
		Short:   "Stop copying a parent's records into a child; both topics stay",
		Example: "  narad topic detach orders orders-audit",
		Args:    usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			return broker.DetachChild(cmd.Context(), args[0], args[1])
		},
	}
}

func newTopicChildrenCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "children <parent>",
		Short: "List a parent's fan-out children with their lag, as JSON",
		Long: `lag_messages is how many of the parent's records each child has not
received yet, summed over the parent's partitions; lag_complete is false when
some partition's owner did not answer, so the lag is a lower bound.`,
		Example: "  narad topic children orders",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			children, err := broker.ListChildren(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(a.stdout, children)
		},
	}
}
