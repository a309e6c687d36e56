// Package route holds the bookkeeping of requests that cross nodes: the
// table of outstanding forwards, the table of requests served here on
// behalf of another (forwarded here, or parts of this node's own), the
// join that splits one produce request into parts by owner and answers
// once every part has, and the batch that carries several parts to one
// owner in one forward. It is a pure data
// structure of the deterministic core: no goroutines, no clock (time
// arrives as nowMs arguments), no I/O, and no map order reaches an output.
// The node sends the messages, serves the parts and runs the
// continuations; this package only keeps count and decides.
//
// # Forwards
//
// A Forwards table numbers the forwards a node sends (ids only increase,
// from a base the node draws per incarnation, so a late reply to a forward
// of an earlier incarnation never matches one of this one), remembers
// each one's peer, deadline and continuation, and hands the continuation
// back exactly once: when the peer answers, when the deadline passes, or
// when the peer is reported unreachable. A reply with an unknown id, or
// from another peer than the one asked, is dropped. A peer that let a
// forward time out, or was reported unreachable, is marked down for a
// while; any message from it clears the mark.
//
// # Served requests
//
// Served numbers, from one counter, the requests a peer forwarded here
// (kept with the origin their reply goes back to) and the parts of this
// node's own split requests (kept with their continuation), and hands each
// back once, when its reply is due.
//
// # Joins
//
// A Join counts the parts of a split request in flight and answers when
// the count is back at zero. A part that fails retryably may be placed
// again, at most ReroutesMax times per request and never after a failure
// that no re-placement could fix; re-placed records avoid what failed
// (the owner, if it did not answer; else the partitions it refused). The
// first unfixable failure is the request's answer.
//
// # Batches
//
// A Batch gathers the parts bound for one owner within one Ready, up to a
// record and a byte bound, and splits the owner's one answer back into the
// parts' answers in order.
package route
