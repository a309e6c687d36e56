package node

import (
	"fmt"

	"narad/msg"
)

// Retirement. A node whose decommission is complete (it left the voters)
// may be left running, and clients may still send it requests until the
// operator takes it out of their way. Such a node changes nothing: the
// metastore refuses its Raft traffic (meta: a removed replica's messages,
// its proposals included), and it refuses every change asked of it (a
// topic's creation, change or deletion, a decommission, a user change)
// with a 503 naming its decommission, at once; its users table no
// longer follows the cluster's. So that a drain never refuses a produce,
// it keeps serving the data plane (produce, consume, ack, replay, and the
// reads of its view), forwarding to the owners, for MemberDeadAfterMs
// after it learned of its decommission, its readiness already saying so
// (a load balancer takes it out); then it refuses those too.
//
// It learns of its decommission when its replica applies its own removal,
// or, since a replica removed from the group may never hear of the entry
// that removed it, when a peer tells it so (msg.Retired): every node that
// gets a message from a node its replica shows retired tells it, at most
// once per retiredTellEveryMs. Once learned, it holds until the process
// stops (a removal is for good: the id can never join again, and a peer
// whose replica lags can only miss a retirement, never see one that is
// not); a start again on its data learns it again from its replica or
// its first message's answer.

// retiredTellEveryMs bounds how often a node tells one retired node so.
const retiredTellEveryMs = 1_000

// retirement is this node's knowledge of completed decommissions. Only
// the node's own methods change it.
type retirement struct {
	// sinceMs is when this node learned its own decommission is complete
	// (this node's clock); 0 while it is not known. Set once.
	sinceMs int64
	// toldBy is the peer that told this node so, "" when its own replica
	// showed it first.
	toldBy string
	// told holds the retired nodes this node told so within
	// retiredTellEveryMs (tellRetired).
	told onceEvery[string]
	// shown is whether this node's replica shows it retired, per applied
	// index (shownRetired).
	shown appliedMemo[bool]
}

// shownRetired reports whether this node's replica shows its own
// decommission complete (State.Retired). Every tick and every request
// ask, and the answer changes only when an entry applies: the state is
// read once per applied index.
func (n *Node) shownRetired() bool {
	applied := n.meta.AppliedIndex()
	if shown, ok := n.retirement.shown.lookup(applied); ok {
		return shown
	}
	return n.retirement.shown.keep(applied, n.meta.State().Retired(n.cfg.NodeID))
}

// knowsRetired reports whether this node knows its decommission is
// complete.
func (n *Node) knowsRetired() bool {
	return n.retirement.sinceMs != 0 || n.shownRetired()
}

// noteRetirement records when this node learned of its decommission (at
// each Tick, and at a tell), and says so once.
func (n *Node) noteRetirement() {
	if n.retirement.sinceMs != 0 || (n.retirement.toldBy == "" && !n.shownRetired()) {
		return
	}
	n.retirement.sinceMs = max(n.nowMs, 1)
	n.observer.Event("decommission-complete", "this node left the voters: it takes no change, serves its clients' reads and writes "+
		"through the other nodes for the dead-after period, then refuses them; stop it")
}

// retiredError is the answer of a retired node to what it refuses.
func (n *Node) retiredError() error {
	by := ""
	if n.retirement.toldBy != "" && !n.meta.State().Retired(n.cfg.NodeID) {
		by = fmt.Sprintf(", node %s says", n.retirement.toldBy)
	}
	return msg.Unavailable("node %s was decommissioned (it left the cluster's voters%s): send requests to another node, and stop this one", n.cfg.NodeID, by)
}

// retiredRefusal is why a retired node refuses a client's request now,
// or nil: a change at once, the data plane once its grace ran out (it
// starts at the Tick that noted the retirement).
func (n *Node) retiredRefusal(req msg.Request) error {
	if !n.knowsRetired() {
		return nil
	}
	graceOver := n.retirement.sinceMs != 0 && n.nowMs-n.retirement.sinceMs >= n.cfg.MemberDeadAfterMs
	if changesMetadata(req) || graceOver {
		return n.retiredError()
	}
	return nil
}

// changesMetadata reports whether a client's request asks for a change of
// the metastore.
func changesMetadata(req msg.Request) bool {
	switch req.(type) {
	case msg.CreateTopic, msg.AlterTopic, msg.DeleteTopic, msg.Decommission, msg.AttachChild, msg.DetachChild:
		return true
	}
	return false
}

// refuseRetiredPeer tells a peer whose decommission this node's replica
// shows complete so (tellRetired), and refuses a forwarded change from
// it. Its Raft traffic is refused by the metastore; the rest of what it
// sends is served (a retired node forwards its clients' reads and writes
// during its grace).
func (n *Node) refuseRetiredPeer(env msg.Envelope) error {
	if !n.meta.State().Retired(env.From) {
		return nil
	}
	n.tellRetired(env.From)
	if forward, ok := env.Message.(msg.ForwardRequest); ok && changesMetadata(forward.Request) {
		return fmt.Errorf("node %s: a forwarded %T from %s, whose decommission is complete", n.cfg.NodeID, forward.Request, env.From)
	}
	return nil
}

// tellRetired sends a retired node a msg.Retired, at most once per
// retiredTellEveryMs.
func (n *Node) tellRetired(from string) {
	if n.retirement.told.due(from, n.nowMs, retiredTellEveryMs) {
		n.send(from, msg.Retired{})
	}
}

// stepRetired takes a peer's word that this node's decommission is
// complete.
func (n *Node) stepRetired(from string) {
	if n.retirement.sinceMs == 0 {
		n.retirement.toldBy = from
		n.noteRetirement()
	}
}
