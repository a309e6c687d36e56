package node

import "narad/meta"

// cursorLag is how far the cursor of a child lags behind parent
// partition index (owned here), and whether the cursor is known.
func (n *Node) cursorLag(t *topic, index int, link meta.ChildLink) (uint64, bool) {
	return 0, false
}
