// Package auth authenticates and authorizes the callers of the HTTP API,
// off the node loop.
//
// The node publishes its applied users; Authenticator.Publish takes them as
// an immutable Users view stamped with the users' version. Verify checks a
// Basic credential sent from a Source (the connection's client address;
// an IPv6 one by its /64 prefix) against the current view:
//
//   - an unknown user fails at once (no bcrypt), taking a token from the
//     source's bucket of failed attempts (burst Config.SourceBucketBurst,
//     one more every Config.SourceBucketRefill), or, when it holds none,
//     answers ErrSourceThrottled (429);
//   - a credential verified against the user's current password hash
//     passes from a cache that keeps a keyed hash of the credential, never
//     the password;
//   - a credential that recently failed against that password hash fails
//     from a negative cache;
//   - otherwise one bcrypt comparison runs, bounded per process
//     (Config.BcryptConcurrencyMax) and shared by identical concurrent
//     attempts from one source, and only if the source's bucket and then
//     the user's (burst Config.BucketBurst, one more every
//     Config.BucketRefill) each hold a token: an empty one answers
//     ErrSourceThrottled or ErrThrottled (429) before any bcrypt work.
//     The user's token is taken at once, the source's when the
//     comparison gets its bcrypt turn (so a source's own checks queued
//     for turns do not empty its bucket); a success gives both back.
//
// The sources' table holds only the buckets that are not full, at most
// Config.SourcesMax: a new source past it takes the place of the fullest
// bucket, so a flood of distinct addresses never grows the table nor
// locks a new client out, at the price of the buckets it pushes out
// (each such address gets a full bucket again); the per-user buckets and
// the bcrypt bound hold regardless.
//
// A user's new password hash (a password change, or the user deleted and
// created again) invalidates that user's entries in both caches, so it
// counts from the next request on; grants are read from the current view
// at every request. Another user's change leaves the caches as they are:
// were it to flush them, anyone able to change a user (their own password
// included) would send every caller back to bcrypt and its token bucket,
// where a few wrong guesses lock a user out.
//
// Grants (actions produce, consume, create, admin;
// docs/api.md#authentication) and their patterns (a literal topic name or a
// prefix ending in '*') are checked by Identity.Allowed; Covers tells whether
// one grant list includes another.
//
// Every table is bounded (Config) and its size is a metric (narad_auth_*).
// Inputs: the users the node publishes, credentials. Outputs: identities,
// errors, bcrypt hashes, Prometheus series.
package auth
