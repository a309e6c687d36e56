package peer

import (
	"bytes"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
)

// raftEnvelope is a Raft append from a to b with one entry of size bytes
// of data (none for size 0).
func raftEnvelope(size int) msg.Envelope {
	message := &raftpb.Message{Type: new(raftpb.MsgApp), From: new(uint64(1)), To: new(uint64(2)), Term: new(uint64(1))}
	if size > 0 {
		message.Entries = []*raftpb.Entry{{Term: new(uint64(1)), Index: new(uint64(1)), Data: bytes.Repeat([]byte{'r'}, size)}}
	}
	return msg.Envelope{From: "a", To: "b", Message: msg.RaftMessage{Message: message}}
}

// heartbeatEnvelope is a membership heartbeat from a to b.
func heartbeatEnvelope() msg.Envelope {
	return msg.Envelope{From: "a", To: "b", Message: msg.Heartbeat{HTTPAddr: "127.0.0.1:1", ClusterAddr: "127.0.0.1:2", NowMs: 1, Incarnation: 1}}
}

// gatedProxy listens for one connection and, once open is called, pipes
// it to target both ways (open is idempotent; the proxy closes at
// cleanup). Until then a dialer waits in its handshake, holding the
// envelope it took first, so nothing leaves its queue.
func gatedProxy(t *testing.T, target string) (address string, open func()) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	gate := make(chan struct{})
	var once sync.Once
	open = func() { once.Do(func() { close(gate) }) }
	var piping sync.WaitGroup
	conns := make(chan net.Conn, 2)
	piping.Add(1)
	go func() {
		defer piping.Done()
		client, err := listener.Accept()
		if err != nil {
			return
		}
		conns <- client
		<-gate
		server, err := net.Dial("tcp", target)
		if err != nil {
			return
		}
		conns <- server
		piping.Add(2)
		go func() { defer piping.Done(); io.Copy(server, client); server.Close() }()
		go func() { defer piping.Done(); io.Copy(client, server); client.Close() }()
	}()
	t.Cleanup(func() {
		open()
		listener.Close()
		for len(conns) > 0 {
			(<-conns).Close()
		}
		piping.Wait()
	})
	return listener.Addr().String(), open
}

// A flood of client data through a peer that does not take it fills the
// data share of the queue, and what is sent to that peer beyond it is
// dropped; a Raft message and a heartbeat sent then are still queued, and
// sent once the peer takes its queue. (Before, one bound counted every
// envelope, and the metastore's traffic was dropped with the data.)
func TestControlEnvelopesPassAQueueFullOfData(t *testing.T) {
	checkGoroutinesEnd(t)
	b := startTransport(t, testConfig("b", nil))
	address, open := gatedProxy(t, b.Addr())
	cfg := testConfig("a", map[string]string{"b": address})
	cfg.SendQueueBytesMax = 1 << 20
	cfg.HandshakeTimeout = time.Minute
	a := startTransport(t, cfg)
	// Four of these fill the byte bound exactly (the one the writer holds,
	// in its handshake, counts too), a fifth is dropped.
	data := payloadEnvelope(256<<10 - 16)
	require.Equal(t, int64(256<<10), msg.PayloadBytes(data))
	for range 4 {
		a.Send(data)
	}
	require.Equal(t, uint64(0), a.Stats().Peers["b"].Dropped)
	a.Send(data)
	require.Equal(t, uint64(1), a.Stats().Peers["b"].Dropped, "the data past the byte bound")

	// An append with an entry, and a heartbeat: the audit's flood dropped
	// the metastore's traffic with the data.
	raft, beat := raftEnvelope(64), heartbeatEnvelope()
	a.Send(raft)
	a.Send(beat)
	require.Equal(t, uint64(1), a.Stats().Peers["b"].Dropped, "a control envelope was dropped behind a full data share")
	a.Send(data)
	require.Equal(t, uint64(2), a.Stats().Peers["b"].Dropped, "the data share stays full")

	open()
	var gotRaft, gotBeat bool
	for !gotRaft || !gotBeat {
		env := b.inbox.next()
		_, isRaft := env.Message.(msg.RaftMessage)
		_, isBeat := env.Message.(msg.Heartbeat)
		gotRaft, gotBeat = gotRaft || isRaft, gotBeat || isBeat
	}
	requireEventually(t, func() bool { return a.Stats().Peers["b"].Sent == 6 }, "every envelope queued sent")
}

// The control share is bounded too, in envelopes and in bytes (one
// envelope over the byte bound, alone, still queued), apart from the data
// share: each class's drops are counted apart, and one class full leaves
// room for the other.
func TestControlShareIsBoundedAndCountedApart(t *testing.T) {
	checkGoroutinesEnd(t)
	stalled := func() started {
		cfg := testConfig("a", map[string]string{"b": stalledPeer(t, false)})
		cfg.HandshakeTimeout = time.Minute
		return startTransport(t, cfg)
	}

	// The writer holds the first envelope, in its connect, and it still
	// counts in its class.
	byCount := stalled()
	for range controlQueueMax + 10 {
		byCount.Send(heartbeatEnvelope())
	}
	stats := byCount.Stats().Peers["b"]
	require.Equal(t, uint64(10), stats.DroppedControl, "heartbeats past controlQueueMax")
	require.Zero(t, stats.DroppedData)
	require.Equal(t, stats.DroppedControl, stats.Dropped)
	byCount.Send(payloadEnvelope(1 << 10))
	require.Zero(t, byCount.Stats().Peers["b"].DroppedData, "a full control share leaves the data share its room")
	require.LessOrEqual(t, byCount.Stats().Peers["b"].Queued, testConfig("a", nil).SendQueueMax+controlQueueMax)

	byBytes := stalled()
	const entryBytes = 1 << 20
	for range controlQueueBytesMax/entryBytes + 4 {
		byBytes.Send(raftEnvelope(entryBytes))
	}
	stats = byBytes.Stats().Peers["b"]
	require.Equal(t, uint64(4), stats.DroppedControl, "Raft appends past controlQueueBytesMax")
	require.LessOrEqual(t, stats.QueuedBytes, int64(controlQueueBytesMax))

	alone := stalled()
	alone.Send(raftEnvelope(controlQueueBytesMax + 1)) // a metastore snapshot, say
	require.Zero(t, alone.Stats().Peers["b"].Dropped, "one control envelope over the byte bound, alone, is queued")
	alone.Send(raftEnvelope(1))
	require.Equal(t, uint64(1), alone.Stats().Peers["b"].DroppedControl, "nothing more is")
	alone.Send(heartbeatEnvelope())
	require.Equal(t, uint64(1), alone.Stats().Peers["b"].DroppedControl, "but an envelope without payload is")
}

// What the writer drops when a connection attempt fails is counted in its
// class.
func TestUnreachablePeerDropsAreCountedByClass(t *testing.T) {
	checkGoroutinesEnd(t)
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := listener.Addr().String()
	listener.Close()
	a := startTransport(t, testConfig("a", map[string]string{"b": closed}))
	a.Send(heartbeatEnvelope())
	a.Send(payloadEnvelope(1 << 10))
	requireEventually(t, func() bool { return a.Stats().Peers["b"].Dropped == 2 }, "the envelopes to an unreachable peer not dropped")
	stats := a.Stats().Peers["b"]
	require.Equal(t, uint64(1), stats.DroppedControl)
	require.Equal(t, uint64(1), stats.DroppedData)
	require.Zero(t, stats.QueuedBytes)
}

// classOf puts every peer message type in a class: the cluster's own
// traffic is control, what clients make a node send is data.
func TestClassOfEveryPeerMessage(t *testing.T) {
	control := []msg.PeerMessage{msg.RaftMessage{}, msg.Heartbeat{}, msg.Join{}, msg.JoinRelay{}, msg.JoinAccepted{}, msg.Retired{}}
	data := []msg.PeerMessage{msg.ForwardRequest{}, msg.ForwardReply{}, msg.ForwardCancel{}, msg.Subscribe{}, msg.Notify{}}
	for _, message := range control {
		require.Equal(t, classControl, classOf(msg.Envelope{Message: message}), "%T", message)
	}
	for _, message := range data {
		require.Equal(t, classData, classOf(msg.Envelope{Message: message}), "%T", message)
	}
	proposal := msg.RaftMessage{Message: &raftpb.Message{Type: new(raftpb.MsgProp)}}
	require.Equal(t, classData, classOf(msg.Envelope{Message: proposal}), "a proposal clients cause is data")
	require.Equal(t, classControl, classOf(raftEnvelope(0)), "an append is control")
	require.Equal(t, "control", classControl.String())
	require.Equal(t, "data", classData.String())
}
