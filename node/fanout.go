package node

import (
	"slices"

	"narad/meta"
	"narad/msg"
)

// The fan-out bounds of the request surface (package msg) and of the
// metastore must be one: this fails to compile when they differ.
const (
	_ = uint(msg.FanoutChildrenMax-meta.FanoutChildrenMax) + uint(meta.FanoutChildrenMax-msg.FanoutChildrenMax)
	_ = uint(msg.FanoutDelayMsMax-meta.FanoutDelayMsMax) + uint(meta.FanoutDelayMsMax-msg.FanoutDelayMsMax)
)

// checkFanoutRequest checks the names and the delay of an attach (or a
// create with a parent) before anything is proposed; the role rules are
// the metastore's, checked when the entry applies. delayField names the
// delay in the request's body (delay_ms of an attach, fanout_delay_ms of a
// create).
func checkFanoutRequest(parent, child, delayField string, delayMs int64) error {
	if err := validTopicName(parent); err != nil {
		return err
	}
	if child == "" {
		return msg.Invalid("child is required")
	}
	if err := validTopicName(child); err != nil {
		return err
	}
	if len(child) > fanoutChildNameBytesMax {
		return msg.Invalid("a fan-out child's name is at most %d bytes (its cursor files are named after it), got %d", fanoutChildNameBytesMax, len(child))
	}
	if delayMs < 0 || delayMs > msg.FanoutDelayMsMax {
		return msg.Invalid("%s must be between 0 and %d (one year), got %d", delayField, msg.FanoutDelayMsMax, delayMs)
	}
	return nil
}

// attachChild proposes the link; the reply (the parent's topic) leaves
// when the entry applies.
func (n *Node) attachChild(id msg.RequestID, r msg.AttachChild) {
	err := checkFanoutRequest(r.Parent, r.Child, "delay_ms", r.DelayMs)
	if err == nil {
		_, err = n.topic(r.Parent)
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	n.propose(id, proposalAttach, r.Parent, meta.AttachChild{Parent: r.Parent, Child: r.Child, DelayMs: r.DelayMs, AttachedAtMs: n.nowMs,
		ExpectedOwner: r.ExpectedOwner, DeadLetterLinksChecked: true, SameSchemaAttached: true})
}

// detachChild proposes the removal of the link.
func (n *Node) detachChild(id msg.RequestID, r msg.DetachChild) {
	err := validTopicName(r.Parent)
	if err == nil {
		err = validTopicName(r.Child)
	}
	if err == nil {
		_, err = n.topic(r.Parent)
	}
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	n.propose(id, proposalDetach, r.Parent, meta.DetachChild{Parent: r.Parent, Child: r.Child, ExpectedOwner: r.ExpectedOwner})
}

// childPlacement is the parent of a topic being created, and the owner of
// each of its partitions, for the anti-affine placement of the child.
func (n *Node) childPlacement(r msg.CreateTopic) (*topic, error) {
	if r.Parent == "" {
		if r.FanoutDelayMs != 0 {
			return nil, msg.Invalid("fanout_delay_ms needs a parent")
		}
		return nil, nil
	}
	if err := checkFanoutRequest(r.Parent, r.Name, "fanout_delay_ms", r.FanoutDelayMs); err != nil {
		return nil, err
	}
	parent, ok := n.lookupTopic(r.Parent)
	if !ok {
		return nil, msg.NotFound("parent topic %q not found", r.Parent)
	}
	return parent, nil
}

// placeChildPartitions places a child's partitions round-robin as any
// topic's, then moves each partition p off the owner of the parent's
// partition p when another receiver can take it, so that a node that
// loses a parent partition does not hold its copy too (swapping with a
// later partition where that keeps both apart, else taking the first
// receiver under PartitionsPerNodeMax partitions: one with room on disk
// first, else one short of disk, whose shortage passes, rather than the
// parent's node). When no other receiver is under the partition limit
// the partition stays with the parent's node: apartness is a preference,
// the limit a bound.
func (n *Node) placeChildPartitions(view *placementView, parent *topic, name string, count int) []string {
	owners := n.placePartitions(view, name, 0, count)
	for p := range owners {
		if p >= parent.info.Partitions || owners[p] != parent.owner(p) {
			continue
		}
		if q := n.antiAffineSwap(parent, owners, p); q >= 0 {
			owners[p], owners[q] = owners[q], owners[p]
			continue
		}
		if other := n.apartFrom(view, parent.owner(p)); other != "" {
			view.owned[owners[p]]--
			view.owned[other]++
			owners[p] = other
		}
	}
	return owners
}

// apartFrom returns the first receiver other than avoid that owns fewer
// than PartitionsPerNodeMax partitions: one with room on disk first, else
// one short of disk; "" when there is none.
func (n *Node) apartFrom(view *placementView, avoid string) string {
	for _, receivers := range [][]string{view.roomy, view.all} {
		for _, other := range receivers {
			if other != avoid && view.owned[other] < n.cfg.PartitionsPerNodeMax {
				return other
			}
		}
	}
	return ""
}

// antiAffineSwap finds a partition q whose owner may take p's place and
// whose own place p's owner may take, or -1.
func (n *Node) antiAffineSwap(parent *topic, owners []string, p int) int {
	for q := p + 1; q < len(owners); q++ {
		parentQ := ""
		if q < parent.info.Partitions {
			parentQ = parent.owner(q)
		}
		if owners[q] != parent.owner(p) && owners[p] != parentQ {
			return q
		}
	}
	return -1
}

// receiversByRoom lists the members that may take new partitions, sorted:
// those with room (not Member.DiskLow), and all of them.
func (n *Node) receiversByRoom() (roomy, all []string) {
	for _, m := range n.meta.State().Members() {
		if !n.receiving(m) {
			continue
		}
		all = append(all, m.ID)
		if !m.DiskLow {
			roomy = append(roomy, m.ID)
		}
	}
	return roomy, all
}

// childrenJoin gathers the lag of a parent's children from the owners of
// its partitions.
type childrenJoin struct {
	client msg.RequestID
	result msg.ChildrenResult
	// pending counts the owners yet to answer.
	pending int
}

// listChildrenRouted answers with the parent's children and their lag:
// this node's cursors, and those of every other owner.
func (n *Node) listChildrenRouted(id msg.RequestID, r msg.ListChildren) {
	t, err := n.topic(r.Parent)
	if err != nil {
		n.reply(id, nil, err)
		return
	}
	j := &childrenJoin{client: id, result: n.localChildLags(t)}
	if localOnly(id) {
		n.reply(id, j.result, nil)
		return
	}
	owners := n.otherOwners(t)
	for _, owner := range owners {
		if !n.ownerAvailable(owner, nil) {
			j.incomplete()
			continue
		}
		j.pending++
		n.forward(owner, r, n.cfg.ForwardTimeoutMs, func(reply msg.Reply) {
			j.merge(reply)
			j.pending--
			if j.pending == 0 {
				n.reply(j.client, j.result, nil)
			}
		})
	}
	if j.pending == 0 {
		n.reply(id, j.result, nil)
	}
}

// otherOwners lists the owners of t's partitions other than this node,
// sorted.
func (n *Node) otherOwners(t *topic) []string {
	var owners []string
	for index := range t.info.Partitions {
		if owner := t.owner(index); owner != n.cfg.NodeID && !slices.Contains(owners, owner) {
			owners = append(owners, owner)
		}
	}
	slices.Sort(owners)
	return owners
}

// merge adds an owner's lags; a failed or foreign answer leaves the lag a
// lower bound.
func (j *childrenJoin) merge(reply msg.Reply) {
	other, ok := reply.Result.(msg.ChildrenResult)
	if reply.Err != nil || !ok {
		j.incomplete()
		return
	}
	for i := range j.result.Children {
		mine := &j.result.Children[i]
		k := slices.IndexFunc(other.Children, func(c msg.ChildLag) bool { return c.Name == mine.Name })
		if k < 0 {
			mine.LagComplete = false // that owner's replica does not know the link yet
			continue
		}
		mine.LagMessages += other.Children[k].LagMessages
		mine.LagComplete = mine.LagComplete && other.Children[k].LagComplete
	}
}

// incomplete marks every child's lag as a lower bound.
func (j *childrenJoin) incomplete() {
	for i := range j.result.Children {
		j.result.Children[i].LagComplete = false
	}
}

// localChildLags is the lag of each child over the parent partitions this
// node owns.
func (n *Node) localChildLags(t *topic) msg.ChildrenResult {
	record, _ := n.meta.State().Topic(t.info.Name)
	result := msg.ChildrenResult{Parent: t.info.Name, Children: []msg.ChildLag{}}
	for _, link := range record.Children {
		lag := msg.ChildLag{Name: link.Name, DelayMs: link.DelayMs, LagComplete: true}
		for index := range t.info.Partitions {
			if !n.ownedHere(t, index) {
				continue
			}
			behind, known := n.cursorLag(t, index, link)
			lag.LagMessages += behind
			lag.LagComplete = lag.LagComplete && known
		}
		result.Children = append(result.Children, lag)
	}
	return result
}
