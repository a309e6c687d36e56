package sim

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"narad/chaos"
)

// Write storms on a moving partition: producers pinned to a partition
// whose move enters CatchUp, writing large records faster than the copy
// (moveChunkBytesMax per round trip) takes them, so that CatchUp gives up
// converging and still cuts over.
const (
	stormProducers      = 2
	stormBatchRecords   = 4
	stormPayloadBytes   = 1_000
	stormThinkMsMax     = 5
	stormPercent        = 40
	stormMsMin          = 1_500
	stormMsSpread       = 2_500
	payloadPadSeparator = "."
)

// stormState is the moves scenario's write storm: at most one at a time.
type stormState struct {
	w   *World
	rng *rand.Rand
	// producers are the storm's clients, idle between storms.
	producers []*client
	// untilMs ends the current storm; partition is its target.
	untilMs   int64
	partition int
	// stormed holds the partitions stormed while their move copied, until
	// the move cuts over.
	stormed map[int]bool
}

func newStormState(w *World, rng *rand.Rand) *stormState {
	return &stormState{w: w, rng: rng, untilMs: -1, stormed: map[int]bool{}}
}

// spawn creates the storm's producers, idle.
func (s *stormState) spawn() {
	for i := range stormProducers {
		p := newClient(s.w, fmt.Sprintf("storm%d", i+1), roleProducer)
		p.storm = s
		s.w.clients = append(s.w.clients, p)
		s.producers = append(s.producers, p)
	}
}

// active reports whether a storm blows now.
func (s *stormState) active() bool { return s.w.nowMs < s.untilMs }

// maybeStart starts a storm on the partition, unless one blows already.
func (s *stormState) maybeStart(partition int) {
	if s.active() || !s.w.drawsFaults() || s.rng.IntN(100) >= stormPercent {
		return
	}
	durationMs := int64(stormMsMin + s.rng.IntN(stormMsSpread))
	s.untilMs, s.partition = s.w.nowMs+durationMs, partition
	s.stormed[partition] = true
	chaos.Reached(markStormDuringCatchup)
	s.w.countFault("write-storm")
	s.w.tracef("storm on %s for %d ms", partitionName(s.w.topic, partition), durationMs)
	for _, p := range s.producers {
		p.pinnedPartition = partition
		if !p.busy {
			p.busy = true
			p.later(0, p.produceNext)
		}
	}
}

// payloadOf is the payload that carries a message id: the id itself, or,
// for a storm's producer and every producer of the aged-out world (whose
// records must fill segments for retention to delete: fanout_agedout.go),
// the id padded to stormPayloadBytes.
func (cl *client) payloadOf(id string) string {
	if cl.storm == nil && cl.w.agedOut == nil {
		return id
	}
	return id + payloadPadSeparator + strings.Repeat("x", stormPayloadBytes-len(id)-len(payloadPadSeparator))
}

// idOfPayload strips a storm's padding from a payload.
func idOfPayload(payload string) string {
	id, _, _ := strings.Cut(payload, payloadPadSeparator)
	return id
}
