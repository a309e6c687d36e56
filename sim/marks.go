package sim

import "sort"

// ExpectedMarks are the coverage marks a long sweep with every fault must
// reach; each names a rare path of the core.
var ExpectedMarks = []string{
	"node-append-failed",
	"node-batch-ack",
	"node-batch-spans-partitions",
	"node-lease-expired",
	"node-log-failed",
	"node-long-poll-timed-out",
	"node-long-poll-woken",
	"node-recovered-torn-tail",
	"node-redelivery",
}

// MissingMarks lists the expected marks absent from reached, sorted.
func MissingMarks(reached map[string]int) []string {
	var missing []string
	for _, mark := range ExpectedMarks {
		if reached[mark] == 0 {
			missing = append(missing, mark)
		}
	}
	sort.Strings(missing)
	return missing
}
