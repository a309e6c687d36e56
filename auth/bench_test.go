package auth

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"narad/meta"
)

// benchAuthenticator has one user "ann" whose hash has the default cost.
func benchAuthenticator(b *testing.B) *Authenticator {
	b.Helper()
	a, err := New(DefaultConfig(), prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.DefaultCost)
	if err != nil {
		b.Fatal(err)
	}
	a.Publish(NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hash}}))
	return a
}

// BenchmarkVerifyCached is the cost of a request's check once verified.
func BenchmarkVerifyCached(b *testing.B) {
	a := benchAuthenticator(b)
	ctx := context.Background()
	if _, err := a.Verify(ctx, testSource, "ann", "pw"); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := a.Verify(ctx, testSource, "ann", "pw"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyFirst is the cost of the first check after a users
// change: one bcrypt comparison at the default cost.
func BenchmarkVerifyFirst(b *testing.B) {
	a := benchAuthenticator(b)
	ctx := context.Background()
	users := a.Users().List()
	version := uint64(1)
	for b.Loop() {
		version++
		a.Publish(NewUsers(version, users))
		if _, err := a.Verify(ctx, testSource, "ann", "pw"); err != nil {
			b.Fatal(err)
		}
	}
}
