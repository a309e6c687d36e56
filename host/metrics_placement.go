package host

import (
	"github.com/prometheus/client_golang/prometheus"

	"narad/node"
)

// placementGauges show the bounds a topic create or grow is checked
// against (topic.max_topics, topic.max_partitions_per_node) and this
// node's count under the second; the topics known are narad_topics_total.
// A 409 for either bound is then visible before it is met.
type placementGauges struct {
	// topicsMax is the cluster's bound of topics as this node holds it.
	topicsMax prometheus.Gauge
	// owned counts the partitions this node owns in its replica of the
	// placement; ownedMax is their bound.
	owned, ownedMax prometheus.Gauge
}

func newPlacementGauges(reg prometheus.Registerer) placementGauges {
	g := placementGauges{
		topicsMax: sampledGauge("topics_max", "Bound of the cluster's topics (topic.max_topics); past it a create answers 409."),
		owned:     sampledGauge("owned_partitions", "Partitions this node owns, the count topic.max_partitions_per_node bounds."),
		ownedMax: sampledGauge("owned_partitions_max",
			"Bound of owned_partitions (topic.max_partitions_per_node); a create or grow that would pass it answers 409."),
	}
	reg.MustRegister(g.topicsMax, g.owned, g.ownedMax)
	return g
}

// set publishes the node's numbers (setInventory's caller runs on the loop).
func (g placementGauges) set(s node.Stats) {
	g.topicsMax.Set(float64(s.TopicsMax))
	g.owned.Set(float64(s.OwnedPartitions))
	g.ownedMax.Set(float64(s.OwnedPartitionsMax))
}
