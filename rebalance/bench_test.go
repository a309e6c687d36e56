package rebalance

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchmarkInput is 1000 partitions (10 topics of 100) over 10 nodes:
// the first seven hold them all, the last three just joined, so a full
// plan of MaxInFlightMovesDefault changes is made every call.
func benchmarkInput() Input {
	owners := []string{"n01", "n02", "n03", "n04", "n05", "n06", "n07"}
	var partitions []Partition
	for topic := range 10 {
		for index := range 100 {
			owner := owners[len(partitions)%len(owners)]
			partitions = append(partitions, Partition{Topic: fmt.Sprintf("topic-%02d", topic), Index: index, Owner: owner})
		}
	}
	members := receivers("n01", "n02", "n03", "n04", "n05", "n06", "n07", "n08", "n09", "n10")
	return Input{Partitions: partitions, Members: members, MaxInFlightMoves: MaxInFlightMovesDefault}
}

func BenchmarkPlan1000Partitions10Nodes(b *testing.B) {
	in := benchmarkInput()
	b.ReportAllocs()
	for b.Loop() {
		result, err := Plan(in)
		if err != nil || len(result.Changes) != MaxInFlightMovesDefault {
			b.Fatalf("plan: %d changes, %v", len(result.Changes), err)
		}
	}
}

// The steady state, which the leader plans every tick: the same
// partitions balanced over the seven nodes that hold them.
func BenchmarkPlan1000Partitions10NodesBalanced(b *testing.B) {
	in := benchmarkInput()
	in.Members = in.Members[:7]
	b.ReportAllocs()
	for b.Loop() {
		result, err := Plan(in)
		if err != nil || len(result.Changes) != 0 {
			b.Fatalf("plan: %d changes, %v", len(result.Changes), err)
		}
	}
}

// The same plan from an input in no particular order, which Plan sorts in
// a copy first.
func BenchmarkPlan1000Partitions10NodesUnsorted(b *testing.B) {
	in := benchmarkInput()
	shuffler := rand.New(rand.NewPCG(1, 2))
	shuffler.Shuffle(len(in.Partitions), func(i, j int) {
		in.Partitions[i], in.Partitions[j] = in.Partitions[j], in.Partitions[i]
	})
	b.ReportAllocs()
	for b.Loop() {
		result, err := Plan(in)
		if err != nil || len(result.Changes) != MaxInFlightMovesDefault {
			b.Fatalf("plan: %d changes, %v", len(result.Changes), err)
		}
	}
}
