package peer

import (
	"math/rand/v2"
	"time"
)

// backoff computes the pauses between failed connection attempts: the
// step doubles from min to max, and each pause is drawn uniformly from
// [step/2, step] so that nodes reconnecting to the same peer spread out.
type backoff struct {
	// min and max bound the step. Invariant: 0 < min <= max.
	min, max time.Duration
	// step is the current step; 0 before the first failure.
	// Invariant: step == 0 or min <= step <= max.
	step   time.Duration
	random *rand.Rand
}

func newBackoff(min, max time.Duration, random *rand.Rand) backoff {
	assert(min > 0 && min <= max, "backoff bounds [%v, %v]", min, max)
	return backoff{min: min, max: max, random: random}
}

// next advances the step and returns the pause to take.
func (b *backoff) next() time.Duration {
	if b.step == 0 {
		b.step = b.min
	} else {
		b.step = min(2*b.step, b.max)
	}
	half := b.step / 2
	pause := b.step - half + time.Duration(b.random.Int64N(int64(half)+1))
	assert(pause >= b.step/2 && pause <= b.step, "pause %v outside [%v, %v]", pause, b.step/2, b.step)
	return pause
}

// reset starts over from min, after a successful connection.
func (b *backoff) reset() {
	b.step = 0
}
