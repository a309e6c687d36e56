package peer

import (
	"errors"
	"fmt"
)

// Sentinel errors. Handshake failures wrap one of the first three; the
// transport counts and logs them and never returns them to Send's caller.
var (
	// ErrHandshake: the other side does not speak this protocol (bad
	// magic, version or length), or the connection failed mid-handshake.
	ErrHandshake = errors.New("peer: handshake failed")
	// ErrAuthentication: a proof of the cluster secret did not verify, or
	// the listener closed the connection instead of acknowledging ours.
	ErrAuthentication = errors.New("peer: authentication failed")
	// ErrWrongPeer: the node listening at a peer's address has another id.
	ErrWrongPeer = errors.New("peer: address is served by another node")
	// ErrInvalidConfig is wrapped by every problem Config.Validate reports.
	ErrInvalidConfig = errors.New("peer: invalid config")
	// ErrClosed: the transport was closed.
	ErrClosed = errors.New("peer: transport closed")
	// ErrStarted: Start was called twice.
	ErrStarted = errors.New("peer: transport already started")
)

// assert panics when an invariant is broken: a bug, never an expected
// condition (those are returned as errors).
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic(fmt.Sprintf("peer: invariant broken: "+format, args...))
	}
}
