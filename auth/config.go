package auth

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Defaults of Config (docs/api.md#authentication).
const (
	defaultBcryptCost           = bcrypt.DefaultCost
	defaultBcryptConcurrencyMax = 4
	defaultVerifiedUsersMax     = 4096
	defaultRejectedPerUserMax   = 16
	defaultRejectedUsersMax     = 4096
	defaultRejectedTTL          = 60 * time.Second
	defaultBucketsMax           = 4096
	defaultBucketBurst          = 5
	defaultBucketRefill         = 12 * time.Second
	defaultBcryptWaitMax        = 5 * time.Second
	defaultSourcesMax           = 16384
	defaultSourceBucketBurst    = 20
	defaultSourceBucketRefill   = 3 * time.Second
	// hashersMax bounds the requesters with a hash running or waiting
	// (Authenticator.hashers), each holding a request open; past it a
	// hash is refused (ErrUnavailable, 503) rather than the table grown.
	hashersMax = 1024
	// passwordBytesMax is bcrypt's own limit: it refuses longer input.
	passwordBytesMax = 72
)

// Config bounds an Authenticator. Start from DefaultConfig.
type Config struct {
	// BcryptCost is the cost of the hashes HashPassword makes.
	BcryptCost int
	// BcryptConcurrencyMax bounds the bcrypt runs (verify or hash) of the
	// process at any moment; more wait their turn. Hashes hold at most
	// hashTurnsMax of them.
	BcryptConcurrencyMax int
	// VerifiedUsersMax bounds the users with a cached verified credential.
	VerifiedUsersMax int
	// RejectedPerUserMax bounds the failed credentials remembered per
	// user; RejectedUsersMax the users with any; RejectedTTL how long one
	// is remembered.
	RejectedPerUserMax int
	RejectedUsersMax   int
	RejectedTTL        time.Duration
	// BucketsMax bounds the users with a token bucket that is not full,
	// or the users of the view when there are more: a bucket is a known
	// user's, one each, so a user's check is never refused for want of
	// room, and no bucket that is not full is dropped to make some.
	BucketsMax int
	// BucketBurst is the size of a user's bucket of bcrypt attempts;
	// BucketRefill the time to regain one token.
	BucketBurst  int
	BucketRefill time.Duration
	// BcryptWaitMax bounds how long a verification waits for a bcrypt
	// turn: past it the check is ErrUnavailable (503, retry) and its
	// token goes back to the user's bucket. Without it, failed attempts
	// at many users' names queued ahead of a user's first request, which
	// waited until its client gave up.
	BcryptWaitMax time.Duration
	// SourceBucketBurst is the size of a client address's bucket of
	// failed attempts (Source), checked before any bcrypt work;
	// SourceBucketRefill the time to regain one. Without it one address
	// guessing at thousands of users' names, each with a full bucket of
	// its own, kept every bcrypt turn busy, and other users' first
	// requests waited BcryptWaitMax for a 503. The burst is larger than a
	// user's, since one address may hold many users (a NAT, a proxy).
	SourceBucketBurst  int
	SourceBucketRefill time.Duration
	// SourcesMax bounds the addresses with a bucket that is not full. A
	// new address past it takes the place of the fullest bucket (the one
	// that failed least lately): the table never grows, and a new address
	// is never refused for want of room.
	SourcesMax int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// DefaultConfig returns the bounds of docs/api.md#authentication.
func DefaultConfig() Config {
	return Config{
		BcryptCost: defaultBcryptCost, BcryptConcurrencyMax: defaultBcryptConcurrencyMax,
		VerifiedUsersMax: defaultVerifiedUsersMax, RejectedPerUserMax: defaultRejectedPerUserMax,
		RejectedUsersMax: defaultRejectedUsersMax, RejectedTTL: defaultRejectedTTL,
		BucketsMax: defaultBucketsMax, BucketBurst: defaultBucketBurst, BucketRefill: defaultBucketRefill,
		BcryptWaitMax:     defaultBcryptWaitMax,
		SourceBucketBurst: defaultSourceBucketBurst, SourceBucketRefill: defaultSourceBucketRefill, SourcesMax: defaultSourcesMax,
	}
}

// Validate reports every problem of the configuration at once.
func (c Config) Validate() error {
	var problems []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			problems = append(problems, fmt.Errorf(format, args...))
		}
	}
	check(c.BcryptCost >= bcrypt.MinCost && c.BcryptCost <= bcrypt.MaxCost, "bcrypt cost %d outside [%d, %d]", c.BcryptCost, bcrypt.MinCost, bcrypt.MaxCost)
	check(c.BcryptConcurrencyMax > 0, "bcrypt concurrency max %d must be > 0", c.BcryptConcurrencyMax)
	check(c.VerifiedUsersMax > 0, "verified users max %d must be > 0", c.VerifiedUsersMax)
	check(c.RejectedPerUserMax > 0 && c.RejectedUsersMax > 0, "rejected bounds %d per user, %d users must be > 0", c.RejectedPerUserMax, c.RejectedUsersMax)
	check(c.RejectedTTL > 0, "rejected ttl %v must be > 0", c.RejectedTTL)
	check(c.BucketsMax > 0 && c.BucketBurst > 0 && c.BucketRefill > 0, "bucket bounds (%d buckets, burst %d, refill %v) must be > 0", c.BucketsMax, c.BucketBurst, c.BucketRefill)
	check(c.BcryptWaitMax > 0, "bcrypt wait max %v must be > 0", c.BcryptWaitMax)
	check(c.SourcesMax > 0 && c.SourceBucketBurst > 0 && c.SourceBucketRefill > 0, "source bucket bounds (%d sources, burst %d, refill %v) must be > 0", c.SourcesMax, c.SourceBucketBurst, c.SourceBucketRefill)
	return errors.Join(problems...)
}

// hashTurnsMax bounds the bcrypt turns that hashes (password changes and
// user creations) hold at once: half of them, at least one. A user may
// change its own password as often as it likes, so without it a loop of
// changes could hold every turn, and other users' first requests would
// wait for a verification until they gave up (503); and since one
// requester's hashes run one at a time (hashing.go), such a loop holds
// one of these, not all.
func (c Config) hashTurnsMax() int { return max(1, c.BcryptConcurrencyMax/2) }
