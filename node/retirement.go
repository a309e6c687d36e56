package node

import (
	"fmt"
	"maps"

	"narad/msg"
)

// Retirement. A node whose decommission is complete (it left the voters)
// may be left running. What it sends its peers is refused (Step), so it
// changes nothing and reaches no data; and it refuses its own clients
// (retired), once it knows. It knows when its replica applied its own
// removal, or, since a replica removed from the group may never hear of
// the entry that removed it, when a peer tells it so (msg.Retired): every
// node that refuses a retired node's message tells it, at most once per
// retiredTellEveryMs. A tell holds for MemberDeadAfterMs and is renewed by
// the next: while the node keeps talking to its peers, they keep telling
// it. (Should a peer whose replica lags take a node rejoined under a
// retired id for the retired one, its tells stop once it caught up.)

// retiredTellEveryMs bounds how often a node tells one retired node so.
const retiredTellEveryMs = 1_000

// retirement is this node's knowledge of completed decommissions. Only
// the node's own methods change it.
type retirement struct {
	// toldUntilMs: a peer said this node's decommission is complete; it
	// refuses its clients until then (this node's clock). toldBy is that
	// peer.
	toldUntilMs int64
	toldBy      string
	// toldMs maps a retired node this node told so to when (this node's
	// clock); entries older than retiredTellEveryMs go at the next tell,
	// so it holds only the retired nodes heard from within that period.
	toldMs map[string]int64
}

// retired refuses a client's request at a node whose decommission is
// complete, as its replica shows or a peer told it: its view of the
// cluster no longer moves on and its peers refuse what it sends them, so
// it could only answer from a stale view or time out.
func (n *Node) retired() error {
	switch {
	case n.meta.State().Retired(n.cfg.NodeID):
		return msg.Unavailable("node %s was decommissioned (it left the cluster's voters): send requests to another node, and stop this one", n.cfg.NodeID)
	case n.nowMs < n.retirement.toldUntilMs:
		return msg.Unavailable("node %s was decommissioned (it left the cluster's voters, node %s says): send requests to another node, and stop this one",
			n.cfg.NodeID, n.retirement.toldBy)
	}
	return nil
}

// refuseRetired reports whether a peer message comes from a retired node,
// telling that node so: such a message is refused, but for its heartbeat,
// which only warns (gatherHeartbeat).
func (n *Node) refuseRetired(env msg.Envelope) error {
	if !n.meta.State().Retired(env.From) {
		return nil
	}
	n.tellRetired(env.From)
	if _, heartbeat := env.Message.(msg.Heartbeat); heartbeat {
		return nil
	}
	return fmt.Errorf("node %s: message %T from %s, whose decommission is complete (it left the voters)", n.cfg.NodeID, env.Message, env.From)
}

// tellRetired sends a retired node a msg.Retired, at most once per
// retiredTellEveryMs.
func (n *Node) tellRetired(id string) {
	told := n.retirement.toldMs
	if at, ok := told[id]; ok && n.nowMs-at < retiredTellEveryMs {
		return
	}
	maps.DeleteFunc(told, func(_ string, at int64) bool { return n.nowMs-at >= retiredTellEveryMs })
	told[id] = n.nowMs
	n.send(id, msg.Retired{})
}

// stepRetired takes a peer's word that this node's decommission is
// complete.
func (n *Node) stepRetired(from string) {
	if n.nowMs >= n.retirement.toldUntilMs {
		n.observer.Event("decommission-complete", fmt.Sprintf("node %s says this node left the voters: refusing every request; stop this node", from))
	}
	n.retirement.toldUntilMs = n.nowMs + n.cfg.MemberDeadAfterMs
	n.retirement.toldBy = from
}
