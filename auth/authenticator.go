package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"
)

// Errors of Verify and HashPassword.
var (
	// ErrUnauthenticated: unknown user or wrong password (401).
	ErrUnauthenticated = errors.New("authentication required")
	// ErrThrottled: the user's bucket of attempts is empty (429).
	ErrThrottled = errors.New("too many failed authentication attempts")
	// ErrSourceThrottled: the bucket of attempts of the client's address
	// is empty (429); it is also ErrThrottled (errors.Is).
	ErrSourceThrottled = fmt.Errorf("%w from this address", ErrThrottled)
	// ErrUnavailable: the request ended while waiting for a bcrypt turn,
	// a verification waited Config.BcryptWaitMax for one, or a hash found
	// hashersMax requesters already hashing.
	ErrUnavailable = errors.New("authentication unavailable")
	// ErrNoUsersYet: the view holds no user at all (503): the node has not
	// published its users yet (it is starting), or the cluster's root user
	// is still being created. With security on a cluster always has its
	// root once seeded, so an empty view says nothing of the credential.
	ErrNoUsersYet = errors.New("no users known yet: the node is starting, or the root user is being created; retry")
	// ErrPasswordInvalid: a password to hash is empty or over 72 bytes.
	ErrPasswordInvalid = errors.New("password must have 1 to 72 bytes")
)

// credentialMAC is a keyed hash of a username and password: what the
// caches keep instead of the password.
type credentialMAC [sha256.Size]byte

// Authenticator verifies Basic credentials against the users the node
// published. Safe for concurrent use.
type Authenticator struct {
	// cfg is valid; never changed after New.
	cfg Config
	// macKey keys credentialMAC; random per process, never changed.
	macKey []byte
	// macs holds idle HMAC-SHA256 hashers keyed with macKey.
	macs sync.Pool
	// users is the current view; never nil after New.
	users atomic.Pointer[Users]
	// bcryptTurns holds a token per bcrypt run in progress; its capacity
	// is cfg.BcryptConcurrencyMax.
	bcryptTurns chan struct{}
	// hashTurns holds a token per hash waiting for or holding a turn of
	// bcryptTurns; its capacity is cfg.hashTurnsMax().
	hashTurns chan struct{}
	// verifyRuns counts the bcrypt comparisons run; only increases.
	verifyRuns atomic.Uint64
	// bcryptWaiting counts the bcrypt runs waiting for a turn now.
	bcryptWaiting atomic.Int64
	metrics       *metrics

	// mu guards the tables below.
	mu sync.Mutex
	// verified maps a user to its last verified credential; at most
	// cfg.VerifiedUsersMax entries.
	verified map[string]verifiedEntry
	// rejected maps a user to its recently failed credentials; at most
	// cfg.RejectedUsersMax users, cfg.RejectedPerUserMax each.
	rejected map[string][]rejectedEntry
	// buckets maps a user to its bucket of attempts; a user absent has a
	// full bucket. At most max(cfg.BucketsMax, users of the view)
	// entries (bucketsRoomLocked).
	buckets map[string]bucket
	// sources are the buckets of failed attempts of the client
	// addresses; at most cfg.SourcesMax of them.
	sources *sourceBuckets
	// flights are the bcrypt comparisons in progress, by credential and
	// source, so that identical concurrent attempts from one source share
	// one.
	flights map[flightKey]*flight
	// hashers maps a requester to the turn its hashes take one at a
	// time (hashing.go); an entry lives while a hash of its requester
	// holds or waits for that turn. At most hashersMax entries.
	hashers map[string]*hasher
}

// flightKey names a comparison: the credential, the password hash it is
// compared with, and the source it came from (whose token the comparison
// takes, so that a credential from another source is not refused for the
// failures of this one).
type flightKey struct {
	hash   string
	mac    credentialMAC
	source Source
}

// verifiedEntry is a credential that passed bcrypt against the user's
// password hash hash. It holds while the user keeps that hash: a change
// of another user, or of this user's grants, leaves it valid (grants are
// read from the current view at each request).
type verifiedEntry struct {
	hash string
	mac  credentialMAC
}

// rejectedEntry is a credential that failed bcrypt against the user's
// password hash hash, remembered until expires.
type rejectedEntry struct {
	hash    string
	mac     credentialMAC
	expires time.Time
}

// bucket holds tokens (≤ burst) as of at.
type bucket struct {
	tokens float64
	at     time.Time
}

// attempt is one credential check of a known user.
type attempt struct {
	// source is the client address the check came from.
	source   Source
	username string
	// hash is the user's password hash in the view the check started on.
	hash     []byte
	password string
	// mac is the keyed hash of username and password.
	mac credentialMAC
}

// flight is one bcrypt comparison; done closes once ok and err are set.
type flight struct {
	done chan struct{}
	ok   bool
	err  error
}

// New builds an authenticator with no users, registering its metrics
// with reg. cfg must pass Validate.
func New(cfg Config, reg prometheus.Registerer) (*Authenticator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	key := make([]byte, sha256.Size)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	a := &Authenticator{cfg: cfg, macKey: key, bcryptTurns: make(chan struct{}, cfg.BcryptConcurrencyMax),
		hashTurns: make(chan struct{}, cfg.hashTurnsMax()),
		verified:  map[string]verifiedEntry{}, rejected: map[string][]rejectedEntry{},
		buckets: map[string]bucket{}, flights: map[flightKey]*flight{}, hashers: map[string]*hasher{},
		sources: newSourceBuckets(cfg.SourceBucketBurst, cfg.SourceBucketRefill, cfg.SourcesMax)}
	a.macs.New = func() any { return hmac.New(sha256.New, key) }
	a.users.Store(NewUsers(0, nil))
	a.metrics = newMetrics(a, reg)
	return a, nil
}

// Publish replaces the users view; a view older than the current one is
// ignored. The tables forget the users the new view no longer holds.
func (a *Authenticator) Publish(users *Users) {
	for {
		current := a.users.Load()
		if users.version < current.version {
			return
		}
		if a.users.CompareAndSwap(current, users) {
			a.forgetDeletedUsers(users)
			return
		}
	}
}

// Users returns the current view.
func (a *Authenticator) Users() *Users { return a.users.Load() }

// Verify authenticates a Basic credential sent from source:
// ErrUnauthenticated, ErrThrottled (the user's bucket is empty, or, as
// ErrSourceThrottled, the source's), ErrUnavailable (ctx ended while
// waiting), ErrNoUsersYet, or the caller.
func (a *Authenticator) Verify(ctx context.Context, source Source, username, password string) (Identity, error) {
	users := a.users.Load()
	user, known := users.User(username)
	if !known && users.Len() == 0 {
		a.metrics.attempts.WithLabelValues("no_users").Inc()
		return Identity{}, ErrNoUsersYet
	}
	if !known {
		return Identity{}, a.failWithoutBcrypt(source, "unknown_user")
	}
	if len(password) > passwordBytesMax {
		// No password this long was ever set, and bcrypt compares only
		// the first 72 bytes: a wrong password that starts with the right
		// one would pass.
		return Identity{}, a.failWithoutBcrypt(source, "wrong_password")
	}
	identity := identityOf(user)
	ok, err := a.check(ctx, attempt{source: source, username: username, hash: user.PasswordHash,
		password: password, mac: a.mac(username, password)})
	if err != nil {
		return Identity{}, err
	}
	if !ok {
		return Identity{}, ErrUnauthenticated
	}
	return identity, nil
}

// failWithoutBcrypt answers a credential that fails with no bcrypt run
// (an unknown user, a password no user can have): it costs its source a
// token like any failure, and is ErrSourceThrottled once the source has
// none, so that a source guessing names learns nothing more.
func (a *Authenticator) failWithoutBcrypt(source Source, result string) error {
	a.mu.Lock()
	taken := a.sources.take(source, a.cfg.Now())
	a.mu.Unlock()
	if !taken {
		a.metrics.attempts.WithLabelValues("source_throttled").Inc()
		return ErrSourceThrottled
	}
	a.metrics.attempts.WithLabelValues(result).Inc()
	return ErrUnauthenticated
}

// check answers from the caches, or runs (or joins) a bcrypt comparison.
// The caches answer whatever the buckets hold: they cost nothing, and a
// verified credential must not be locked out by a stranger's failures.
func (a *Authenticator) check(ctx context.Context, at attempt) (bool, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	if entry, ok := a.verified[at.username]; ok && entry.hash == string(at.hash) && hmac.Equal(entry.mac[:], at.mac[:]) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("cached").Inc()
		return true, nil
	}
	if a.rejectedLocked(at.username, at.hash, at.mac, now) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("rejected_cached").Inc()
		return false, nil
	}
	key := at.flightKey()
	if f, joined := a.flights[key]; joined {
		a.mu.Unlock()
		return a.await(ctx, f)
	}
	// The source first: a throttled one waits for no turn and spends no
	// user's token. It takes its token only with its bcrypt turn
	// (takeSourceToken).
	if !a.sources.allows(at.source, now) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("source_throttled").Inc()
		return false, ErrSourceThrottled
	}
	if !a.takeLocked(at.username, now) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("throttled").Inc()
		return false, ErrThrottled
	}
	f := &flight{done: make(chan struct{})}
	a.flights[key] = f
	a.mu.Unlock()
	a.fly(ctx, f, at)
	return f.ok, f.err
}

func (at attempt) flightKey() flightKey {
	return flightKey{hash: string(at.hash), mac: at.mac, source: at.source}
}

// takeSourceToken takes the token of a bcrypt run from the bucket of the
// attempt's source, once the run has its turn: a token taken earlier,
// while waiting, would let a source's own first logins, queued behind
// others' (many users behind one address, after a restart), empty its
// bucket with no failure at all; taken now, a source holds at most
// BcryptConcurrencyMax of them in runs, while every run still needs one.
func (a *Authenticator) takeSourceToken(source Source) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sources.take(source, a.cfg.Now())
}

// await waits for another request's comparison of the same credential.
func (a *Authenticator) await(ctx context.Context, f *flight) (bool, error) {
	select {
	case <-f.done:
		return f.ok, f.err
	case <-ctx.Done():
		a.metrics.attempts.WithLabelValues("unavailable").Inc()
		return false, ErrUnavailable
	}
}

// fly runs the comparison of flight f, once a turn is free within
// Config.BcryptWaitMax, and records its outcome.
func (a *Authenticator) fly(ctx context.Context, f *flight, at attempt) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.BcryptWaitMax)
	defer cancel()
	err := a.withTurn(ctx, func() error {
		if !a.takeSourceToken(at.source) {
			return ErrSourceThrottled
		}
		a.countRun("verify")
		return bcrypt.CompareHashAndPassword(at.hash, []byte(at.password))
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.flights, at.flightKey())
	switch {
	case err == nil:
		f.ok = true
		a.refundLocked(at)
		a.rememberVerifiedLocked(at.username, verifiedEntry{hash: string(at.hash), mac: at.mac})
		a.metrics.attempts.WithLabelValues("verified").Inc()
	case errors.Is(err, ErrUnavailable), errors.Is(err, ErrSourceThrottled):
		// No comparison ran, and the source's token was not taken.
		f.err = err
		a.refundUserLocked(at.username, a.cfg.Now())
		a.metrics.attempts.WithLabelValues(unrunResult(err)).Inc()
	default:
		a.rememberRejectedLocked(at.username, rejectedEntry{hash: string(at.hash), mac: at.mac, expires: a.cfg.Now().Add(a.cfg.RejectedTTL)})
		a.metrics.attempts.WithLabelValues("wrong_password").Inc()
	}
	close(f.done)
}

// unrunResult is the narad_auth_attempts_total result of a check whose
// comparison did not run.
func unrunResult(err error) string {
	if errors.Is(err, ErrSourceThrottled) {
		return "source_throttled"
	}
	return "unavailable"
}

// withTurn runs f (a bcrypt run, which counts itself with countRun) once
// a turn is free; ErrUnavailable if ctx ends first.
func (a *Authenticator) withTurn(ctx context.Context, f func() error) error {
	a.bcryptWaiting.Add(1)
	select {
	case a.bcryptTurns <- struct{}{}:
		a.bcryptWaiting.Add(-1)
	case <-ctx.Done():
		a.bcryptWaiting.Add(-1)
		return ErrUnavailable
	}
	defer func() { <-a.bcryptTurns }()
	return f()
}

// countRun counts a bcrypt run of op (verify or hash).
func (a *Authenticator) countRun(op string) {
	a.metrics.bcryptRuns.WithLabelValues(op).Inc()
	if op == "verify" {
		a.verifyRuns.Add(1)
	}
}

// ThrottledFor is how long a check that failed with err (ErrThrottled or
// ErrSourceThrottled) waits for its next attempt: the time the bucket
// that refused it takes to regain one (the Retry-After of a 429).
func (a *Authenticator) ThrottledFor(err error) time.Duration {
	if errors.Is(err, ErrSourceThrottled) {
		return a.cfg.SourceBucketRefill
	}
	return a.cfg.BucketRefill
}

// VerifyRuns is the number of bcrypt comparisons run so far.
func (a *Authenticator) VerifyRuns() uint64 { return a.verifyRuns.Load() }

// mac is the keyed hash of a credential. The keyed hashers are reused
// (macs), since every request computes one.
func (a *Authenticator) mac(username, password string) credentialMAC {
	h := a.macs.Get().(hash.Hash)
	defer a.macs.Put(h)
	h.Reset()
	h.Write([]byte(username))
	h.Write([]byte{0})
	h.Write([]byte(password))
	var mac credentialMAC
	h.Sum(mac[:0])
	return mac
}
