package auth

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"narad/meta"
)

// manyUsers publishes count users named user0, user1, ... with the
// password "pw", each with a full bucket of its own.
func manyUsers(t *testing.T, a *Authenticator, count int) {
	t.Helper()
	hash := hashed(t, a, "pw")
	users := make([]meta.User, count)
	for i := range users {
		users[i] = meta.User{Username: fmt.Sprintf("user%03d", i), PasswordHash: hash}
	}
	a.Publish(NewUsers(1, users))
}

// attemptsCounted reads narad_auth_attempts_total for result.
func attemptsCounted(a *Authenticator, result string) float64 {
	var m dto.Metric
	if err := a.metrics.attempts.WithLabelValues(result).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// gaugeValue reads an unlabelled gauge of reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, family := range families {
		if family.GetName() == name {
			return family.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s", name)
	return 0
}

// One address guessing across many users' names, each with a full
// bucket of its own, runs bcrypt SourceBucketBurst times; then every new
// guess from it, an unknown user's name or a right password included, is
// ErrSourceThrottled without bcrypt, while another address verifies at
// once and a credential verified before still passes from the throttled
// one. A token comes back after SourceBucketRefill.
func TestASourceGuessingAcrossUsersIsThrottledBeforeBcrypt(t *testing.T) {
	a, clock, reg := newTestAuthenticator(t)
	ctx := context.Background()
	manyUsers(t, a, 100)
	guesser, other := SourceOf("203.0.113.7:40000"), SourceOf("198.51.100.2:50000")
	_, err := a.Verify(ctx, other, "user099", "pw")
	require.NoError(t, err)
	runs := a.VerifyRuns()
	burst := a.cfg.SourceBucketBurst
	for i := range burst {
		_, err := a.Verify(ctx, guesser, fmt.Sprintf("user%03d", i), "guess")
		require.ErrorIs(t, err, ErrUnauthenticated, "guess %d", i)
	}
	require.Equal(t, uint64(burst), a.VerifyRuns()-runs, "one bcrypt run per token")
	for _, username := range []string{"user050", "user051", "nobody"} {
		_, err = a.Verify(ctx, guesser, username, "guess")
		require.ErrorIs(t, err, ErrSourceThrottled, username)
		require.ErrorIs(t, err, ErrThrottled, "a source throttled is throttled: the same 429")
	}
	_, err = a.Verify(ctx, guesser, "user052", "pw")
	require.ErrorIs(t, err, ErrSourceThrottled, "an empty source bucket refuses even a right password not verified yet")
	require.Equal(t, uint64(burst), a.VerifyRuns()-runs, "a throttled source costs no bcrypt")
	require.Equal(t, 4.0, attemptsCounted(a, "source_throttled"))
	require.Zero(t, attemptsCounted(a, "throttled"), "no user's bucket was empty")
	require.Equal(t, a.cfg.SourceBucketRefill, a.ThrottledFor(err))
	require.Equal(t, a.cfg.BucketRefill, a.ThrottledFor(ErrThrottled))

	_, err = a.Verify(ctx, guesser, "user099", "pw")
	require.NoError(t, err, "a credential verified before passes from the cache, whatever the source's bucket holds")
	_, err = a.Verify(ctx, other, "user053", "pw")
	require.NoError(t, err, "another address keeps its own bucket")
	require.Equal(t, 1.0, gaugeValue(t, reg, "narad_auth_sources_tracked"), "only the guesser's bucket is not full")

	clock.advance(a.cfg.SourceBucketRefill)
	_, err = a.Verify(ctx, guesser, "user054", "pw")
	require.NoError(t, err, "one token back after one refill period")
	_, err = a.Verify(ctx, guesser, "user055", "guess")
	require.ErrorIs(t, err, ErrUnauthenticated, "the success gave its token back")
	_, err = a.Verify(ctx, guesser, "user056", "guess")
	require.ErrorIs(t, err, ErrSourceThrottled)
}

// Unknown users' names cost no bcrypt, but they are guesses: each takes
// a token of its source, and an empty bucket answers them too.
func TestUnknownUsersSpendTheSourcesTokens(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	manyUsers(t, a, 1)
	for i := range a.cfg.SourceBucketBurst {
		_, err := a.Verify(ctx, testSource, fmt.Sprintf("ghost%d", i), "pw")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	_, err := a.Verify(ctx, testSource, "ghost-next", "pw")
	require.ErrorIs(t, err, ErrSourceThrottled)
	_, err = a.Verify(ctx, testSource, "user000", "pw")
	require.ErrorIs(t, err, ErrSourceThrottled)
	require.Zero(t, a.VerifyRuns())
}

// Only failed verifications spend a source's tokens: a user whose bucket
// is empty answers its further attempts with ErrThrottled at no cost to
// the source, so one client retrying one wrong password does not lock
// the other users of its address out.
func TestAUsersEmptyBucketCostsItsSourceNothing(t *testing.T) {
	a, clock, _ := newTestAuthenticator(t)
	ctx := context.Background()
	manyUsers(t, a, 2)
	for i := range a.cfg.BucketBurst {
		_, err := a.Verify(ctx, testSource, "user000", fmt.Sprintf("guess%d", i))
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	for i := range 3 * a.cfg.SourceBucketBurst {
		_, err := a.Verify(ctx, testSource, "user000", fmt.Sprintf("again%d", i))
		require.ErrorIs(t, err, ErrThrottled)
		require.NotErrorIs(t, err, ErrSourceThrottled)
	}
	a.mu.Lock()
	tokens := a.sources.tokens(testSource, clock.Now())
	a.mu.Unlock()
	require.InDelta(t, float64(a.cfg.SourceBucketBurst-a.cfg.BucketBurst), tokens, 1e-9)
	_, err := a.Verify(ctx, testSource, "user001", "pw")
	require.NoError(t, err)
}

// Concurrent new guesses from one address reserve their tokens before
// bcrypt: however many arrive at once, at most SourceBucketBurst run.
func TestConcurrentGuessesFromOneSourceRunBcryptAtMostTheBurst(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	manyUsers(t, a, 50) // 250 user tokens: the source's 20 are the bound
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			_, err := a.Verify(context.Background(), testSource, fmt.Sprintf("user%03d", i%50), fmt.Sprintf("guess%d", i))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	counts := map[error]int{}
	for err := range errs {
		counts[err]++
	}
	burst := a.cfg.SourceBucketBurst
	require.Equal(t, map[error]int{ErrUnauthenticated: burst, ErrSourceThrottled: 200 - burst}, counts)
	require.Equal(t, uint64(burst), a.VerifyRuns())
}

// The table of sources holds at most SourcesMax buckets, and the gauge
// says how many.
func TestSourceTableStaysBounded(t *testing.T) {
	a, _, reg := newTestAuthenticator(t)
	a.cfg.SourcesMax = 3
	a.sources = newSourceBuckets(a.cfg.SourceBucketBurst, a.cfg.SourceBucketRefill, a.cfg.SourcesMax)
	manyUsers(t, a, 1)
	for i := range 10 {
		_, err := a.Verify(context.Background(), sourceAt(i), "nobody", "pw")
		require.ErrorIs(t, err, ErrUnauthenticated, "a new address is never refused for want of room")
		require.LessOrEqual(t, a.sourcesTracked(), 3)
	}
	require.Equal(t, 3.0, gaugeValue(t, reg, "narad_auth_sources_tracked"))
}

// An address's own first logins, more than its burst at once and queued
// for bcrypt behind others' (many users behind one address after a
// restart, with bcrypt busy), never throttle it: a check takes its
// source's token with its bcrypt turn, not while it waits for one.
// Run in a bubble: the waits are on the bubble's clock.
func TestQueuedFirstLoginsOfOneSourceAreNotThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.BcryptCost, cfg.BcryptWaitMax = bcrypt.MinCost, time.Hour
		a, err := New(cfg, prometheus.NewRegistry())
		require.NoError(t, err)
		logins := 3 * cfg.SourceBucketBurst
		manyUsers(t, a, logins)
		for range cfg.BcryptConcurrencyMax { // every turn held, as by other runs
			a.bcryptTurns <- struct{}{}
		}
		errs := make(chan error, logins)
		for i := range logins {
			go func() {
				_, err := a.Verify(context.Background(), testSource, fmt.Sprintf("user%03d", i), "pw")
				errs <- err
			}()
		}
		synctest.Wait()
		require.Equal(t, int64(logins), a.bcryptWaiting.Load(), "every login waits for a turn")
		for range cfg.BcryptConcurrencyMax {
			<-a.bcryptTurns
		}
		for range logins {
			require.NoError(t, <-errs)
		}
		require.Zero(t, a.sourcesTracked(), "every success gave its token back")
	})
}
