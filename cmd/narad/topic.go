package main

import (
	"bufio"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"narad/client"
	"narad/msg"
)

// confirmLineBytesMax bounds the answer read at a [y/N] prompt.
const confirmLineBytesMax = 256

// errAborted is returned when the user answers no at a prompt.
var errAborted = errors.New("aborted")

func newTopicCommand(a *app) *cobra.Command {
	group := newGroupCommand("topic", "Create, list, describe, change and delete topics",
		newTopicAddCommand(a), newTopicListCommand(a), newTopicInfoCommand(a),
		newTopicEditCommand(a), newTopicSchemaCommand(a), newTopicRemoveCommand(a),
		newTopicAttachCommand(a), newTopicDetachCommand(a), newTopicChildrenCommand(a))
	group.Aliases = []string{"topics"}
	return group
}

// topicSettings are the flags shared by topic add and topic edit.
type topicSettings struct {
	partitions    int
	retention     time.Duration
	visibility    time.Duration
	maxInFlight   int
	maxAckedAhead int
	// schemaFile names a JSON Schema file ("-" for stdin); "" for none.
	schemaFile string
	// maxDeliveries and deadLetterTopic are the dead-letter setting.
	maxDeliveries   int
	deadLetterTopic string
}

func (s *topicSettings) register(flags *pflag.FlagSet, partitionsHelp string) {
	flags.IntVar(&s.partitions, "partitions", 0, partitionsHelp)
	flags.DurationVar(&s.retention, "retention", 0, "how long records are kept, e.g. 24h (1h to 876000h, 100 years; 0 = server default)")
	flags.DurationVar(&s.visibility, "visibility", 0, "lease of a consumed message before it is redelivered, e.g. 30s (1ms to 12h; 0 = server default)")
	flags.IntVar(&s.maxInFlight, "max-in-flight", 0, "most unacknowledged messages per partition (1 to 1048576; 0 = server default)")
	flags.IntVar(&s.maxAckedAhead, "max-acked-ahead", 0, "most out-of-order acks held per partition (1 to 1048576; 0 = server default)")
	flags.StringVar(&s.schemaFile, "schema", "", "JSON Schema file that every message must match (\"-\" reads stdin; at most 256 KiB)")
	flags.IntVar(&s.maxDeliveries, "max-deliveries", 0,
		"deliveries a message gets before it moves to the dead-letter topic (1 to 1000; 0 = never; needs a dead-letter topic: --dead-letter-topic, or on edit the one the topic has)")
	flags.StringVar(&s.deadLetterTopic, "dead-letter-topic", "",
		"existing topic that takes the messages which ran out of deliveries (\"\" with --max-deliveries 0 turns it off)")
}

func (s topicSettings) check() error {
	// Each is named, so the message says which flag to mend.
	negative := []struct {
		flag     string
		negative bool
	}{{"--partitions", s.partitions < 0}, {"--retention", s.retention < 0}, {"--visibility", s.visibility < 0},
		{"--max-in-flight", s.maxInFlight < 0}, {"--max-acked-ahead", s.maxAckedAhead < 0}, {"--max-deliveries", s.maxDeliveries < 0}}
	for _, setting := range negative {
		if setting.negative {
			return usagef("%s must not be negative", setting.flag)
		}
	}
	if s.retention > retentionMax {
		return usagef("--retention must be at most %dh (100 years)", retentionMax/time.Hour)
	}
	if err := wholeMilliseconds("--retention", s.retention); err != nil {
		return err
	}
	return wholeMilliseconds("--visibility", s.visibility)
}

// retentionMax is the longest --retention the server takes
// (msg.RetentionMsMax): refused here, nothing is sent.
const retentionMax = msg.RetentionMsMax * time.Millisecond

// wholeMilliseconds refuses a duration the API cannot carry: the API
// counts milliseconds, and a fraction would be dropped silently (a
// --delay of 500us would make a plain child instead of a delay child).
func wholeMilliseconds(flag string, d time.Duration) error {
	if d%time.Millisecond != 0 {
		return usagef("%s %s is not a whole number of milliseconds", flag, d)
	}
	return nil
}

func newTopicAddCommand(a *app) *cobra.Command {
	var settings topicSettings
	var parent string
	var delay time.Duration
	cmd := &cobra.Command{
		Use:   "add <name>",
		Short: "Create a topic and print it as JSON",
		Example: `  narad topic add orders
  narad topic add orders --partitions 6 --retention 72h --visibility 1m
  narad topic add orders --schema orders.schema.json   # messages must be JSON matching it
  narad topic add orders --max-deliveries 5 --dead-letter-topic orders.dead   # the dead-letter topic must exist
  narad topic add orders-audit --parent orders          # a fan-out child: gets every new record of orders
  narad topic add orders-later --parent orders --delay 1h`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.check(); err != nil {
				return err
			}
			if cmd.Flags().Changed("delay") && parent == "" {
				return usagef("--delay needs --parent")
			}
			if delay < 0 {
				return usagef("--delay must not be negative")
			}
			if err := wholeMilliseconds("--delay", delay); err != nil {
				return err
			}
			request := client.CreateTopicRequest{Name: args[0], Partitions: settings.partitions,
				RetentionMs: settings.retention.Milliseconds(), VisibilityTimeoutMs: settings.visibility.Milliseconds(),
				MaxInFlightPerPartition: settings.maxInFlight, MaxAckedAheadPerPartition: settings.maxAckedAhead,
				Parent: parent, FanoutDelayMs: delay.Milliseconds(),
				MaxDeliveries: settings.maxDeliveries, DeadLetterTopic: settings.deadLetterTopic}
			if settings.schemaFile != "" {
				schema, err := a.readSchemaFile(settings.schemaFile)
				if err != nil {
					return err
				}
				request.Schema = schema
			}
			return a.createTopic(cmd, request)
		},
	}
	settings.register(cmd.Flags(), fmt.Sprintf("number of partitions (%d to the server's topic.max_partitions, %d by default; 0 = server default, or with --parent the parent's count)",
		msg.PartitionsMin, msg.PartitionsMaxDefault))
	cmd.Flags().StringVar(&parent, "parent", "", "attach the new topic as a fan-out child of this topic")
	cmd.Flags().DurationVar(&delay, "delay", 0, "fan-out delay of a child topic (needs --parent; at most 8760h, and the parent must keep records at least the delay plus 1h)")
	return cmd
}

func (a *app) createTopic(cmd *cobra.Command, request client.CreateTopicRequest) error {
	broker, err := a.newClient(cmd)
	if err != nil {
		return err
	}
	topic, err := broker.CreateTopic(cmd.Context(), request)
	if err != nil {
		return err
	}
	return printJSON(a.stdout, topic)
}

func newTopicListCommand(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "ls",
		Short:   "List every topic (follows pagination)",
		Example: "  narad topic ls\n  narad topic ls --json | jq -r '.[].name'",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			topics, err := broker.AllTopics(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(a.stdout, append([]client.Topic{}, topics...))
			}
			a.printTopicTable(topics)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the topics as a JSON array")
	return cmd
}

func (a *app) printTopicTable(topics []client.Topic) {
	if len(topics) == 0 {
		fmt.Fprintln(a.stdout, "no topics")
		return
	}
	table := newTable(a.stdout)
	table.row("NAME", "PARTITIONS", "RETENTION", "ROLE")
	for _, topic := range topics {
		table.row(topic.Name, strconv.Itoa(topic.Partitions), retentionText(topic.RetentionMs), roleText(topic))
	}
	table.flush()
}

func retentionText(retentionMs int64) string {
	if retentionMs == 0 {
		return "forever"
	}
	if retentionMs > math.MaxInt64/int64(time.Millisecond) {
		// Past a time.Duration's 292 years: whole days, which cannot
		// overflow (a topic created before the server bounded retention
		// at 100 years may have any retention of an hour or more).
		return strconv.FormatInt(retentionMs/(24*time.Hour).Milliseconds(), 10) + "d"
	}
	return shortDuration(time.Duration(retentionMs) * time.Millisecond)
}

func roleText(topic client.Topic) string {
	switch {
	case topic.Role == "parent":
		return "parent"
	case topic.Role == "child" && topic.FanoutDelayMs > 0:
		delay := shortDuration(time.Duration(topic.FanoutDelayMs) * time.Millisecond)
		return fmt.Sprintf("child of %s (delay %s)", topic.Parent, delay)
	case topic.Role == "child":
		return "child of " + topic.Parent
	default:
		return "-"
	}
}

func newTopicInfoCommand(a *app) *cobra.Command {
	var partition int
	cmd := &cobra.Command{
		Use:     "info <name>",
		Short:   "Describe a topic with its partition stats, as JSON",
		Example: "  narad topic info orders\n  narad topic info orders --partition 2",
		Args:    usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if partition < 0 {
				return usagef("--partition must not be negative")
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			var only *int
			if cmd.Flags().Changed("partition") {
				only = &partition
			}
			topic, err := broker.GetTopic(cmd.Context(), args[0], only)
			if err != nil {
				return err
			}
			return printJSON(a.stdout, topic)
		},
	}
	cmd.Flags().IntVar(&partition, "partition", 0, "show only this partition's stats")
	return cmd
}

func newTopicEditCommand(a *app) *cobra.Command {
	var settings topicSettings
	cmd := &cobra.Command{
		Use:   "edit <name>",
		Short: "Change a topic's settings; only the flags given are sent",
		Example: `  narad topic edit orders --visibility 2m
  narad topic edit orders --partitions 12 --retention 168h
  narad topic edit orders --schema orders.v2.schema.json   # a new version that only adds to the last
  narad topic edit orders --max-deliveries 5 --dead-letter-topic orders.dead
  narad topic edit orders --max-deliveries 0 --dead-letter-topic ""   # dead letters off`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := settings.check(); err != nil {
				return err
			}
			request := settings.alterRequest(cmd.Flags())
			if settings.schemaFile != "" {
				schema, err := a.readSchemaFile(settings.schemaFile)
				if err != nil {
					return err
				}
				request.Schema = schema
			}
			if request.IsEmpty() {
				return usagef("nothing to change: give at least one of --partitions, --retention, --visibility, --max-in-flight, --max-acked-ahead, --schema, " +
					"--max-deliveries, --dead-letter-topic")
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			topic, err := broker.AlterTopic(cmd.Context(), args[0], request)
			if err != nil {
				return err
			}
			return printJSON(a.stdout, topic)
		},
	}
	settings.register(cmd.Flags(), fmt.Sprintf("grow the topic to this many partitions (never shrinks; at most the server's topic.max_partitions, %d by default)", msg.PartitionsMaxDefault))
	return cmd
}

// alterRequest sets exactly the fields whose flags were given.
func (s topicSettings) alterRequest(flags *pflag.FlagSet) client.AlterTopicRequest {
	var request client.AlterTopicRequest
	if flags.Changed("partitions") {
		request.Partitions = client.Ptr(s.partitions)
	}
	if flags.Changed("retention") {
		request.RetentionMs = client.Ptr(s.retention.Milliseconds())
	}
	if flags.Changed("visibility") {
		request.VisibilityTimeoutMs = client.Ptr(s.visibility.Milliseconds())
	}
	if flags.Changed("max-in-flight") {
		request.MaxInFlightPerPartition = client.Ptr(s.maxInFlight)
	}
	if flags.Changed("max-acked-ahead") {
		request.MaxAckedAheadPerPartition = client.Ptr(s.maxAckedAhead)
	}
	if flags.Changed("max-deliveries") {
		request.MaxDeliveries = client.Ptr(s.maxDeliveries)
	}
	if flags.Changed("dead-letter-topic") {
		request.DeadLetterTopic = client.Ptr(s.deadLetterTopic)
	}
	return request
}

func newTopicRemoveCommand(a *app) *cobra.Command {
	var force bool
	cmd := &cobra.Command{
		Use:   "rm <name>",
		Short: "Delete a topic and all its data (asks first unless -f)",
		Example: `  narad topic rm orders        # asks [y/N] on a terminal
  narad topic rm orders -f     # scripts: no question`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := a.confirmDelete(args[0], force); err != nil {
				return err
			}
			broker, err := a.newClient(cmd)
			if err != nil {
				return err
			}
			if err := broker.DeleteTopic(cmd.Context(), args[0]); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "deleted %s\n", args[0])
			return nil
		},
	}
	cmd.Flags().BoolVarP(&force, "force", "f", false, "delete without asking")
	return cmd
}

// confirmDelete asks [y/N] on a terminal; without a terminal it refuses
// unless forced.
func (a *app) confirmDelete(topic string, force bool) error {
	if force {
		return nil
	}
	if !a.stdinIsTerminal {
		return usagef("refusing to delete topic %q without --force: stdin is not a terminal", topic)
	}
	fmt.Fprintf(a.stderr, "delete topic %q and all its data? [y/N] ", topic)
	line, _ := bufio.NewReaderSize(a.stdin, confirmLineBytesMax).ReadSlice('\n')
	answer := strings.ToLower(strings.TrimSpace(string(line)))
	if answer != "y" && answer != "yes" {
		return errAborted
	}
	return nil
}
