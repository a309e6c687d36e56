package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
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
	// full bucket. At most cfg.BucketsMax entries.
	buckets map[string]bucket
	// flights are the bcrypt comparisons in progress, by credential, so
	// that identical concurrent attempts share one.
	flights map[flightKey]*flight
	// hashers maps a requester to the turn its hashes take one at a
	// time (hashing.go); an entry lives while a hash of its requester
	// holds or waits for that turn. At most hashersMax entries.
	hashers map[string]*hasher
}

// flightKey names a comparison: the credential and the password hash it
// is compared with.
type flightKey struct {
	hash string
	mac  credentialMAC
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
		buckets: map[string]bucket{}, flights: map[flightKey]*flight{}, hashers: map[string]*hasher{}}
	a.macs.New = func() any { return hmac.New(sha256.New, key) }
	a.users.Store(NewUsers(0, nil))
	a.metrics = newMetrics(a, reg)
	return a, nil
}

// Publish replaces the users view; a view older than the current one is
// ignored.
func (a *Authenticator) Publish(users *Users) {
	for {
		current := a.users.Load()
		if users.version < current.version || a.users.CompareAndSwap(current, users) {
			return
		}
	}
}

// Users returns the current view.
func (a *Authenticator) Users() *Users { return a.users.Load() }

// Verify authenticates a Basic credential: ErrUnauthenticated,
// ErrThrottled, ErrUnavailable (ctx ended while waiting), ErrNoUsersYet, or
// the caller.
func (a *Authenticator) Verify(ctx context.Context, username, password string) (Identity, error) {
	users := a.users.Load()
	user, known := users.User(username)
	if !known && users.Len() == 0 {
		a.metrics.attempts.WithLabelValues("no_users").Inc()
		return Identity{}, ErrNoUsersYet
	}
	if !known {
		a.metrics.attempts.WithLabelValues("unknown_user").Inc()
		return Identity{}, ErrUnauthenticated
	}
	if len(password) > passwordBytesMax {
		// No password this long was ever set, and bcrypt compares only
		// the first 72 bytes: a wrong password that starts with the right
		// one would pass.
		a.metrics.attempts.WithLabelValues("wrong_password").Inc()
		return Identity{}, ErrUnauthenticated
	}
	identity := Identity{Username: user.Username, Root: user.Root, Grants: user.Grants, CreatedAtMs: user.CreatedAtMs}
	mac := a.mac(username, password)
	ok, err := a.check(ctx, username, user.PasswordHash, password, mac)
	if err != nil {
		return Identity{}, err
	}
	if !ok {
		return Identity{}, ErrUnauthenticated
	}
	return identity, nil
}

// check answers from the caches, or runs (or joins) a bcrypt comparison.
func (a *Authenticator) check(ctx context.Context, username string, hash []byte, password string, mac credentialMAC) (bool, error) {
	now := a.cfg.Now()
	a.mu.Lock()
	if entry, ok := a.verified[username]; ok && entry.hash == string(hash) && hmac.Equal(entry.mac[:], mac[:]) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("cached").Inc()
		return true, nil
	}
	if a.rejectedLocked(username, hash, mac, now) {
		a.mu.Unlock()
		a.metrics.attempts.WithLabelValues("rejected_cached").Inc()
		return false, nil
	}
	key := flightKey{hash: string(hash), mac: mac}
	f, joined := a.flights[key]
	if !joined {
		if !a.takeLocked(username, now) {
			a.mu.Unlock()
			a.metrics.attempts.WithLabelValues("throttled").Inc()
			return false, ErrThrottled
		}
		f = &flight{done: make(chan struct{})}
		a.flights[key] = f
	}
	a.mu.Unlock()
	if joined {
		return a.await(ctx, f)
	}
	a.fly(ctx, f, username, hash, password, mac)
	return f.ok, f.err
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
func (a *Authenticator) fly(ctx context.Context, f *flight, username string, hash []byte, password string, mac credentialMAC) {
	ctx, cancel := context.WithTimeout(ctx, a.cfg.BcryptWaitMax)
	defer cancel()
	err := a.withTurn(ctx, "verify", func() error {
		return bcrypt.CompareHashAndPassword(hash, []byte(password))
	})
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.flights, flightKey{hash: string(hash), mac: mac})
	switch {
	case err == nil:
		f.ok = true
		a.refundLocked(username)
		a.rememberVerifiedLocked(username, verifiedEntry{hash: string(hash), mac: mac})
		a.metrics.attempts.WithLabelValues("verified").Inc()
	case errors.Is(err, ErrUnavailable):
		f.err = err
		a.refundLocked(username)
		a.metrics.attempts.WithLabelValues("unavailable").Inc()
	default:
		a.rememberRejectedLocked(username, rejectedEntry{hash: string(hash), mac: mac, expires: a.cfg.Now().Add(a.cfg.RejectedTTL)})
		a.metrics.attempts.WithLabelValues("wrong_password").Inc()
	}
	close(f.done)
}

// withTurn runs f (a bcrypt run) once a turn is free; ErrUnavailable if
// ctx ends first.
func (a *Authenticator) withTurn(ctx context.Context, op string, f func() error) error {
	a.bcryptWaiting.Add(1)
	select {
	case a.bcryptTurns <- struct{}{}:
		a.bcryptWaiting.Add(-1)
	case <-ctx.Done():
		a.bcryptWaiting.Add(-1)
		return ErrUnavailable
	}
	defer func() { <-a.bcryptTurns }()
	a.metrics.bcryptRuns.WithLabelValues(op).Inc()
	if op == "verify" {
		a.verifyRuns.Add(1)
	}
	return f()
}

// ThrottledFor is how long a throttled user waits for its next attempt:
// the time its bucket takes to regain one (the Retry-After of a 429).
func (a *Authenticator) ThrottledFor() time.Duration { return a.cfg.BucketRefill }

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
