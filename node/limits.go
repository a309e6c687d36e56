package node

import (
	"narad/meta"
	"narad/msg"
)

// placementLimits are the bounds a topic change carries to the
// metastore, which checks them again when it applies the change: the
// check below answers at once, the one at apply is exact.
func (n *Node) placementLimits() meta.PlacementLimits {
	return meta.PlacementLimits{TopicsMax: n.cfg.TopicsMax, PartitionsPerNodeMax: n.cfg.PartitionsPerNodeMax}
}

// checkPlacementLimits refuses a change whose placement would take the
// cluster past TopicsMax topics (newTopic: the change adds one) or a node
// past PartitionsPerNodeMax partitions (owners: the owners of the
// partitions it adds; owned: each member's count with them, from the
// placement's view). The check reads this node's replica, so creates
// racing on other nodes may pass it together; the metastore checks the
// same limits again when it applies the change (placementLimits).
func (n *Node) checkPlacementLimits(newTopic bool, owners []string, owned map[string]int) error {
	if newTopic && n.meta.State().TopicCount() >= n.cfg.TopicsMax {
		return msg.Conflict("the cluster holds its limit of %d topics; delete a topic first", n.cfg.TopicsMax)
	}
	for _, owner := range owners {
		if owned[owner] > n.cfg.PartitionsPerNodeMax {
			return msg.Conflict("node %s would own more than its limit of %d partitions; add nodes or delete topics",
				owner, n.cfg.PartitionsPerNodeMax)
		}
	}
	return nil
}
