package node

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"narad/msg"
	"narad/storage"
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
// its first message's answer. A node gets its grace once: as it learns
// of its decommission it writes retiredMarkerFile in its data directory,
// and a start that finds the file, or a replica that shows the
// decommission, refuses its clients at once. Started again, a node had
// its grace before it stopped, and by then the cluster may have
// forgotten it, so that the owners it forwarded to could not answer it
// (their replies unroutable) and each forward timed out into a copy of
// the record at the next owner (observability audit: three copies and a
// 503 after 6 s). The file matters for a node that learned from a peer:
// its replica never shows it.

// retiredMarkerFile, in the data directory, says this node learned that
// its decommission is complete (its content is empty).
const retiredMarkerFile = "decommissioned"

// retiredTellEveryMs bounds how often a node tells one retired node so.
const retiredTellEveryMs = 1_000

// A node started to join under a retired id (an operator reusing the id
// of a decommissioned node, on an empty directory) is told so as well.
// Its Join names its cluster address, which the members' replicas may no
// longer record (a retired member is forgotten once dead), so a member
// keeps it as the address of that id for retiredAskerKeepMs after its
// last Join, for at most retiredAskersMax ids (the oldest goes first).
const (
	retiredAskerKeepMs = 60_000
	retiredAskersMax   = 16
)

// retirement is this node's knowledge of completed decommissions. Only
// the node's own methods change it.
type retirement struct {
	// sinceMs is when this node learned its own decommission is complete
	// (this node's clock); 0 while it is not known. Set once.
	sinceMs int64
	// toldBy is the peer that told this node so, "" when its own replica
	// showed it first.
	toldBy string
	// atStart is set when the replica showed it at this node's start, or
	// retiredMarkerFile was there: the grace was spent before. Set once,
	// by New.
	atStart bool
	// told holds the retired nodes this node told so within
	// retiredTellEveryMs (tellRetired).
	told onceEvery[string]
	// shown is whether this node's replica shows it retired, per applied
	// index (shownRetired).
	shown appliedMemo[bool]
	// askers maps a retired id that sent this node a Join to the cluster
	// address it gave and when (this node's clock); only noteRetiredAsker
	// changes it, and ClusterAddrs serves the entries younger than
	// retiredAskerKeepMs.
	askers map[string]retiredAsker
}

// retiredAsker is where a retired id's Join came from, and when.
type retiredAsker struct {
	addr   string
	lastMs int64
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
	return n.retirement.sinceMs != 0 || n.retirement.atStart || n.shownRetired()
}

// noteRetirement records when this node learned of its decommission (at
// each Tick, and at a tell), and says so once.
func (n *Node) noteRetirement() {
	if n.retirement.sinceMs != 0 || (n.retirement.toldBy == "" && !n.retirement.atStart && !n.shownRetired()) {
		return
	}
	n.retirement.sinceMs = max(n.nowMs, 1)
	if n.retirement.atStart {
		n.observer.Event("decommission-complete", "this node left the voters before it started: it takes no change and refuses "+
			"its clients' reads and writes (it served them through the other nodes before it stopped); stop it")
		return
	}
	if err := storage.WriteFileAtomic(n.fs, retiredMarkerFile, nil); err != nil {
		n.observer.Event("decommission-marker-failed", fmt.Sprintf("%s: %v (a start again on this directory would forward its clients' "+
			"reads and writes for the dead-after period once more)", retiredMarkerFile, err))
	}
	n.observer.Event("decommission-complete", "this node left the voters: it takes no change, serves its clients' reads and writes "+
		"through the other nodes for the dead-after period, then refuses them; stop it")
}

// retiredAtStart reports whether this node's decommission was complete
// before it started: its replica shows it, or an earlier start learned it
// (retiredMarkerFile).
func (n *Node) retiredAtStart() (bool, error) {
	if n.shownRetired() {
		return true, nil
	}
	_, err := n.fs.Stat(retiredMarkerFile)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, storage.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("read %s: %w", retiredMarkerFile, err)
}

// retiredError is the answer of a retired node to what it refuses.
func (n *Node) retiredError() error {
	by := ""
	if n.retirement.toldBy != "" && !n.meta.State().Retired(n.cfg.NodeID) {
		by = fmt.Sprintf(", node %s says", n.retirement.toldBy)
	}
	if n.joiningUnderRetiredID() {
		return msg.Unavailable("the id %s was decommissioned (it left the cluster's voters%s) and this node cannot join under it: "+
			"start it under a new node id, on an empty data directory", n.cfg.NodeID, by)
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
	graceOver := n.retirement.atStart || (n.retirement.sinceMs != 0 && n.nowMs-n.retirement.sinceMs >= n.cfg.MemberDeadAfterMs)
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
	if join, ok := env.Message.(msg.Join); ok {
		n.noteRetiredAsker(env.From, join.ClusterAddr)
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

// noteRetiredAsker keeps the cluster address a retired id's Join gave,
// so that the tell reaches it; it drops the entries past
// retiredAskerKeepMs and, at retiredAskersMax, the oldest.
func (n *Node) noteRetiredAsker(id, addr string) {
	if addr == "" {
		return
	}
	maps.DeleteFunc(n.retirement.askers, func(_ string, asker retiredAsker) bool {
		return n.nowMs-asker.lastMs >= retiredAskerKeepMs
	})
	if _, known := n.retirement.askers[id]; !known && len(n.retirement.askers) >= retiredAskersMax {
		oldest := ""
		for _, other := range slices.Sorted(maps.Keys(n.retirement.askers)) {
			if oldest == "" || n.retirement.askers[other].lastMs < n.retirement.askers[oldest].lastMs {
				oldest = other
			}
		}
		delete(n.retirement.askers, oldest)
	}
	if n.retirement.askers == nil {
		n.retirement.askers = map[string]retiredAsker{}
	}
	n.retirement.askers[id] = retiredAsker{addr: addr, lastMs: n.nowMs}
}

// retiredAskerAddrs adds to addrs the addresses of the retired ids that
// asked to join within retiredAskerKeepMs, over what the replica records.
func (n *Node) retiredAskerAddrs(addrs map[string]string) {
	for id, asker := range n.retirement.askers { //determinism:ok a map is built
		if n.nowMs-asker.lastMs < retiredAskerKeepMs {
			addrs[id] = asker.addr
		}
	}
}

// stepRetired takes a peer's word that this node's decommission is
// complete. A node that joins under a retired id (its replica never had
// it as a voter) is told the same: it says why it cannot join, once.
func (n *Node) stepRetired(from string) {
	if n.retirement.sinceMs != 0 {
		return
	}
	n.retirement.toldBy = from
	if !n.joiningUnderRetiredID() {
		n.noteRetirement()
		return
	}
	n.retirement.sinceMs = max(n.nowMs, 1)
	n.observer.Event("join-refused", fmt.Sprintf("node %s says the id %s left the cluster's voters (its decommission or removal is complete), "+
		"and ids are never reused: start this node under a new node id, on an empty data directory", from, n.cfg.NodeID))
}

// joiningUnderRetiredID reports whether this node started to join and a
// peer told it its id is retired: its replica never had it as a voter.
func (n *Node) joiningUnderRetiredID() bool {
	self, _ := n.meta.PeerByNodeID(n.cfg.NodeID)
	return n.cfg.Meta.Join && n.retirement.toldBy != "" && !n.meta.State().RaftIDUsed(self.RaftID)
}
