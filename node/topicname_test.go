package node

import (
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// topicNameReference is the rule validTopicName implements, as a regular
// expression: the test's oracle.
var topicNameReference = regexp.MustCompile(`^[A-Za-z0-9._-]{1,255}$`)

func referenceTopicName(name string) bool {
	return topicNameReference.MatchString(name) && name != "." && name != ".."
}

// TestTopicNamesAreCheckedAsTheirRuleSays: the byte loop accepts exactly
// the names the rule's regular expression does, on names drawn near the
// edges (every byte value, lengths around the bound, dots).
func TestTopicNamesAreCheckedAsTheirRuleSays(t *testing.T) {
	for _, name := range []string{"", ".", "..", "...", "a", "orders", "a.b-c_D9", "a b", "a/b", "a~deleting", "é",
		strings.Repeat("x", topicNameBytesMax), strings.Repeat("x", topicNameBytesMax+1)} {
		require.Equal(t, referenceTopicName(name), validTopicName(name) == nil, "%q", name)
	}
	rapid.Check(t, func(t *rapid.T) {
		valid := rapid.SampledFrom([]byte("azAZ09._-"))
		bytes := rapid.OneOf(valid, rapid.SampledFrom([]byte("~/ \x00\xff")), rapid.Byte())
		if rapid.Bool().Draw(t, "only valid bytes") {
			bytes = valid // long names near the bound, and names of dots
		}
		length := rapid.IntRange(0, topicNameBytesMax+2).Draw(t, "length")
		name := string(rapid.SliceOfN(bytes, length, length).Draw(t, "name"))
		if got, want := validTopicName(name) == nil, referenceTopicName(name); got != want {
			t.Fatalf("%q: accepted %t, the rule says %t", name, got, want)
		}
	})
}

// TestPartitionDirsParseBack: partitionKeyOfDir and topicOfDir invert
// PartitionDir for every valid topic name and partition index, and a
// directory that is not a partition's is a broken invariant.
func TestPartitionDirsParseBack(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		length := rapid.IntRange(1, topicNameBytesMax).Draw(t, "length")
		name := string(rapid.SliceOfN(rapid.SampledFrom([]byte("azAZ09._-")), length, length).Draw(t, "name"))
		if validTopicName(name) != nil {
			t.Skip("not a topic name")
		}
		index := rapid.IntRange(0, 99_999).Draw(t, "index")
		dir := PartitionDir(name, index)
		if got := partitionKeyOfDir(dir); got != (partitionKey{name, index}) {
			t.Fatalf("%s parsed as %v", dir, got)
		}
		if got := topicOfDir(dir); got != name {
			t.Fatalf("%s: topic %q", dir, got)
		}
	})
	for _, dir := range []string{"topics/orders", "topics//p00001", "other/orders/p00001", "topics/orders/p1",
		"topics/orders/q00001", "topics/orders/p00001/x"} {
		require.Panics(t, func() { partitionKeyOfDir(dir) }, dir)
	}
}
