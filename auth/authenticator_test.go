package auth

import (
	"context"
	"fmt"
	"slices"
	"strings"
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

// testSource is the client address of the tests' checks.
var testSource = SourceOf("192.0.2.1:1234")

// fakeClock is a settable clock for the buckets and the negative cache.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestAuthenticator(t *testing.T) (*Authenticator, *fakeClock, *prometheus.Registry) {
	t.Helper()
	clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
	cfg := DefaultConfig()
	cfg.BcryptCost, cfg.Now = bcrypt.MinCost, clock.Now
	reg := prometheus.NewRegistry()
	a, err := New(cfg, reg)
	require.NoError(t, err)
	return a, clock, reg
}

func hashed(t *testing.T, a *Authenticator, password string) []byte {
	t.Helper()
	hash, err := a.HashPassword(context.Background(), "", password)
	require.NoError(t, err)
	return hash
}

// bcryptRuns reads narad_auth_bcrypt_runs_total for op (verify, hash).
func bcryptRuns(a *Authenticator, op string) float64 {
	var m dto.Metric
	if err := a.metrics.bcryptRuns.WithLabelValues(op).Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

// seriesCount counts the series of the named metric families.
func seriesCount(t *testing.T, reg *prometheus.Registry, names ...string) int {
	t.Helper()
	families, err := reg.Gather()
	require.NoError(t, err)
	count := 0
	for _, family := range families {
		if slices.Contains(names, family.GetName()) {
			count += len(family.GetMetric())
		}
	}
	return count
}

func TestVerifyCachesAndInvalidatesOnAPasswordChange(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	grants := []meta.Grant{{Action: ActionProduce, Patterns: []string{"o*"}}}
	a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw1"), Grants: grants}}))

	id, err := a.Verify(ctx, testSource, "ann", "pw1")
	require.NoError(t, err)
	require.Equal(t, "ann", id.Username)
	require.Equal(t, grants, id.Grants)
	require.False(t, id.Root)
	_, err = a.Verify(ctx, testSource, "ann", "pw1")
	require.NoError(t, err)
	require.Equal(t, 1.0, bcryptRuns(a, "verify"), "the second check is answered from the cache")

	_, err = a.Verify(ctx, testSource, "bob", "pw1")
	require.ErrorIs(t, err, ErrUnauthenticated)
	require.Equal(t, 1.0, bcryptRuns(a, "verify"), "an unknown user costs no bcrypt")

	for range 3 {
		_, err = a.Verify(ctx, testSource, "ann", "wrong")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	require.Equal(t, 2.0, bcryptRuns(a, "verify"), "a repeated wrong password is answered from the negative cache")

	a.Publish(NewUsers(2, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw2")}}))
	_, err = a.Verify(ctx, testSource, "ann", "pw1")
	require.ErrorIs(t, err, ErrUnauthenticated, "the old password fails on the next request after a change")
	id, err = a.Verify(ctx, testSource, "ann", "pw2")
	require.NoError(t, err)
	require.Empty(t, id.Grants, "the grants of the new version")
	a.Publish(NewUsers(3, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw2")}}))
	_, err = a.Verify(ctx, testSource, "ann", "pw2")
	require.NoError(t, err, "the user deleted and created again with the same password: a new hash")
	require.Equal(t, 5.0, bcryptRuns(a, "verify"), "a new hash is compared again")

	a.Publish(NewUsers(1, nil))
	require.Equal(t, uint64(3), a.Users().Version(), "an older view is ignored")
}

// Another user's change leaves a verified credential cached: a root whose
// bucket a stranger emptied with wrong guesses still gets in after any
// user changed its own password, and a grant edit counts at once.
func TestAnotherUsersChangeKeepsAVerifiedCredential(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	rootHash, annHash := hashed(t, a, "root-pw"), hashed(t, a, "ann-pw")
	grants := []meta.Grant{{Action: ActionProduce, Patterns: []string{"o*"}}}
	a.Publish(NewUsers(1, []meta.User{{Username: "admin", PasswordHash: rootHash, Root: true},
		{Username: "ann", PasswordHash: annHash}}))
	_, err := a.Verify(ctx, testSource, "admin", "root-pw")
	require.NoError(t, err)
	for i := range defaultBucketBurst {
		_, err := a.Verify(ctx, testSource, "admin", "guess-"+string(rune('a'+i)))
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	a.Publish(NewUsers(2, []meta.User{{Username: "admin", PasswordHash: rootHash, Root: true},
		{Username: "ann", PasswordHash: hashed(t, a, "ann-pw2"), Grants: grants}}))
	id, err := a.Verify(ctx, testSource, "admin", "root-pw")
	require.NoError(t, err, "ann's change did not send the root back to an empty bucket")
	require.True(t, id.Root)
	a.Publish(NewUsers(3, []meta.User{{Username: "admin", PasswordHash: rootHash, Root: true, Grants: grants},
		{Username: "ann", PasswordHash: hashed(t, a, "ann-pw2"), Grants: grants}}))
	id, err = a.Verify(ctx, testSource, "admin", "root-pw")
	require.NoError(t, err)
	require.Equal(t, grants, id.Grants, "grants come from the current view")
}

// TestAPasswordPastTheBcryptLimitNeverVerifies: bcrypt compares only the
// first 72 bytes, so a wrong password that starts with a 72-byte right
// one would pass; no password that long can be set, and none verifies.
// Before any user is known (a node starting, or a cluster whose root is
// being created) a credential is neither right nor wrong: ErrNoUsersYet
// (503), not ErrUnauthenticated (401, which a client does not retry).
func TestNoUsersYetIsNotAWrongCredential(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	_, err := a.Verify(ctx, testSource, "admin", "secret")
	require.ErrorIs(t, err, ErrNoUsersYet)
	a.Publish(NewUsers(1, []meta.User{{Username: "admin", PasswordHash: hashed(t, a, "secret"), Root: true}}))
	_, err = a.Verify(ctx, testSource, "admin", "secret")
	require.NoError(t, err)
	_, err = a.Verify(ctx, testSource, "nobody", "secret")
	require.ErrorIs(t, err, ErrUnauthenticated, "once users are known, an unknown one is a wrong credential")
}

func TestAPasswordPastTheBcryptLimitNeverVerifies(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	password := strings.Repeat("p", passwordBytesMax)
	a.Publish(NewUsers(1, []meta.User{{Username: "carol", PasswordHash: hashed(t, a, password)}}))
	_, err := a.Verify(ctx, testSource, "carol", password)
	require.NoError(t, err, "the longest password verifies")
	_, err = a.Verify(ctx, testSource, "carol", password+"-not-the-password")
	require.ErrorIs(t, err, ErrUnauthenticated)
	_, err = a.Verify(ctx, testSource, "carol", password+"p")
	require.ErrorIs(t, err, ErrUnauthenticated)
}

func TestBucketThrottlesAndRefills(t *testing.T) {
	a, clock, _ := newTestAuthenticator(t)
	ctx := context.Background()
	a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "right")}}))
	for i := range defaultBucketBurst {
		_, err := a.Verify(ctx, testSource, "ann", "wrong-"+string(rune('a'+i)))
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	_, err := a.Verify(ctx, testSource, "ann", "right")
	require.ErrorIs(t, err, ErrThrottled, "an empty bucket refuses even the right password")
	clock.advance(defaultBucketRefill)
	_, err = a.Verify(ctx, testSource, "ann", "right")
	require.NoError(t, err, "one token back after one refill period")
	_, err = a.Verify(ctx, testSource, "ann", "wrong-z")
	require.ErrorIs(t, err, ErrUnauthenticated, "the success gave its token back")
}

func TestTablesStayBounded(t *testing.T) {
	a, _, reg := newTestAuthenticator(t)
	a.cfg.VerifiedUsersMax, a.cfg.RejectedUsersMax, a.cfg.BucketsMax = 2, 2, 2
	ctx := context.Background()
	hash := hashed(t, a, "pw")
	var users []meta.User
	for _, name := range []string{"u1", "u2", "u3", "u4"} {
		users = append(users, meta.User{Username: name, PasswordHash: hash})
	}
	a.Publish(NewUsers(1, users))
	for _, user := range users {
		_, err := a.Verify(ctx, testSource, user.Username, "pw")
		require.NoError(t, err)
	}
	for _, user := range users {
		_, err := a.Verify(ctx, testSource, user.Username, "nope")
		require.ErrorIs(t, err, ErrUnauthenticated, "a user past BucketsMax still gets a bucket")
	}
	verified, rejected, buckets, _, bucketsRoom := a.tableSizes()
	require.LessOrEqual(t, verified, 2)
	require.LessOrEqual(t, rejected, 2)
	require.Equal(t, 4, buckets, "one bucket per user of the view")
	require.Equal(t, 4, bucketsRoom)
	require.Equal(t, 12, seriesCount(t, reg, "narad_auth_table_entries", "narad_auth_table_entries_max"), "six tables, each with its size and its bound")
}

// Users created and deleted in turn leave nothing in the tables: a view
// that no longer holds a user drops its verified and rejected credentials
// and its bucket at once (they filled the tables to their bounds before),
// and keeps those of the users it still holds.
func TestADeletedUsersEntriesGoWithIt(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	ctx := context.Background()
	hash := hashed(t, a, "pw")
	ann, bob := meta.User{Username: "ann", PasswordHash: hash}, meta.User{Username: "bob", PasswordHash: hash}
	a.Publish(NewUsers(1, []meta.User{ann, bob}))
	for _, name := range []string{"ann", "bob"} {
		_, err := a.Verify(ctx, testSource, name, "pw")
		require.NoError(t, err)
		_, err = a.Verify(ctx, testSource, name, "nope")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	verified, rejected, buckets, _, _ := a.tableSizes()
	require.Equal(t, []int{2, 2, 2}, []int{verified, rejected, buckets})

	a.Publish(NewUsers(2, []meta.User{ann}))
	verified, rejected, buckets, _, _ = a.tableSizes()
	require.Equal(t, []int{1, 1, 1}, []int{verified, rejected, buckets}, "bob's entries went, ann's stay")
	_, err := a.Verify(ctx, testSource, "ann", "pw")
	require.NoError(t, err)
	require.Equal(t, 4.0, bcryptRuns(a, "verify"), "ann's check is still answered from the cache")

	a.Publish(NewUsers(3, nil))
	verified, rejected, buckets, _, _ = a.tableSizes()
	require.Equal(t, []int{0, 0, 0}, []int{verified, rejected, buckets})
}

// External audit finding: with BucketsMax users holding a bucket that
// was not full, every other user's uncached check, the right password
// included, was refused with 429. A user of the view now always finds
// room; no bucket that is not full is dropped to make it (a victim's
// empty bucket stays empty however many other names fail); and the
// buckets of deleted users go when room is needed.
func TestEveryUserFindsABucketAndNoneIsResetForRoom(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	a.cfg.BucketsMax = 2
	ctx := context.Background()
	hash := hashed(t, a, "pw")
	view := func(version uint64, names ...string) {
		var users []meta.User
		for _, name := range names {
			users = append(users, meta.User{Username: name, PasswordHash: hash})
		}
		a.Publish(NewUsers(version, users))
	}
	view(1, "u1", "u2", "u3", "u4", "u5")
	for i := range defaultBucketBurst {
		_, err := a.Verify(ctx, testSource, "u1", fmt.Sprint("guess-", i))
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	for _, name := range []string{"u2", "u3"} {
		_, err := a.Verify(ctx, testSource, name, "nope")
		require.ErrorIs(t, err, ErrUnauthenticated)
	}
	_, err := a.Verify(ctx, testSource, "u4", "pw")
	require.NoError(t, err, "u4's right password, with BucketsMax buckets not full")
	_, err = a.Verify(ctx, testSource, "u1", "pw")
	require.ErrorIs(t, err, ErrThrottled, "u1's empty bucket was not dropped to make room")

	view(2, "u4", "u5")
	_, err = a.Verify(ctx, testSource, "u5", "nope")
	require.ErrorIs(t, err, ErrUnauthenticated)
	_, _, buckets, _, bucketsRoom := a.tableSizes()
	require.Equal(t, 1, buckets, "the deleted users' buckets went to make room")
	require.Equal(t, 2, bucketsRoom)
}

// TestHashesNeverHoldEveryBcryptTurn: while hashes hold their share of
// the turns (a loop of password changes), a further hash waits for one
// of them and gives up with its request, and a verification still runs
// at once on the turns left.
func TestHashesNeverHoldEveryBcryptTurn(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw")}}))
	require.Equal(t, 2, a.cfg.hashTurnsMax(), "half of the default 4 turns")
	for range a.cfg.hashTurnsMax() { // as two hashes in progress hold them
		a.hashTurns <- struct{}{}
		a.bcryptTurns <- struct{}{}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := a.HashPassword(ctx, "bob", "another")
	require.ErrorIs(t, err, ErrUnavailable, "a third hash waits for the hashes' share, not for the free turns")

	_, err = a.Verify(context.Background(), testSource, "ann", "pw")
	require.NoError(t, err, "a verification runs on the turns the hashes cannot take")
	require.Equal(t, 1.0, bcryptRuns(a, "verify"))
}

// TestOneRequestersHashesRunOneAtATime: while a hash of ann runs (one of
// her loop of password changes, holding her turn and one of the two hash
// turns), her next one waits for her turn holding no hash turn, so bob's
// hash takes the other one at once; hers gives up with its request. The
// table of requesters empties after them and is bounded.
func TestOneRequestersHashesRunOneAtATime(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	require.Equal(t, 2, a.cfg.hashTurnsMax())
	running, err := a.joinHasher("ann") // as her first hash, running
	require.NoError(t, err)
	running.turn <- struct{}{}
	a.hashTurns <- struct{}{}

	ctx, cancel := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := a.HashPassword(ctx, "ann", "second")
		second <- err
	}()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return running.requests == 2
	}, 5*time.Second, time.Millisecond, "ann's second hash joins her turn")
	time.Sleep(20 * time.Millisecond) // for it to reach its wait, whichever it is
	bobs, cancelBob := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelBob()
	hash, err := a.HashPassword(bobs, "bob", "his")
	require.NoError(t, err, "bob's hash takes the hash turn ann's waiting one does not hold")
	require.NoError(t, bcrypt.CompareHashAndPassword(hash, []byte("his")))
	require.Len(t, a.hashTurns, 1, "ann's waiting hash holds no hash turn")
	cancel()
	require.ErrorIs(t, <-second, ErrUnavailable, "ann's second hash waited for her first")
	require.Equal(t, 1.0, bcryptRuns(a, "hash"), "only bob's ran")
	_, _, _, hashers, _ := a.tableSizes()
	require.Equal(t, 1, hashers, "only ann's running hash is left")

	<-a.hashTurns
	<-running.turn
	a.leaveHasher("ann", running)
	_, err = a.HashPassword(context.Background(), "ann", "second")
	require.NoError(t, err, "ann's next hash runs once her first is done")
	_, _, _, hashers, _ = a.tableSizes()
	require.Zero(t, hashers)

	for i := range hashersMax {
		_, err := a.joinHasher(fmt.Sprintf("user%d", i))
		require.NoError(t, err)
	}
	_, err = a.HashPassword(context.Background(), "one-more", "pw")
	require.ErrorIs(t, err, ErrUnavailable, "past hashersMax requesters a hash is refused")
	_, _, _, hashers, _ = a.tableSizes()
	require.Equal(t, hashersMax, hashers)
}

func TestHashPasswordBounds(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	_, err := a.HashPassword(context.Background(), "ann", "")
	require.ErrorIs(t, err, ErrPasswordInvalid)
	_, err = a.HashPassword(context.Background(), "ann", string(make([]byte, passwordBytesMax+1)))
	require.ErrorIs(t, err, ErrPasswordInvalid)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range cap(a.bcryptTurns) {
		a.bcryptTurns <- struct{}{}
	}
	_, err = a.HashPassword(ctx, "ann", "pw")
	require.ErrorIs(t, err, ErrUnavailable, "no bcrypt turn before the request ended")
}

// TestConcurrentIdenticalAttemptsShareOneBcrypt: many requests with the
// same new credential run bcrypt once (a shared flight, then the cache).
func TestConcurrentIdenticalAttemptsShareOneBcrypt(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw")}}))
	var wg sync.WaitGroup
	failures := make(chan error, 20)
	for range 20 {
		wg.Go(func() {
			if _, err := a.Verify(context.Background(), testSource, "ann", "pw"); err != nil {
				failures <- err
			}
		})
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		require.NoError(t, err)
	}
	require.Equal(t, uint64(1), a.VerifyRuns())
}

// A verification waits at most BcryptWaitMax for a bcrypt turn, then is
// ErrUnavailable (503, retry) with its token given back, and the waiting
// runs show in narad_auth_bcrypt_waiting. Without the bound, failed
// attempts at many users' names (five each before their buckets empty)
// queued ahead of another user's first request, which waited until its
// client gave up: with the bad attempts of 50 users' names queued, a
// first request waited 1.9 s, and 10,000 users make such a queue minutes
// long. Run in a bubble: the wait is on the bubble's clock.
func TestAVerificationWaitsForATurnAtMostItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clock := &fakeClock{now: time.Unix(1_700_000_000, 0)}
		cfg := DefaultConfig()
		cfg.BcryptCost, cfg.Now, cfg.BcryptWaitMax = bcrypt.MinCost, clock.Now, time.Second
		a, err := New(cfg, prometheus.NewRegistry())
		require.NoError(t, err)
		a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, "pw")}}))
		for range cfg.BcryptConcurrencyMax { // every turn held, as by runs that do not end
			a.bcryptTurns <- struct{}{}
		}
		done := make(chan error, 1)
		go func() {
			_, err := a.Verify(context.Background(), testSource, "ann", "pw")
			done <- err
		}()
		synctest.Wait()
		require.Equal(t, int64(1), a.bcryptWaiting.Load(), "the verification waits for a turn")
		start := time.Now()
		require.ErrorIs(t, <-done, ErrUnavailable, "no turn came within the bound")
		require.Equal(t, cfg.BcryptWaitMax, time.Since(start), "it waited the bound, no longer")
		require.Zero(t, a.bcryptWaiting.Load())
		a.mu.Lock()
		_, spent := a.buckets["ann"]
		a.mu.Unlock()
		require.False(t, spent, "the attempt's token went back: ann's bucket is full")
		require.Zero(t, a.sourcesTracked(), "and so did its source's")
		for range cfg.BcryptConcurrencyMax {
			<-a.bcryptTurns
		}
		_, err = a.Verify(context.Background(), testSource, "ann", "pw")
		require.NoError(t, err, "with a turn free the same credential verifies")
	})
}

// Current tells whether a verified credential still holds in the users
// view published now: not once its user is deleted, created again, or
// given another password; with a grant change it holds, with the new
// grants.
func TestCurrentFollowsTheUsersPublishedSinceAVerify(t *testing.T) {
	a, _, _ := newTestAuthenticator(t)
	produce := []meta.Grant{{Action: ActionProduce, Patterns: []string{"o*"}}}
	ann := meta.User{Username: "ann", PasswordHash: hashed(t, a, "pw1"), Grants: produce, CreatedAtMs: 10}
	a.Publish(NewUsers(1, []meta.User{ann}))
	id, err := a.Verify(context.Background(), testSource, "ann", "pw1")
	require.NoError(t, err)
	current, holds := a.Current(id)
	require.True(t, holds)
	require.Equal(t, produce, current.Grants)

	regranted := ann
	regranted.Grants = nil
	a.Publish(NewUsers(2, []meta.User{regranted}))
	current, holds = a.Current(id)
	require.True(t, holds, "a grant change leaves the credential valid")
	require.False(t, current.Allowed(ActionProduce, "orders"), "with the grants of now")

	rehashed := ann
	rehashed.PasswordHash = hashed(t, a, "pw2")
	a.Publish(NewUsers(3, []meta.User{rehashed}))
	_, holds = a.Current(id)
	require.False(t, holds, "another password")

	recreated := ann
	recreated.CreatedAtMs = 20
	a.Publish(NewUsers(4, []meta.User{recreated}))
	_, holds = a.Current(id)
	require.False(t, holds, "a namesake created after a delete")

	a.Publish(NewUsers(5, nil))
	_, holds = a.Current(id)
	require.False(t, holds, "deleted")
}

// What docs/api.md#authentication says of a user locked out by another's
// wrong passwords (external audit finding 3): the right password is 429,
// from any address, unless this node cached that credential (then it
// passes from any address); one new wrong password per refill keeps the
// lock; a password change does not end it; the attempts stopping does,
// after one refill.
func TestALockedOutUserPassesOnlyFromTheCache(t *testing.T) {
	a, clock, _ := newTestAuthenticator(t)
	ctx := context.Background()
	attacker, other := SourceOf("198.51.100.7:1"), SourceOf("203.0.113.9:1")
	users := func(version uint64, password string) *Users {
		return NewUsers(version, []meta.User{{Username: "ann", PasswordHash: hashed(t, a, password)}})
	}
	a.Publish(users(1, "pw"))
	lock := func(label string) {
		for i := range defaultBucketBurst {
			_, err := a.Verify(ctx, attacker, "ann", fmt.Sprint(label, i))
			require.ErrorIs(t, err, ErrUnauthenticated)
		}
	}
	lock("guess-")
	for round := range 3 {
		clock.advance(defaultBucketRefill)
		_, err := a.Verify(ctx, attacker, "ann", fmt.Sprint("again-", round))
		require.ErrorIs(t, err, ErrUnauthenticated, "one new wrong password per refill")
		for _, source := range []Source{testSource, other} {
			_, err = a.Verify(ctx, source, "ann", "pw")
			require.ErrorIs(t, err, ErrThrottled, "the right password, not cached")
		}
	}
	a.Publish(users(2, "pw2"))
	_, err := a.Verify(ctx, testSource, "ann", "pw2")
	require.ErrorIs(t, err, ErrThrottled, "a password change does not end the lock")
	clock.advance(defaultBucketRefill)
	_, err = a.Verify(ctx, testSource, "ann", "pw2")
	require.NoError(t, err, "a refill after the attempts stop")

	clock.advance(time.Duration(defaultBucketBurst) * defaultBucketRefill)
	lock("later-")
	for _, source := range []Source{testSource, other} {
		_, err = a.Verify(ctx, source, "ann", "pw2")
		require.NoError(t, err, "a cached credential passes the lock, from any address")
	}
	a.Publish(users(3, "pw3"))
	_, err = a.Verify(ctx, testSource, "ann", "pw3")
	require.ErrorIs(t, err, ErrThrottled, "a password change drops the cached credential")
}
