package sim

import "sort"

// ExpectedMarks are the coverage marks a long sweep with every fault must
// reach; each names a rare path of the core.
var ExpectedMarks = []string{
	"node-append-during-sync-round",
	"node-append-failed",
	"node-batch-ack",
	"node-batch-spans-partitions",
	"node-lease-expired",
	"node-log-evicted",
	"node-log-failed",
	"node-long-poll-timed-out",
	"node-long-poll-woken",
	"node-recovered-torn-tail",
	"node-redelivery",
	"sim-kill-during-sync-round",
}

// ExpectedClusterMarks are the further marks a sweep of multi-node worlds
// with every fault must reach: the simulator's own (which fault hit the
// metastore's leader or a follower, which partition shapes happened) and
// the node's paths across nodes.
var ExpectedClusterMarks = []string{
	"node-consume-probe-hit",
	"node-member-marked-dead",
	"node-produce-forwarded",
	"node-produce-rerouted",
	"sim-follower-killed",
	"sim-leader-isolated",
	"sim-leader-killed",
	"sim-partition-full",
	"sim-partition-one-way",
}

// MissingMarks lists the marks of expected absent from reached, sorted.
func MissingMarks(reached map[string]int, expected []string) []string {
	var missing []string
	for _, mark := range expected {
		if reached[mark] == 0 {
			missing = append(missing, mark)
		}
	}
	sort.Strings(missing)
	return missing
}
