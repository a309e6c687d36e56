package sim

import (
	"errors"
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
	return id + payloadPadSeparator + paddingOf(id, stormPayloadBytes-len(id)-len(payloadPadSeparator))
}

// paddingOf is the padding of id's payload: letters drawn from the id's
// hash, so that a byte of it changed, lost or taken from another record
// shows (sim review: a padding of one letter repeated hid any change).
func paddingOf(id string, length int) string {
	state := paddingSeed(id)
	padding := make([]byte, length)
	for i := range padding {
		state = nextPaddingState(state)
		padding[i] = paddingLetter(state)
	}
	return string(padding)
}

// paddingSeed is the 64-bit FNV-1a hash of id (hash/fnv's New64a), which
// seeds id's padding.
func paddingSeed(id string) uint64 {
	state := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		state ^= uint64(id[i])
		state *= 1099511628211
	}
	return state
}

func nextPaddingState(state uint64) uint64 {
	return state*6364136223846793005 + 1442695040888963407
}

func paddingLetter(state uint64) byte { return 'a' + byte(state>>59)%26 }

// isPaddingOf reports whether padding == paddingOf(id, len(padding)),
// without building it.
func isPaddingOf(id, padding string) bool {
	state := paddingSeed(id)
	for i := 0; i < len(padding); i++ {
		state = nextPaddingState(state)
		if padding[i] != paddingLetter(state) {
			return false
		}
	}
	return true
}

// idOfPayload strips a storm's padding from a payload.
func idOfPayload(payload string) string {
	id, _, _ := strings.Cut(payload, payloadPadSeparator)
	return id
}

// errPayloadChanged marks a delivered payload that is not the one its
// record was produced with: the checker "payload" fails the run.
var errPayloadChanged = errors.New("payload changed")

// payloadChanged reports whether a failure's arguments carry
// errPayloadChanged.
func payloadChanged(args []any) bool {
	for _, arg := range args {
		if err, ok := arg.(error); ok && errors.Is(err, errPayloadChanged) {
			return true
		}
	}
	return false
}

// checkedIDOfPayload returns the id of a payload whose padding, if any,
// is the id's.
func checkedIDOfPayload(payload string) (string, error) {
	id, padding, padded := strings.Cut(payload, payloadPadSeparator)
	if padded && !isPaddingOf(id, padding) {
		return "", fmt.Errorf("%w: the payload of %s is not the one produced (its padding changed)", errPayloadChanged, id)
	}
	return id, nil
}
