package host

import (
	"crypto/rand"

	"narad/node"
)

// drawHandleKey draws the key that makes this process's receipt handles
// unguessable (node.Config.HandleKey): a new one at every start, so the
// handles of an earlier process verify to no reservation.
func drawHandleKey() []byte {
	key := make([]byte, node.HandleKeyBytes)
	rand.Read(key) // crypto/rand.Read never fails (it crashes the program rather than return short)
	return key
}
