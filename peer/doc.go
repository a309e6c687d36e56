// Package peer is the production transport between the nodes of a
// cluster: it carries msg.Envelopes over TCP, optionally inside TLS,
// after a mutual challenge-response handshake on the cluster secret. The
// simulator has its own network; this package is the real one, used by
// host. It is an edge of the system, so it is allowed goroutines, sockets
// and the wall clock; the deterministic core never imports it.
//
// # What it owns
//
//   - The cluster listener, and one reader goroutine per accepted
//     connection: it authenticates the dialer, reads frames
//     (wire.ReadFrame, which checks each length against wire.FrameBytesMax
//     before reading the payload), decodes envelopes and hands them to
//     the deliver function given to New.
//   - Per peer, a bounded send queue and a writer goroutine that dials
//     on the first message, authenticates, and streams frames in batches;
//     and per outbound connection a watcher goroutine that reads nothing
//     (the peer never writes after the handshake) but notices at once
//     when the peer hangs up, so an idle writer reconnects instead of
//     writing its next message into a dead connection. A failed connect
//     or handshake, and a connection that ends within
//     connectionHealthyMin (a peer that refuses what it is sent closes at
//     the first frame), wait the reconnect backoff before the next dial.
//     A peer's messages to us arrive on the connection it dialed; ours go
//     over the one we dialed, so each connection carries one direction.
//   - The handshake (handshake.go), and the counters read by Stats.
//
// # Inputs and outputs
//
// Inputs: Send (from the node loop), SetPeer and RemovePeer (membership
// changes), and the bytes peers send. Outputs: deliver calls, frames on
// the wire, Stats, logs. Nothing here blocks the caller of Send: a full
// queue drops the message and counts it, because Raft tolerates loss and
// forwarded requests time out and are retried by their sender. The
// cluster's control traffic (Raft messages, heartbeats, joins) and the
// client data (forwards and their answers) are bounded apart, in one FIFO
// queue, so that a flood of client data never drops the control
// traffic (queueclass.go). For the
// same reason a connection that fails loses what was in flight, and a
// failed connection attempt drops what was queued for the peer, so a
// long outage never ends in a burst of stale messages.
//
// # Invariants
//
//   - Every goroutine starts through Transport.goFuncLocked, counted by
//     one WaitGroup, and none starts once Close has begun; Close closes
//     every socket and cancels every wait, then waits for all of them.
//   - Every queue and buffer is bounded: per peer, Config.SendQueueMax
//     data envelopes and Config.SendQueueBytesMax of their payload bytes
//     (msg.PayloadBytes), and controlQueueMax control envelopes and
//     controlQueueBytesMax of theirs,
//     inboundConnectionsMax authenticated connections and, apart from
//     them, handshakesInFlightMax connections still in their handshake
//     (the oldest is shed to admit a new one, of a remote host holding
//     floodHandshakesMin or more if one does, so a flood of connections
//     that never authenticate cannot keep a real peer out, nor, from one
//     address, shed another's),
//     writeBatchBytesMax and writeBatchMessagesMax per write,
//     wire.FrameBytesMax per frame, and the handshake reads at most
//     helloBytesMax plus one tag. Warnings about failed inbound
//     connections are limited to inboundFailureLogsPerSecond, with a
//     count of those suppressed.
//   - The listener names itself only to a dialer that proved the secret
//     (handshake.go); a shed handshake is not an authentication failure
//     on either side.
//   - No frame is read before the handshake succeeded, and an envelope
//     is delivered only when its From is the authenticated dialer and its
//     To is this node; otherwise the connection is closed and counted.
//   - Per sender and receiver, envelopes are delivered in the order they
//     were sent while one connection lasts. Across a reconnect envelopes
//     may be lost (counted as dropped where the sender can tell), never
//     reordered: once a dialer's new connection is authenticated, only
//     its reader delivers; the old reader finishes a delivery it is in
//     the middle of (the new one waits for it) and drops the frames it
//     still holds.
//   - The secret never appears in logs or errors.
//
// One mutex (Transport.mu) guards the peer table, the open connections and
// the closed flag; counters are atomics. No blocking call is made with it
// held.
package peer
