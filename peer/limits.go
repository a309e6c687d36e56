package peer

import (
	"crypto/sha256"
	"time"

	"narad/wire"
)

// Every bound of the package, in one place (docs/style.md#bounds). Bounds that
// an operator may want to change are Config fields; these are not.
const (
	// nodeIDBytesMax bounds a node id: the bound of the wire codec, which
	// carries ids in every envelope. The handshake carries an id behind a
	// one-byte length, so it must stay below 256.
	nodeIDBytesMax = wire.NodeIDBytesMax
	// nonceBytes is the size of each side's handshake challenge.
	nonceBytes = 32
	// macBytes is the size of an HMAC-SHA256 tag.
	macBytes = sha256.Size
	// helloBytesMax bounds the dialer's hello on the wire: magic, version,
	// two ids with their lengths, nonce.
	helloBytesMax = len(handshakeMagic) + 1 + 2*(1+nodeIDBytesMax) + nonceBytes

	// sendQueueMaxLimit bounds Config.SendQueueMax: a queue holds whole
	// envelopes, and a runaway setting would hide a stalled peer behind
	// memory growth.
	sendQueueMaxLimit = 1 << 20
	// sendQueueBytesMaxLimit bounds Config.SendQueueBytesMax, for the
	// same reason.
	sendQueueBytesMaxLimit = 4 << 30
	// controlQueueMax and controlQueueBytesMax bound the control envelopes
	// (classControl: Raft messages, membership heartbeats, joins) queued
	// for one peer, apart from Config.SendQueueMax and
	// Config.SendQueueBytesMax, which bound the rest (classData: client
	// requests forwarded, their answers, move chunks), so that a flood of
	// client data never drops the metastore's traffic: missed heartbeats
	// would mean elections and members marked dead. Control traffic is
	// paced by the cluster itself (a heartbeat per tick; appends under
	// Raft's flow control, whose window, MaxInflightMsgs appends of
	// MaxSizePerMsg, can pass the byte bound: appends past it are dropped
	// and sent again by Raft, while envelopes without payload, heartbeats
	// and votes, are bounded by their count alone), and proposals that
	// clients cause are data (classOf); a flood of control traffic means a
	// stalled peer, and past either bound it is dropped and counted
	// (PeerStats.DroppedControl). Both classes share one FIFO, so control
	// envelopes are never dropped for data but do wait behind the data
	// queued before them (at most Config.SendQueueBytesMax). A single
	// control envelope over controlQueueBytesMax (a metastore snapshot,
	// up to meta.SnapshotMessageBytesMax) is still queued when no other
	// control bytes are.
	controlQueueMax      = 1024
	controlQueueBytesMax = 16 << 20
	// inboundConnectionsMax bounds the authenticated inbound connections
	// open at once. Past it a new connection is closed at once and counted
	// (Stats.InboundRefused).
	inboundConnectionsMax = 1024
	// handshakesInFlightMax bounds the accepted connections still in their
	// handshake, apart from the authenticated ones: past it the oldest
	// handshake is closed to admit the new connection (Stats.HandshakesShed),
	// of the remote host holding floodHandshakesMin or more if one does, so
	// that a flood of connections that never authenticate cannot keep out
	// a real peer, whose handshake takes milliseconds, nor, from one
	// address, shed one from another.
	handshakesInFlightMax = 64
	// floodHandshakesMin is how many handshakes in flight from one remote
	// host make it the one whose handshakes are shed first: far more than
	// the nodes of one machine dial at once.
	floodHandshakesMin = handshakesInFlightMax / 4
	// inboundFailureLogsPerSecond bounds the warnings logged for inbound
	// connections that fail their handshake or are refused; the rest are
	// counted, and the next warning says how many were suppressed.
	inboundFailureLogsPerSecond = 5
	// connectionHealthyMin is how long a connection must last for the
	// writer's reconnect backoff to start afresh when it ends; a shorter
	// one counts as a failed attempt (Stats.ShortConnections).
	connectionHealthyMin = time.Second
	// readBufferBytes is the buffered reader of an accepted connection.
	readBufferBytes = 64 << 10
	// writeBatchBytesMax bounds the frames a writer gathers into one write.
	// One frame larger than this is still written, alone.
	writeBatchBytesMax = 1 << 20
	// writeBatchMessagesMax bounds the messages gathered into one write.
	writeBatchMessagesMax = 256
	// bufferKeepBytesMax is the largest buffer a writer or reader keeps
	// between messages; a larger one, grown by a big message, is released.
	bufferKeepBytesMax = 4 * writeBatchBytesMax
	// acceptRetryDelay is the pause after a failed Accept that is not the
	// listener closing (for instance, out of file descriptors).
	acceptRetryDelay = 100 * time.Millisecond
	// timeoutMax bounds every configured timeout and backoff.
	timeoutMax = 10 * time.Minute
)

// The relations between the bounds, checked once when the package loads.
func init() {
	assert(writeBatchMessagesMax > 0 && writeBatchBytesMax > 0, "write batch bounds must be positive")
	assert(bufferKeepBytesMax >= writeBatchBytesMax,
		"kept write buffer %d below one batch %d", bufferKeepBytesMax, writeBatchBytesMax)
	assert(nodeIDBytesMax <= 255, "node id bound %d does not fit its one-byte length", nodeIDBytesMax)
	assert(macBytes == 32, "an HMAC-SHA256 tag is 32 bytes, not %d", macBytes)
	assert(controlQueueMax > 0 && controlQueueBytesMax > 0, "control queue bounds must be positive")
}
