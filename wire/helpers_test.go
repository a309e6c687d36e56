package wire_test

import (
	"reflect"

	"narad/node"
)

// equal compares two Comparable envelopes.
func equal(a, b node.Envelope) bool { return reflect.DeepEqual(a, b) }
