package sim

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// wiredWorld is a world of three nodes that are never started: its peer
// network records what it delivers instead of stepping nodes.
type wiredWorld struct {
	*World
	received map[string][]msg.Envelope
}

func newWiredWorld(t *testing.T) *wiredWorld {
	t.Helper()
	opts := DefaultOptions(1)
	opts.Nodes = 3
	w := &wiredWorld{World: NewWorld(opts), received: map[string][]msg.Envelope{}}
	w.peers.deliver = func(to *simNode, env msg.Envelope) { w.received[to.id] = append(w.received[to.id], env) }
	return w
}

// notify sends a Notify whose topic numbers it, from one node to another.
func (w *wiredWorld) notify(from, to, number int) {
	w.peers.send(w.nodes[from], msg.Envelope{From: w.nodes[from].id, To: w.nodes[to].id, Message: msg.Notify{Topic: fmt.Sprint(number)}})
}

func (w *wiredWorld) runQueue() { w.loop(func() bool { return true }) }

func topics(envelopes []msg.Envelope) []string {
	out := []string{}
	for _, env := range envelopes {
		out = append(out, env.Message.(msg.Notify).Topic)
	}
	return out
}

// TestPeerLinkIsOrderedUntilReset: messages on one link arrive in the
// order sent, decoded from their encoding; a reset loses what is in flight
// and the link carries later messages again.
func TestPeerLinkIsOrderedUntilReset(t *testing.T) {
	w := newWiredWorld(t)
	var want []string
	for i := range 50 {
		w.at(int64(i), func() { w.notify(0, 1, i) }) // one send per ms, each with its own drawn delay
		want = append(want, fmt.Sprint(i))
	}
	w.runQueue()
	require.Equal(t, want, topics(w.received["n2"]))
	require.Equal(t, "n1", w.received["n2"][0].From)

	w.notify(0, 1, 100)
	w.notify(0, 1, 101)
	w.peers.reset(w.peers.links[0][1])
	w.notify(0, 1, 102)
	w.runQueue()
	require.Equal(t, []string{"102"}, topics(w.received["n2"][50:]), "the reset lost 100 and 101, not 102")
	require.Equal(t, 2, w.peers.dropped["reset"])
	require.Nil(t, w.failure)
}

// TestOneWayPartition: a cut of n1>n2 drops that direction only, until it
// is mended.
func TestOneWayPartition(t *testing.T) {
	w := newWiredWorld(t)
	id := w.peers.cut([]*link{w.peers.links[0][1]})
	w.notify(0, 1, 1)
	w.notify(1, 0, 2)
	w.runQueue()
	require.Empty(t, w.received["n2"])
	require.Equal(t, []string{"2"}, topics(w.received["n1"]))
	w.peers.mend(id)
	w.notify(0, 1, 3)
	w.runQueue()
	require.Equal(t, []string{"3"}, topics(w.received["n2"]))
	require.Equal(t, 1, w.peers.dropped["partitioned"])
}

// TestHealEndsOverlappingPartitions: heal mends every cut at once, and a
// partition's own end afterwards changes nothing.
func TestHealEndsOverlappingPartitions(t *testing.T) {
	w := newWiredWorld(t)
	first := w.peers.cut(w.peers.between(w.nodes[:1], w.nodes[1:]))
	w.peers.cut([]*link{w.peers.links[0][2]})
	require.Equal(t, 2, w.peers.links[0][2].cuts)
	w.peers.heal()
	w.peers.mend(first)
	for _, row := range w.peers.links {
		for _, l := range row {
			if l != nil {
				require.Zero(t, l.cuts, "%s>%s", l.from.id, l.to.id)
			}
		}
	}
}

// TestUnencodableMessageFailsTheRun: a message the codec cannot carry (a
// pointer, which the sealed message type admits) fails the run instead of
// reaching the receiver as a shared Go value.
func TestUnencodableMessageFailsTheRun(t *testing.T) {
	w := newWiredWorld(t)
	w.peers.send(w.nodes[0], msg.Envelope{From: "n1", To: "n2", Message: &msg.Notify{Topic: "t"}})
	require.NotNil(t, w.failure)
	require.Equal(t, "codec", w.failure.Checker)
	w.runQueue()
	require.Empty(t, w.received["n2"])
}

// TestMessageToUnknownNodeFailsTheRun: a node addressing a peer that is not
// in the world is a broken driver contract.
func TestMessageToUnknownNodeFailsTheRun(t *testing.T) {
	w := newWiredWorld(t)
	w.peers.send(w.nodes[0], msg.Envelope{From: "n1", To: "n9", Message: msg.Notify{Topic: "t"}})
	require.NotNil(t, w.failure)
	require.Equal(t, "peer-network", w.failure.Checker)
}

func raftEnvelope(from, to string, message *raftpb.Message) msg.Envelope {
	return msg.Envelope{From: from, To: to, Message: msg.RaftMessage{Message: message}}
}

// raftMessage builds a message of a type, term and commit index, with the
// given entries as (term, index) pairs.
func raftMessage(messageType raftpb.MessageType, term, commit uint64, entries ...[2]uint64) *raftpb.Message {
	msg := &raftpb.Message{Type: messageType.Enum(), Term: &term, Commit: &commit}
	for _, e := range entries {
		msg.Entries = append(msg.Entries, &raftpb.Entry{Term: &e[0], Index: &e[1]})
	}
	return msg
}

// TestTwoLeadersOfOneTermFailTheRun: election safety, from the wire.
func TestTwoLeadersOfOneTermFailTheRun(t *testing.T) {
	w := newWiredWorld(t)
	w.raft.observe(raftEnvelope("n1", "n2", raftMessage(raftpb.MsgHeartbeat, 4, 0)))
	require.Nil(t, w.failure)
	w.raft.observe(raftEnvelope("n2", "n3", raftMessage(raftpb.MsgApp, 4, 0)))
	require.NotNil(t, w.failure)
	require.Equal(t, "election-safety", w.failure.Checker)
}

// TestFailoverEndsAtTheSuccessorsBarrier: a failover runs from the kill of
// the leader to the moment another node leads and announces a commit
// index covering its term's first entry; the old leader re-elected does
// not end it, nor does the new leader before its barrier.
func TestFailoverEndsAtTheSuccessorsBarrier(t *testing.T) {
	w := newWiredWorld(t)
	w.raft.leaderKilled(w.nodes[0], 2)
	w.nowMs = 300
	w.raft.observe(raftEnvelope("n2", "n3", raftMessage(raftpb.MsgApp, 3, 16, [2]uint64{2, 16}, [2]uint64{3, 17})))
	require.Empty(t, w.raft.failoversMs, "elected, not yet past its barrier")
	w.nowMs = 340
	w.raft.observe(raftEnvelope("n2", "n3", raftMessage(raftpb.MsgHeartbeat, 3, 17)))
	require.Equal(t, []int64{340}, w.raft.failoversMs)
	require.True(t, w.raft.hasBarrier(3))
}
