package sim

import "narad/httpapi"

// Client links, in simulated milliseconds.
const (
	linkDelayMsMin = 0
	linkDelayMsMax = 3
	// slowLinkDelayMsMax is the delay bound while a slow-network fault
	// lasts.
	slowLinkDelayMsMax = 400
)

// network carries client requests to nodes and replies back, with seeded
// delays and, while a fault lasts, loss. A lost request or reply is a
// client timeout: an indefinite outcome.
type network struct {
	w *World
	// lossProbability and delayMsMax change while network faults last.
	lossProbability float64
	delayMsMax      int
}

func newNetwork(w *World) *network {
	return &network{w: w, delayMsMax: linkDelayMsMax}
}

func (n *network) delay() int64 {
	return int64(linkDelayMsMin + n.w.networkRng.IntN(n.delayMsMax-linkDelayMsMin+1))
}

func (n *network) lost() bool {
	return n.lossProbability > 0 && n.w.networkRng.Float64() < n.lossProbability
}

func (n *network) toNode(c *call) {
	if n.lost() {
		n.w.tracef("net: lost request %s", c.describe())
		return
	}
	n.w.at(n.delay(), func() { c.target.receive(c) })
}

func (n *network) toClient(c *call, response httpapi.Response) {
	if n.lost() {
		n.w.tracef("net: lost reply to %s", c.describe())
		return
	}
	n.w.at(n.delay(), func() { c.client.complete(c, &response) })
}

// cancel tells the node the client went away (its connection closed).
func (n *network) cancel(c *call) {
	n.w.at(n.delay(), func() { c.target.cancel(c) })
}

// heal ends network faults.
func (n *network) heal() {
	n.lossProbability, n.delayMsMax = 0, linkDelayMsMax
}
