// Package msg is the message vocabulary of a broker node: the closed set of
// values that cross between the state machine (package node) and its
// drivers and codecs. httpapi decodes HTTP into these values and encodes
// replies from them, wire carries them between nodes, peer and host move
// them, and the simulator builds and checks them; none of those needs the
// state machine itself to speak it.
//
// # What it owns
//
//   - The client requests (Request and its types) and the requests of the
//     move protocol that travel only between nodes (move.go).
//   - The replies (Reply) and their results (Result and its types).
//   - The request failures: Error, its Code, and a constructor per code.
//   - The envelope between nodes (Envelope) and the peer messages
//     (PeerMessage and its types).
//   - The fixed bounds of the request surface (bounds.go), which clients
//     and the peer decoder both rely on.
//
// # Invariants
//
// Request, Result and PeerMessage are sealed: each is implemented by the
// types of this package listed with it, and by nothing else, so a type
// switch over one of them can be exhaustive. The values are plain data:
// the types have no behaviour beyond Error's message, hold no pointers
// into the node's state, and are passed by value (a RaftMessage carries
// its protobuf message by pointer, never copied). A pointer to one of the
// types satisfies the interfaces too, since it has its value's methods;
// the node and the codec refuse pointers.
//
// The peer messages are append-only: package wire encodes each type under
// a fixed number, and a number is never reused. Adding a type here means
// adding it to wire's table; its tests fail until it is.
//
// The package imports nothing of this module (the lint test checks it), so
// it can sit below every package that speaks it.
package msg
