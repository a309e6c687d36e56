package sim

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
	"narad/wire"
)

// Peer links, in simulated milliseconds.
const (
	peerDelayMsMin = 1
	// peerLinkDelayMsMax bounds the delay bound each link draws at the
	// start of a run (links differ: some are slower than others).
	peerLinkDelayMsMax = 8
	// peerSlowDelayMsMax bounds every link's delay while a slow-network
	// fault lasts.
	peerSlowDelayMsMax = 150
	// dialTimeoutMs is how long a connection attempt to a cut-off peer
	// takes to fail (a peer that is down refuses at once); the driver then
	// tells the sender the peer is unreachable, as the host does.
	dialTimeoutMs = 500
)

// link is the connection from one node to another, as the production
// transport has one TCP connection per direction: messages sent on it
// arrive in order while the connection lasts; a reset drops whatever is in
// flight.
type link struct {
	from, to *simNode
	// epoch numbers the connection. A reset (a fault, a partition, a crash
	// of either end) increments it; a message that arrives with an older
	// epoch was lost with its connection. Changed only by reset.
	epoch uint64
	// delayMsMax is this link's delay bound, drawn once per run; at least
	// peerDelayMsMin.
	delayMsMax int
	// lastArrivalMs is when the latest message sent on the link arrives;
	// a later message never arrives before it. Only send changes it.
	lastArrivalMs int64
	// cuts counts the active partitions that block this direction; the
	// link carries nothing while it is above zero. Changed by cut and mend.
	cuts int
	// dialing is set while a failed connection attempt waits to be
	// reported to the sender (at most one at a time per link).
	dialing bool
}

// peerNetwork carries envelopes between nodes. Every envelope is encoded
// with the production codec when sent and decoded when it arrives, so the
// codec runs on every message and no two nodes ever share a Go value.
type peerNetwork struct {
	w   *World
	rng *rand.Rand
	// links[from][to] is the link between two node indexes; nil on the
	// diagonal. Fixed after newPeerNetwork.
	links [][]*link
	// slow is set while a slow-network fault lasts.
	slow bool
	// buffers are encoding buffers free for reuse: a message is encoded
	// into one (encoding into a fresh slice grew it several times per
	// message), which goes back here once the message arrived or was
	// lost. Whoever keeps a message's bytes longer (late proposals) keeps
	// a copy.
	buffers [][]byte
	// arrivals are arrival events free for reuse, each with its run
	// function made once: a message in flight costs no allocation.
	arrivals []*arrival
	// partitions are the active cuts by id, so that healing everything and
	// a cut's own end do not undo each other. nextPartition numbers them.
	partitions    map[int][]*link
	nextPartition int
	// Counters for the report: messages sent, by type; lost, by cause;
	// unreachable reports, by link.
	sent, dropped, unreachable map[string]int
	// deliver hands a decoded envelope to its receiver: deliverToNode,
	// except in the network's own tests.
	deliver func(to *simNode, env msg.Envelope)
}

func newPeerNetwork(w *World, rng *rand.Rand) *peerNetwork {
	p := &peerNetwork{w: w, rng: rng, partitions: map[int][]*link{}, sent: map[string]int{}, dropped: map[string]int{},
		unreachable: map[string]int{}}
	p.deliver = p.deliverToNode
	p.links = make([][]*link, len(w.nodes))
	for i, from := range w.nodes {
		p.links[i] = make([]*link, len(w.nodes))
		for j, to := range w.nodes {
			if i != j {
				p.links[i][j] = p.newLink(from, to)
			}
		}
	}
	return p
}

func (p *peerNetwork) newLink(from, to *simNode) *link {
	return &link{from: from, to: to, delayMsMax: peerDelayMsMin + p.rng.IntN(peerLinkDelayMsMax)}
}

// addNode connects a node added to the world (a scale-up) with every
// other: links to it and from it, each with its own drawn delay bound.
func (p *peerNetwork) addNode(n *simNode) {
	assert(n.index == len(p.links), "node %s added at index %d, the network has %d nodes", n.id, n.index, len(p.links))
	row := make([]*link, len(p.links)+1)
	for i, other := range p.w.nodes[:n.index] {
		p.links[i] = append(p.links[i], p.newLink(other, n))
		row[i] = p.newLink(n, other)
	}
	p.links = append(p.links, row)
}

// send puts an envelope on its link. It runs after the Ready that carried
// it was persisted (the driver's order).
func (p *peerNetwork) send(from *simNode, env msg.Envelope) {
	to := p.w.nodeByID(env.To)
	if to == nil || to == from || env.From != from.id {
		p.w.fail("peer-network", "%s sent %s from %q to %q, not a peer", from.id, messageKind(env.Message), env.From, env.To)
		return
	}
	bytes, err := wire.EncodeEnvelope(p.takeBuffer(), env)
	if err != nil {
		p.w.fail("codec", "%s -> %s: %s cannot be encoded: %v", env.From, env.To, messageKind(env.Message), err)
		return
	}
	kind := messageKind(env.Message)
	p.sent[kind]++
	p.w.trace.addBytes(p.w.nowMs, bytes)
	if traced(env.Message) {
		p.traceSent(env)
	}
	p.w.raft.observe(env)
	p.w.leases.forwarded(from, env)
	l := p.links[from.index][to.index]
	if p.w.deadLetters.losesAimedWrite(env) {
		p.dropped["dead-letters-aimed"]++
		p.putBuffer(bytes)
		return
	}
	if p.w.lateProposals != nil && p.w.lateProposals.withhold(l, env, kind, bytes) {
		p.putBuffer(bytes)
		return
	}
	queued := p.transmit(l, kind, bytes)
	if p.w.lateProposals != nil {
		p.w.lateProposals.sent(l, env, kind, bytes)
	}
	if !queued {
		p.putBuffer(bytes)
	}
}

// traceSent adds the trace line "net FROM>TO description" of a message.
func (p *peerNetwork) traceSent(env msg.Envelope) {
	line := append(append(append(p.w.trace.begin(p.w.nowMs), "net "...), env.From...), '>')
	line = append(append(line, env.To...), ' ')
	p.w.trace.end(appendMessageDescription(line, env.Message))
}

// appendRaftDescription appends describeMessage's "raft TYPE term N".
func appendRaftDescription(line []byte, m msg.RaftMessage) []byte {
	line = append(append(append(line, "raft "...), m.Message.GetType().String()...), " term "...)
	return strconv.AppendUint(line, m.Message.GetTerm(), 10)
}

// takeBuffer returns an empty encoding buffer, reused if one is free.
func (p *peerNetwork) takeBuffer() []byte {
	if len(p.buffers) == 0 {
		return nil
	}
	last := p.buffers[len(p.buffers)-1]
	p.buffers = p.buffers[:len(p.buffers)-1]
	return last[:0]
}

// putBuffer hands back an encoding buffer nothing refers to any more.
func (p *peerNetwork) putBuffer(b []byte) {
	if cap(b) > 0 && cap(b) <= peerBufferKeptBytesMax {
		p.buffers = append(p.buffers, b)
	}
}

// peerBufferKeptBytesMax bounds the buffers kept for reuse: a rare large
// message (a snapshot) does not stay allocated.
const peerBufferKeptBytesMax = 64 << 10

// arrival is a message in flight on a link, the arrival event's state.
type arrival struct {
	p     *peerNetwork
	l     *link
	epoch uint64
	kind  string
	bytes []byte
	// run is a.arrive, made once per arrival.
	run func()
}

// arrive hands the arrival back for reuse, then delivers its message and
// hands back its buffer (the decoded message shares none of its bytes).
func (a *arrival) arrive() {
	p, l, epoch, kind, bytes := a.p, a.l, a.epoch, a.kind, a.bytes
	a.l, a.kind, a.bytes = nil, "", nil
	p.arrivals = append(p.arrivals, a)
	p.arrive(l, epoch, kind, bytes)
	p.putBuffer(bytes)
}

// transmit schedules the arrival of bytes on the link, after every message
// sent on it before, and reports whether it did (the arrival then owns
// the buffer).
func (p *peerNetwork) transmit(l *link, kind string, bytes []byte) bool {
	if l.cuts > 0 || !l.to.up() {
		p.dialFailed(l)
	}
	if l.cuts > 0 {
		p.dropped["partitioned"]++
		return false
	}
	delayMsMax := l.delayMsMax
	if p.slow {
		delayMsMax = peerSlowDelayMsMax
	}
	arrivalMs := max(p.w.nowMs+int64(peerDelayMsMin+p.rng.IntN(delayMsMax)), l.lastArrivalMs)
	l.lastArrivalMs = arrivalMs
	var a *arrival
	if last := len(p.arrivals) - 1; last >= 0 {
		a = p.arrivals[last]
		p.arrivals = p.arrivals[:last]
	} else {
		a = &arrival{p: p}
		a.run = a.arrive
	}
	a.l, a.epoch, a.kind, a.bytes = l, l.epoch, kind, bytes
	p.w.queue.push(arrivalMs, a.run)
	return true
}

// arrive decodes a message and hands it to its receiver, unless its
// connection was reset meanwhile.
func (p *peerNetwork) arrive(l *link, epoch uint64, kind string, bytes []byte) {
	if l.epoch != epoch {
		p.dropped["reset"]++
		return
	}
	env, err := wire.DecodeEnvelope(bytes)
	if err != nil {
		p.w.fail("codec", "%s -> %s: %s does not decode: %v", l.from.id, l.to.id, kind, err)
		return
	}
	p.deliver(l.to, env)
}

// deliverToNode steps the receiver with the envelope; a message to a node
// that is down is lost.
func (p *peerNetwork) deliverToNode(to *simNode, env msg.Envelope) {
	if !to.up() {
		p.dropped["receiver-down"]++
		return
	}
	to.step(env)
}

// dialFailed models the sender's transport failing to connect: refused at
// once by a peer that is down, timed out on a cut link. If the peer is
// still unreachable then, the sender hears PeerUnreachable (what it had
// queued for the peer is lost with the connection).
func (p *peerNetwork) dialFailed(l *link) {
	if l.dialing {
		return
	}
	l.dialing = true
	delayMs := int64(peerDelayMsMin + p.rng.IntN(l.delayMsMax))
	if l.cuts > 0 {
		delayMs = dialTimeoutMs
	}
	incarnation := l.from.incarnation
	p.w.at(delayMs, func() {
		l.dialing = false
		if l.from.up() && l.from.incarnation == incarnation && (l.cuts > 0 || !l.to.up()) {
			p.reset(l)
			p.unreachable[l.from.id+">"+l.to.id]++
			l.from.peerUnreachable(l.to.id)
		}
	})
}

// reset closes a link's connection: what is in flight is lost.
func (p *peerNetwork) reset(l *link) {
	l.epoch++
	l.lastArrivalMs = p.w.nowMs
}

// resetNode resets every connection to and from a node (it crashed or
// stopped: the kernel closes its sockets).
func (p *peerNetwork) resetNode(n *simNode) {
	for _, other := range p.w.nodes {
		if other != n {
			p.reset(p.links[n.index][other.index])
			p.reset(p.links[other.index][n.index])
		}
	}
}

// cut blocks the given links until mend(id) or heal; their connections
// reset. It returns the partition's id.
func (p *peerNetwork) cut(links []*link) int {
	p.nextPartition++
	p.partitions[p.nextPartition] = links
	for _, l := range links {
		l.cuts++
		p.reset(l)
		p.w.fanoutFaultLanded("cut", l.from, l.to)
	}
	return p.nextPartition
}

// mend ends one partition; a partition already ended by heal is ignored.
func (p *peerNetwork) mend(id int) {
	links, ok := p.partitions[id]
	if !ok {
		return
	}
	delete(p.partitions, id)
	for _, l := range links {
		assert(l.cuts > 0, "link %s>%s mended more often than cut", l.from.id, l.to.id)
		l.cuts--
	}
	p.w.tracef("net: partition %d healed", id)
}

// heal ends every partition and the slow network.
func (p *peerNetwork) heal() {
	for id := 1; id <= p.nextPartition; id++ {
		p.mend(id)
	}
	p.slow = false
}

// between returns the links from every node of a to every node of b.
func (p *peerNetwork) between(a, b []*simNode) []*link {
	var links []*link
	for _, from := range a {
		for _, to := range b {
			if from != to {
				links = append(links, p.links[from.index][to.index])
			}
		}
	}
	return links
}

// messageKind names an envelope's message type for counters.
func messageKind(message msg.PeerMessage) string {
	switch m := message.(type) {
	case msg.RaftMessage:
		if m.Message == nil {
			return "raft-nil"
		}
		return "raft"
	case msg.ForwardRequest:
		return forwardKind(m.Request)
	case msg.ForwardReply:
		return "forward-reply"
	case msg.ForwardCancel:
		return "forward-cancel"
	case msg.Retired:
		return "retired"
	case msg.Subscribe:
		return "subscribe"
	case msg.Notify:
		return "notify"
	case msg.Join:
		return "join"
	case msg.Heartbeat:
		return "heartbeat"
	default:
		return typeName(message)
	}
}

// typeName names a message or request by its type, without the package
// qualifier: the trace and the counters do not change when a type moves
// between packages.
func typeName(value any) string {
	t := reflect.TypeOf(value)
	if name, ok := typeNames.Load(t); ok {
		return name.(string)
	}
	name := fmt.Sprintf("%T", value)
	unqualified := name[strings.LastIndex(name, ".")+1:]
	if strings.HasPrefix(name, "*") {
		unqualified = "*" + unqualified
	}
	typeNames.Store(t, unqualified)
	return unqualified
}

// typeNames caches typeName by type, forwardKinds messageKind of a
// forward by the type of its request: both are asked for every message.
var typeNames, forwardKinds sync.Map

// forwardKind is messageKind of a forward of request.
func forwardKind(request any) string {
	t := reflect.TypeOf(request)
	if kind, ok := forwardKinds.Load(t); ok {
		return kind.(string)
	}
	kind := "forward-" + typeName(request)
	forwardKinds.Store(t, kind)
	return kind
}

// traced reports whether a message gets a trace line: Raft's steady
// traffic (heartbeats and appends) is only hashed, or it would bury the
// lines that explain a failure.
func traced(message msg.PeerMessage) bool {
	m, ok := message.(msg.RaftMessage)
	if !ok || m.Message == nil {
		return true
	}
	switch m.Message.GetType() {
	case raftpb.MsgHeartbeat, raftpb.MsgHeartbeatResp, raftpb.MsgApp, raftpb.MsgAppResp:
		return false
	}
	return true
}

// describeMessage describes a message for the trace.
func describeMessage(message msg.PeerMessage) string {
	return string(appendMessageDescription(nil, message))
}

// appendMessageDescription appends describeMessage's text to line: a sent
// message's trace line is built in the trace's buffer, without formatting
// or a string of its own (the common kinds box and allocate nothing).
func appendMessageDescription(line []byte, message msg.PeerMessage) []byte {
	switch m := message.(type) {
	case msg.RaftMessage:
		return appendRaftDescription(line, m)
	case msg.ForwardRequest:
		line = strconv.AppendUint(append(line, "forward #"...), m.ID, 10)
		return append(append(line, ' '), typeName(m.Request)...)
	case msg.ForwardReply:
		line = strconv.AppendUint(append(line, "forward-reply #"...), m.ID, 10)
		if m.Reply.Err == nil {
			return append(line, " err=<nil>"...)
		}
		return fmt.Appendf(line, " err=%v", m.Reply.Err)
	case msg.ForwardCancel:
		return strconv.AppendUint(append(line, "forward-cancel #"...), m.ID, 10)
	case msg.Subscribe:
		line = append(append(append(line, "subscribe "...), m.Topic...), ' ')
		return append(strconv.AppendInt(line, m.ForMs, 10), " ms"...)
	case msg.Notify:
		return append(append(line, "notify "...), m.Topic...)
	case msg.Heartbeat:
		return strconv.AppendInt(append(line, "heartbeat at "...), m.NowMs, 10)
	default:
		return append(line, messageKind(message)...)
	}
}
