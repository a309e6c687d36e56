package auth

import (
	"crypto/hmac"
	"slices"
	"time"
)

// rejectedLocked reports whether the credential failed recently against
// this password hash. a.mu is held.
func (a *Authenticator) rejectedLocked(username string, hash []byte, mac credentialMAC, now time.Time) bool {
	return slices.ContainsFunc(a.rejected[username], func(e rejectedEntry) bool {
		return e.hash == string(hash) && now.Before(e.expires) && hmac.Equal(e.mac[:], mac[:])
	})
}

// rememberVerifiedLocked caches a verified credential, making room by
// dropping another user's entry when the table is full. a.mu is held.
func (a *Authenticator) rememberVerifiedLocked(username string, entry verifiedEntry) {
	if _, present := a.verified[username]; !present && len(a.verified) >= a.cfg.VerifiedUsersMax {
		for other := range a.verified {
			delete(a.verified, other)
			break
		}
	}
	a.verified[username] = entry
}

// rememberRejectedLocked adds a failed credential, dropping expired and
// stale ones of the user, then the oldest past RejectedPerUserMax; when
// the table holds RejectedUsersMax other users it first drops one.
func (a *Authenticator) rememberRejectedLocked(username string, entry rejectedEntry) {
	now := a.cfg.Now()
	entries := slices.DeleteFunc(a.rejected[username], func(e rejectedEntry) bool {
		return e.hash != entry.hash || !now.Before(e.expires)
	})
	if len(entries) == 0 && len(a.rejected) >= a.cfg.RejectedUsersMax {
		if _, present := a.rejected[username]; !present {
			for other := range a.rejected {
				delete(a.rejected, other)
				break
			}
		}
	}
	entries = append(entries, entry)
	if len(entries) > a.cfg.RejectedPerUserMax {
		entries = slices.Delete(entries, 0, len(entries)-a.cfg.RejectedPerUserMax)
	}
	a.rejected[username] = entries
}

// takeLocked takes a token from the user's bucket; false when it is
// empty, or when BucketsMax users already have a bucket that is not full
// (a limit reached is a refusal, never growth). a.mu is held.
func (a *Authenticator) takeLocked(username string, now time.Time) bool {
	b, present := a.buckets[username]
	if !present {
		if len(a.buckets) >= a.cfg.BucketsMax {
			a.pruneBucketsLocked(now)
		}
		if len(a.buckets) >= a.cfg.BucketsMax {
			return false
		}
		b = bucket{tokens: float64(a.cfg.BucketBurst), at: now}
	}
	b = a.refill(b, now)
	if b.tokens < 1 {
		a.buckets[username] = b
		return false
	}
	b.tokens--
	a.buckets[username] = b
	return true
}

// refundLocked gives back the tokens of an attempt whose comparison
// passed, to its user's bucket and its source's. a.mu is held.
func (a *Authenticator) refundLocked(at attempt) {
	now := a.cfg.Now()
	a.sources.refund(at.source, now)
	a.refundUserLocked(at.username, now)
}

// refundUserLocked gives a token back to the user's bucket.
func (a *Authenticator) refundUserLocked(username string, now time.Time) {
	b, present := a.buckets[username]
	if !present {
		return
	}
	b = a.refill(b, now)
	b.tokens++
	if b.tokens >= float64(a.cfg.BucketBurst) {
		delete(a.buckets, username) // full: the same as absent
		return
	}
	a.buckets[username] = b
}

// refill adds the tokens earned since b.at, up to the burst.
func (a *Authenticator) refill(b bucket, now time.Time) bucket {
	if elapsed := now.Sub(b.at); elapsed > 0 {
		b.tokens = min(float64(a.cfg.BucketBurst), b.tokens+elapsed.Seconds()/a.cfg.BucketRefill.Seconds())
		b.at = now
	}
	return b
}

// pruneBucketsLocked drops the buckets that refilled to full.
func (a *Authenticator) pruneBucketsLocked(now time.Time) {
	for username, b := range a.buckets {
		if a.refill(b, now).tokens >= float64(a.cfg.BucketBurst) {
			delete(a.buckets, username)
		}
	}
}

// sourcesTracked is the number of sources whose bucket is not full.
func (a *Authenticator) sourcesTracked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sources.len()
}

// tableSizes returns the sizes of the verified, rejected, bucket and
// hasher tables, for the metrics.
func (a *Authenticator) tableSizes() (verified, rejected, buckets, hashers int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.verified), len(a.rejected), len(a.buckets), len(a.hashers)
}
