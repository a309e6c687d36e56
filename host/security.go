package host

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"narad/auth"
	"narad/httpapi"
	"narad/meta"
	"narad/msg"
	"narad/node"
)

// rootSecretBytes is the size of a generated root password: 192 bits.
const rootSecretBytes = 24

// SecurityOptions configure authentication and TLS of the HTTP API.
type SecurityOptions struct {
	// Enabled requires HTTP Basic auth (docs/api.md#authentication) and seeds
	// the root user while no user exists.
	Enabled bool
	// AdminPassword is the root user's password to seed; empty: a random
	// one is generated and logged once, by the node whose seed applies.
	AdminPassword string
	// Auth bounds the authenticator.
	Auth auth.Config
	// TLSCertFile and TLSKeyFile, both set, serve the API over TLS.
	TLSCertFile, TLSKeyFile string
}

// rootSeed is the root credential a host hands its node: the password
// stays here (for the one log line of a generated one), the node gets the
// hash.
type rootSeed struct {
	// password is the plaintext; cleared once logged.
	password string
	// generated is true when no AdminPassword was configured.
	generated bool
	hash      []byte
}

// newAuthenticator builds the authenticator and, when security is on,
// the root seed, whose hash goes into the node's configuration.
func newAuthenticator(opts *Options, reg prometheus.Registerer) (*auth.Authenticator, *rootSeed, error) {
	authenticator, err := auth.New(opts.Security.Auth, reg)
	if err != nil {
		return nil, nil, fmt.Errorf("authentication config: %w", err)
	}
	if !opts.Security.Enabled {
		return authenticator, nil, nil
	}
	seed := &rootSeed{password: opts.Security.AdminPassword}
	if seed.password == "" {
		secret := make([]byte, rootSecretBytes)
		if _, err := rand.Read(secret); err != nil {
			return nil, nil, err
		}
		seed.password, seed.generated = base64.RawURLEncoding.EncodeToString(secret), true
	}
	seed.hash, err = authenticator.HashPassword(context.Background(), "", seed.password)
	if err != nil {
		return nil, nil, fmt.Errorf("admin password: %w", err)
	}
	opts.Node.RootSeedHash = seed.hash
	opts.Node.EnforceGrants = true // its callers are authenticated: so are the writes it makes on their topics' behalf
	return authenticator, seed, nil
}

// logSeeded writes the audit line of the root seeding, once; the
// generated password appears in it and nowhere else. It is a warning,
// written as an error when the log's level hides warnings: a node
// started with log.level error showed nothing, and its root's password,
// shown once, was lost (first-day operator audit).
func (s *rootSeed) logSeeded(logger *slog.Logger) {
	if s.generated {
		level := slog.LevelWarn
		if !logger.Enabled(context.Background(), level) {
			level = slog.LevelError
		}
		logger.Log(context.Background(), level, "root user seeded with a generated password, shown once: store it and change it",
			"component", "audit", "action", "root.seed", "user", node.RootUsername, "password", s.password)
	} else {
		logger.Info("root user seeded from NARAD_ADMIN_PASSWORD", "component", "audit", "action", "root.seed", "user", node.RootUsername)
	}
	s.password = ""
}

// dropSeedOfExistingRoot logs, once at start, that NARAD_ADMIN_PASSWORD
// is ignored when the users this node read from its disk already hold a
// root whose password is another (one bcrypt comparison at start): the password only seeds the root of a new cluster, and without
// the line an operator who set it to reset the root's password saw
// nothing say it was not used. Never the password. A node that learns of
// the root only later (a new member) logs nothing: its seed just never
// applies. Before the loop runs.
func (l *loop) dropSeedOfExistingRoot() {
	if l.seed == nil || l.seed.generated {
		return
	}
	for _, user := range l.authenticator.Users().List() {
		if !user.Root {
			continue
		}
		// The same password (a deployment, or narad cluster up, that sets
		// it at every start) says nothing: only one that differs from the
		// root's, which someone may have set to reset it, is worth a line.
		if bcrypt.CompareHashAndPassword(user.PasswordHash, []byte(l.seed.password)) != nil {
			l.logger.Warn("NARAD_ADMIN_PASSWORD ignored: it is used only to seed the root user of a new cluster, and the root user exists "+
				"with another password; change it with PUT /v1/users/"+user.Username+"/password", "component", "security", "user", user.Username)
		}
		l.seed = nil
		return
	}
}

// ChangeUsers implements httpapi.UserChanger.
func (b *backend) ChangeUsers(ctx context.Context, cmd meta.Command) error {
	id := b.loop.newRequestID()
	replyCh := make(chan msg.Reply, 1)
	if err := b.send(ctx, input{id: id, userChange: cmd, reply: replyCh}); err != nil {
		return msg.Unavailable("%v", err)
	}
	select {
	case reply := <-replyCh:
		return reply.Err
	case <-ctx.Done():
		_ = b.send(context.Background(), input{id: id, cancel: true})
		return cancelled(ctx)
	case <-b.loop.done:
		return b.replyAfterStop(id, replyCh).Err
	}
}

// securityOption wires the authenticator into the HTTP handler.
func (h *Host) securityOption(authenticator *auth.Authenticator) httpapi.HandlerOption {
	return httpapi.WithSecurity(httpapi.Security{Enabled: h.opts.Security.Enabled, Auth: authenticator, Users: h.backend})
}

// tlsConfig loads the API's certificate, or returns nil without one.
func (o SecurityOptions) tlsConfig() (*tls.Config, error) {
	if o.TLSCertFile == "" && o.TLSKeyFile == "" {
		return nil, nil
	}
	certificate, err := loadKeyPair(httpTLSFiles(o.TLSCertFile, o.TLSKeyFile))
	if err != nil {
		return nil, err
	}
	return &tls.Config{Certificates: []tls.Certificate{certificate}, MinVersion: tls.VersionTLS12}, nil
}

// publishUsers hands the authenticator the node's users when their
// version changed (or on the first call). Loop goroutine only.
func (l *loop) publishUsers() {
	if l.authenticator == nil {
		return
	}
	version := l.node.UsersVersion()
	if l.usersPublished && version == l.usersVersion {
		return
	}
	l.authenticator.Publish(auth.NewUsers(version, l.node.Users()))
	l.usersVersion, l.usersPublished = version, true
}

// logRootSeed logs the root seeding once this node's seed applied. Loop
// goroutine only.
func (l *loop) logRootSeed() {
	if l.seed != nil && l.node.RootSeeded() {
		l.seed.logSeeded(l.logger)
		l.seed = nil
	}
}
