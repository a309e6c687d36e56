package node

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"narad/msg"
)

// parkedPoll makes a waiter of a consume of topicName, pinned to
// partition (msg.PartitionNone: unpinned).
func parkedPoll(id msg.RequestID, topicName string, partition int, deadlineMs int64) *waiter {
	return &waiter{id: id, request: msg.Consume{Topic: topicName, Partition: partition}, deadlineMs: deadlineMs}
}

func idsOf(waiters []*waiter) []msg.RequestID {
	ids := []msg.RequestID{}
	for _, w := range waiters {
		ids = append(ids, w.id)
	}
	return ids
}

// walkIDs runs a wake's walk in which every poll is served, and returns
// the ids in the order the walk handed them out.
func walkIDs(walk wakeWalk) []msg.RequestID {
	ids := []msg.RequestID{}
	for w, ok := walk.next(); ok; w, ok = walk.next() {
		ids = append(ids, w.id)
		walk.served()
	}
	return ids
}

func TestWaiterSetKeepsArrivalOrderAcrossGroups(t *testing.T) {
	s := newWaiterSet()
	s.add(parkedPoll(1, "t", 2, 100))
	s.add(parkedPoll(2, "t", msg.PartitionNone, 100))
	s.add(parkedPoll(3, "u", 2, 100))
	s.add(parkedPoll(4, "t", 0, 100))
	s.add(parkedPoll(5, "t", 2, 100))
	s.add(parkedPoll(6, "t", msg.PartitionNone, 100))
	checkWaiterSet(t, s)
	require.Equal(t, []msg.RequestID{1, 2, 4, 5, 6}, idsOf(s.topic("t")), "a topic's polls in the order they parked")
	require.Equal(t, []msg.RequestID{2, 6}, idsOf(s.unpinned("t")))
	require.Equal(t, []msg.RequestID{1, 5}, idsOf(s.pinnedTo("t", 2)))
	require.Empty(t, s.pinnedTo("t", 1), "no poll is pinned to partition 1")
	require.Equal(t, []msg.RequestID{3}, idsOf(s.topic("u")))

	require.Equal(t, []msg.RequestID{1, 2, 5, 6}, walkIDs(s.wakeOf("t", []int{2, 2, 7})),
		"a wake of partition 2 walks its pinned polls and the unpinned ones, oldest first, each once")
	require.Equal(t, []msg.RequestID{4}, idsOf(s.topic("t")), "the served polls left the set")
	require.Equal(t, []msg.RequestID{4}, walkIDs(s.wakeAll("t")))
	require.Equal(t, []string{"u"}, s.topicNames(), "a topic leaves the set with its last poll")
	checkWaiterSet(t, s)
}

// A poll that found nothing takes its group out of the walk: the polls
// after it of the same kind are not handed out, the other groups are.
func TestAWakeWalkDropsTheGroupOfAPollNotServed(t *testing.T) {
	s := newWaiterSet()
	for id, partition := range []int{0, 1, msg.PartitionNone, 0, 1, msg.PartitionNone, 1} {
		s.add(parkedPoll(msg.RequestID(id+1), "t", partition, 100))
	}
	var handed []msg.RequestID
	walk := s.wakeAll("t")
	for w, ok := walk.next(); ok; w, ok = walk.next() {
		handed = append(handed, w.id)
		if w.request.Partition == 1 { // partition 1 had records for all its polls; 0 and the unpinned found none
			walk.served()
		}
	}
	require.Equal(t, []msg.RequestID{1, 2, 3, 5, 7}, handed)
	require.Equal(t, []msg.RequestID{1, 3, 4, 6}, idsOf(s.topic("t")))
	checkWaiterSet(t, s)
}

func TestWaiterSetRemovesFromAnyPlace(t *testing.T) {
	s := newWaiterSet()
	for id := range msg.RequestID(9) {
		s.add(parkedPoll(id+1, "t", int(id%2), int64(90-id)))
	}
	s.add(&waiter{id: 10, request: msg.Consume{Topic: "t", Partition: msg.PartitionNone}, deadlineMs: 5, noWait: true})
	require.Equal(t, 9, s.parked(), "a consume that asked not to wait is held but not counted")
	for _, id := range []msg.RequestID{5, 1, 9, 10, 4} { // middle, oldest, newest, the only unpinned, a pinned group's
		require.True(t, s.remove(id))
		require.False(t, s.remove(id), "a poll is removed once")
		checkWaiterSet(t, s)
	}
	require.Equal(t, []msg.RequestID{2, 3, 6, 7, 8}, idsOf(s.topic("t")))
	require.Equal(t, 5, s.parked())
	deadline, ok := s.nextDeadline()
	require.True(t, ok)
	require.Equal(t, int64(90-7), deadline, "the heap lost the removed polls' deadlines")
	require.Equal(t, []msg.RequestID{8, 7}, idsOf(s.popExpired(90-6)), "the expired polls, earliest deadline first")
	require.Equal(t, []msg.RequestID{2, 3, 6}, s.removeTopic("t"), "a topic's polls, removed in arrival order")
	require.Zero(t, s.len())
	require.Empty(t, s.topicNames())
	_, ok = s.nextDeadline()
	require.False(t, ok)
	checkWaiterSet(t, s)
}

// checkWaiterSet verifies the set's structures against each other: every
// waiter is in exactly its group, each group is linked both ways in
// arrival order, no empty group or topic is kept, and the deadline heap
// holds every waiter at its index, in heap order.
func checkWaiterSet(t require.TestingT, s *waiterSet) {
	seen, waiting := 0, 0
	for name, topicSet := range s.byTopic { //determinism:ok a test's checks
		require.Positive(t, topicSet.count, "topic %s is kept empty", name)
		count := checkWaiterGroup(t, s, &topicSet.unpinned, name, msg.PartitionNone)
		for partition, group := range topicSet.pinned { //determinism:ok a test's checks
			require.NotNil(t, group.oldest, "the group of partition %d of %s is kept empty", partition, name)
			count += checkWaiterGroup(t, s, group, name, partition)
		}
		require.Equal(t, topicSet.count, count, "topic %s counts its waiters", name)
		seen += count
	}
	require.Equal(t, len(s.byID), seen, "every waiter is in a group")
	require.Len(t, s.byDeadline, len(s.byID), "every waiter is in the deadline heap")
	for i, w := range s.byDeadline {
		require.Equal(t, i, w.heapIndex, "request %d knows its place in the heap", w.id)
		require.Same(t, w, s.byID[w.id])
		if i > 0 {
			require.False(t, s.byDeadline.Less(i, (i-1)/2), "the heap is ordered at %d", i)
		}
		if !w.noWait {
			waiting++
		}
	}
	require.Equal(t, waiting, s.parked(), "the waiting count")
}

// checkWaiterGroup verifies one group and returns its length.
func checkWaiterGroup(t require.TestingT, s *waiterSet, g *waiterGroup, name string, partition int) int {
	count := 0
	var earlier *waiter
	for w := g.oldest; w != nil; w = w.later {
		require.Same(t, w, s.byID[w.id], "request %d of a group is in the set", w.id)
		require.Equal(t, name, w.request.Topic)
		require.Equal(t, partition, w.request.Partition)
		require.Same(t, earlier, w.earlier, "request %d links back", w.id)
		if earlier != nil {
			require.Less(t, earlier.arrival, w.arrival, "the group is in arrival order")
		}
		earlier = w
		count++
	}
	require.Same(t, earlier, g.newest, "the group's newest end")
	return count
}

// The model of the waiter set is a plain slice of polls in arrival order,
// scanned whole by every call. Its wake restates the order of serving:
// the polls of the topic, oldest first, that are unpinned or pinned to a
// partition woken, skipping those whose kind (unpinned, or pinned to
// that partition) found nothing earlier in the same wake.
type waiterModel struct {
	polls []*waiter
}

func (m *waiterModel) ofTopic(name string) []msg.RequestID {
	ids := []msg.RequestID{}
	for _, w := range m.polls {
		if w.request.Topic == name {
			ids = append(ids, w.id)
		}
	}
	return ids
}

func (m *waiterModel) drop(keep func(*waiter) bool) []msg.RequestID {
	var dropped []msg.RequestID
	m.polls = slices.DeleteFunc(m.polls, func(w *waiter) bool {
		if !keep(w) {
			dropped = append(dropped, w.id)
		}
		return !keep(w)
	})
	return dropped
}

// wake runs a wake of the model; woken nil wakes every partition.
func (m *waiterModel) wake(name string, woken []int, records wakeRecords) []msg.RequestID {
	tried := []msg.RequestID{}
	empty := map[int]bool{}
	for _, w := range slices.Clone(m.polls) {
		partition := w.request.Partition
		if w.request.Topic != name || empty[partition] ||
			partition != msg.PartitionNone && woken != nil && !slices.Contains(woken, partition) {
			continue
		}
		tried = append(tried, w.id)
		if !records.take(partition) {
			empty[partition] = true
			continue
		}
		m.drop(func(other *waiter) bool { return other != w })
	}
	return tried
}

// wakeRecords stands for the records a wake finds: how many each
// partition holds; an unpinned poll takes from the first that has one.
type wakeRecords []int

func (r wakeRecords) take(partition int) bool {
	for i := range r {
		if r[i] > 0 && (partition == msg.PartitionNone || partition == i) {
			r[i]--
			return true
		}
	}
	return false
}

func TestWaiterSetMatchesItsModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		s, m := newWaiterSet(), &waiterModel{}
		topics := []string{"a", "b"}
		nextID := msg.RequestID(0)
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(rt *rapid.T) {
				nextID++
				w := parkedPoll(nextID, rapid.SampledFrom(topics).Draw(rt, "topic"),
					rapid.IntRange(msg.PartitionNone, 2).Draw(rt, "partition"), rapid.Int64Range(0, 20).Draw(rt, "deadline"))
				w.noWait = rapid.Bool().Draw(rt, "noWait")
				copied := *w
				s.add(w)
				m.polls = append(m.polls, &copied)
			},
			"remove": func(rt *rapid.T) {
				id := rapid.Int64Range(1, int64(nextID)+1).Draw(rt, "id")
				dropped := m.drop(func(w *waiter) bool { return w.id != msg.RequestID(id) })
				require.Equal(rt, len(dropped) == 1, s.remove(msg.RequestID(id)), "remove of %d reports whether it was parked", id)
			},
			"removeTopic": func(rt *rapid.T) {
				name := rapid.SampledFrom(topics).Draw(rt, "topic")
				want := m.drop(func(w *waiter) bool { return w.request.Topic != name })
				require.Equal(rt, want, s.removeTopic(name), "a topic's polls, in arrival order")
			},
			"popExpired": func(rt *rapid.T) {
				nowMs := rapid.Int64Range(0, 20).Draw(rt, "now")
				expired := slices.Clone(m.polls)
				expired = slices.DeleteFunc(expired, func(w *waiter) bool { return w.deadlineMs > nowMs })
				slices.SortFunc(expired, func(a, b *waiter) int {
					return cmp.Or(cmp.Compare(a.deadlineMs, b.deadlineMs), cmp.Compare(a.id, b.id))
				})
				m.drop(func(w *waiter) bool { return w.deadlineMs > nowMs })
				require.Equal(rt, idsOf(expired), idsOf(s.popExpired(nowMs)), "the polls expired at %d, earliest first", nowMs)
			},
			"wake": func(rt *rapid.T) { checkWakeAgainstModel(rt, s, m, rapid.SampledFrom(topics).Draw(rt, "topic")) },
			"": func(rt *rapid.T) {
				checkWaiterSet(rt, s)
				for _, name := range topics {
					require.Equal(rt, m.ofTopic(name), idsOf(s.topic(name)), "topic %s in arrival order", name)
				}
				require.Equal(rt, len(m.polls), s.len())
			},
		})
	})
}

// checkWakeAgainstModel draws the records of a wake and the partitions
// it names (or all), walks the set and the model, and compares the polls
// each asked, in order.
func checkWakeAgainstModel(rt *rapid.T, s *waiterSet, m *waiterModel, name string) {
	records := wakeRecords(rapid.SliceOfN(rapid.IntRange(0, 2), 4, 4).Draw(rt, "records"))
	var woken []int // nil: every partition
	var walk wakeWalk
	if rapid.Bool().Draw(rt, "some partitions") {
		woken = append([]int{}, rapid.SliceOfN(rapid.IntRange(0, 3), 0, 4).Draw(rt, "woken")...)
		walk = s.wakeOf(name, woken)
	} else {
		walk = s.wakeAll(name)
	}
	drawn := slices.Clone(records)
	want := m.wake(name, woken, slices.Clone(records))
	tried := []msg.RequestID{}
	for w, ok := walk.next(); ok; w, ok = walk.next() {
		tried = append(tried, w.id)
		if records.take(w.request.Partition) {
			walk.served()
		}
	}
	require.Equal(rt, want, tried, fmt.Sprintf("the polls a wake of %s asked, in order (records %v, partitions %v)", name, drawn, woken))
}
