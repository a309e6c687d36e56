package meta

import (
	"math/rand/v2"
	"testing"
)

// randomOptional is randomNumber, or zero (an omitted field) half the
// time.
func randomOptional(rng *rand.Rand) uint64 { return randomNumber(rng) * uint64(rng.IntN(2)) }

func randomMoveEnd(rng *rand.Rand) moveEnd {
	return moveEnd{Topic: randomText(rng), Partition: int(randomNumber(rng)), ExpectedOwner: randomText(rng),
		ExpectedTarget: randomText(rng), ExpectedStartedAtMs: int64(randomOptional(rng)),
		ExpectedCreation: ExpectedCreation{ExpectedIncarnation: randomOptional(rng), ExpectedCreatedAtMs: int64(randomOptional(rng))}}
}

func moveEndTexts(end moveEnd) []string {
	return []string{end.Topic, end.ExpectedOwner, end.ExpectedTarget}
}

// The canonical readers of the commands of a move decode exactly what
// encoding/json decodes, on what EncodeCommand writes and on that changed
// at random; and they take the commands a cluster writes.
func TestMoveCommandsCanonicalAgreeWithJSON(t *testing.T) {
	t.Run("SetTarget", func(t *testing.T) {
		random := func(rng *rand.Rand) (ProposalID, SetTarget) {
			return randomProposal(rng), SetTarget{Topic: randomText(rng), Partition: int(randomNumber(rng)), ExpectedOwner: randomText(rng),
				Target: randomText(rng), NowMs: int64(randomNumber(rng)), MovesMax: int(randomOptional(rng))}
		}
		texts := func(cmd SetTarget) []string { return []string{cmd.Topic, cmd.ExpectedOwner, cmd.Target} }
		requireCanonicalAgrees(t, random, texts, (*canonicalScan).setTarget, 1_000)
	})
	t.Run("CompleteMove", func(t *testing.T) {
		random := func(rng *rand.Rand) (ProposalID, CompleteMove) {
			return randomProposal(rng), CompleteMove(randomMoveEnd(rng))
		}
		texts := func(cmd CompleteMove) []string { return moveEndTexts(moveEnd(cmd)) }
		requireCanonicalAgrees(t, random, texts, (*canonicalScan).completeMove, 1_000)
	})
	t.Run("ForcePromote", func(t *testing.T) {
		random := func(rng *rand.Rand) (ProposalID, ForcePromote) {
			return randomProposal(rng), ForcePromote(randomMoveEnd(rng))
		}
		texts := func(cmd ForcePromote) []string { return moveEndTexts(moveEnd(cmd)) }
		requireCanonicalAgrees(t, random, texts, (*canonicalScan).forcePromote, 1_000)
	})
	t.Run("AbortMove", func(t *testing.T) {
		random := func(rng *rand.Rand) (ProposalID, AbortMove) {
			end := randomMoveEnd(rng)
			return randomProposal(rng), AbortMove{Topic: end.Topic, Partition: end.Partition, ExpectedTarget: end.ExpectedTarget,
				ExpectedStartedAtMs: end.ExpectedStartedAtMs, ExpectedCreation: end.ExpectedCreation}
		}
		texts := func(cmd AbortMove) []string { return []string{cmd.Topic, cmd.ExpectedTarget} }
		requireCanonicalAgrees(t, random, texts, (*canonicalScan).abortMove, 1_000)
	})
}
