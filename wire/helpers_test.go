package wire_test

import (
	"reflect"

	"narad/wire/wiretest"
)

// equal compares two Comparable envelopes.
func equal(a, b wiretest.ComparableEnvelope) bool { return reflect.DeepEqual(a, b) }
