package node

import (
	"fmt"
	"hash/fnv"
	"testing"

	"narad/msg"

	"github.com/stretchr/testify/require"
)

// Creates past the cluster's topic limit and creates or growths past a
// node's partition limit are refused with a clear 409, and change nothing.
func TestPlacementLimits(t *testing.T) {
	h := newHarness(t)
	h.cfg.TopicsMax = 2
	h.cfg.PartitionsPerNodeMax = 10
	h.restart()
	h.createTopic("a", func(c *msg.CreateTopic) { c.Partitions = 4 })
	e := h.fail(msg.CreateTopic{Name: "b", Partitions: 7}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	h.createTopic("b", func(c *msg.CreateTopic) { c.Partitions = 6 })
	e = h.fail(msg.CreateTopic{Name: "c"}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 2 topics")

	h.ok(msg.DeleteTopic{Name: "b"})
	grow := 11
	e = h.fail(msg.AlterTopic{Name: "a", Partitions: &grow}, msg.CodeConflict)
	require.Contains(t, e.Message, "limit of 10 partitions")
	require.Equal(t, 4, h.ok(msg.GetTopic{Name: "a", Partition: msg.PartitionNone}).(msg.TopicDetail).Partitions)
	grow = 10
	h.ok(msg.AlterTopic{Name: "a", Partitions: &grow})
}

// TestACreateThatFitsIsPlacedAroundAFullMember: with one member at its
// partition limit and room on the others, a create that fits in the
// cluster passes the full member over in the round-robin instead of
// being refused for it.
func TestACreateThatFitsIsPlacedAroundAFullMember(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.PartitionsPerNodeMax = 4 })
	leader := c.electWithTopic("a", 4)
	busy := ""
	for id, count := range c.partitionsOwned(leader, "a") {
		if count == 2 {
			busy = id
		}
	}
	require.NotEmpty(t, busy, "four partitions over three members: one owns two")
	// a name whose round of eight starts at the member owning two: the
	// plain round would give it three more, five in all
	name := ""
	for i := 0; name == ""; i++ {
		candidate := fmt.Sprintf("b%d", i)
		h := fnv.New32a()
		h.Write([]byte(candidate))
		if c.ids[h.Sum32()%uint32(len(c.ids))] == busy {
			name = candidate
		}
	}
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: name, Partitions: 8}).Err, "twelve partitions fit in three members of four")
	require.Equal(t, map[string]int{"n1": 4, "n2": 4, "n3": 4}, c.partitionsOwned(leader, "a", name))
	e := c.do(leader, msg.CreateTopic{Name: "c", Partitions: 3}).Err
	require.Equal(t, msg.CodeConflict, msg.CodeOf(e), "every member is full: refused")
}

// TestAChildThatFitsIsPlacedUnderTheLimitBeforeApartFromItsParent: with
// each member one partition short of its limit, a child whose round would
// put every partition with its parent's is kept apart where a member has
// room and left with the parent's node where none has: apartness is a
// preference, the partition limit a bound, and a child that fits is
// created.
func TestAChildThatFitsIsPlacedUnderTheLimitBeforeApartFromItsParent(t *testing.T) {
	c := newClusterHarness(t, 3)
	c.reconfigure(func(cfg *Config) { cfg.PartitionsPerNodeMax = 3 })
	leader := c.electWithTopic("p", 3)
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: "y", Partitions: 3}).Err)
	start := func(name string) uint32 {
		h := fnv.New32a()
		h.Write([]byte(name))
		return h.Sum32() % uint32(len(c.ids))
	}
	name := ""
	for i := 0; name == ""; i++ {
		if candidate := fmt.Sprintf("child%d", i); start(candidate) == start("p") {
			name = candidate
		}
	}
	require.NoError(t, c.do(leader, msg.CreateTopic{Name: name, Parent: "p"}).Err, "three more partitions fit in three members")
	require.Equal(t, map[string]int{"n1": 3, "n2": 3, "n3": 3}, c.partitionsOwned(leader, "p", "y", name))
}
