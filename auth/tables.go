package auth

import (
	"crypto/hmac"
	"maps"
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
// empty. A user of the view always finds room: the table holds one
// bucket per user at most, and past bucketsRoomLocked it is pruned of
// the buckets that refilled and of the users no longer in the view,
// after which only users of the view, each with a bucket not full, are
// left, fewer than the view holds. No bucket that is not full is ever
// dropped for room, so no flood of failures at other names gives a user
// a full bucket again. (BucketsMax users holding a bucket that is not
// full used to refuse every other user's uncached check, the right
// password included, with 429.) a.mu is held.
func (a *Authenticator) takeLocked(username string, now time.Time) bool {
	b, present := a.buckets[username]
	if !present {
		room := a.bucketsRoomLocked()
		if len(a.buckets) >= room {
			a.pruneBucketsLocked(now)
		}
		if len(a.buckets) >= room {
			// only a user deleted since its check began: the table is
			// full of the view's users, every one of them in it
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

// bucketsRoomLocked is the bound of the bucket table: BucketsMax, or the
// users of the view when there are more (a bucket per user). a.mu is
// held.
func (a *Authenticator) bucketsRoomLocked() int {
	return max(a.cfg.BucketsMax, a.users.Load().Len())
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

// pruneBucketsLocked drops the buckets that refilled to full (the same
// as absent) and those of users the view no longer holds (deleted since
// forgetDeletedUsers ran). It runs only at the table's bound.
func (a *Authenticator) pruneBucketsLocked(now time.Time) {
	users := a.users.Load()
	for username, b := range a.buckets {
		if _, known := users.User(username); !known || a.refill(b, now).tokens >= float64(a.cfg.BucketBurst) {
			delete(a.buckets, username)
		}
	}
}

// forgetDeletedUsers drops the verified and rejected credentials and the
// buckets of the users view no longer holds: a deleted user's check is
// refused as unknown, before any table is read, so its entries only took
// room, and with users created and deleted in turn the tables filled to
// their bounds with them. A check of the user under way may remember one
// again; the bounds drop it in time.
func (a *Authenticator) forgetDeletedUsers(view *Users) {
	a.mu.Lock()
	defer a.mu.Unlock()
	deleted := func(username string) bool {
		_, known := view.User(username)
		return !known
	}
	maps.DeleteFunc(a.verified, func(username string, _ verifiedEntry) bool { return deleted(username) })
	maps.DeleteFunc(a.rejected, func(username string, _ []rejectedEntry) bool { return deleted(username) })
	maps.DeleteFunc(a.buckets, func(username string, _ bucket) bool { return deleted(username) })
}

// sourcesTracked is the number of sources whose bucket is not full.
func (a *Authenticator) sourcesTracked() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sources.len()
}

// tableSizes returns the sizes of the verified, rejected, bucket and
// hasher tables, and the bucket table's bound, for the metrics.
func (a *Authenticator) tableSizes() (verified, rejected, buckets, hashers, bucketsRoom int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.verified), len(a.rejected), len(a.buckets), len(a.hashers), a.bucketsRoomLocked()
}
