package auth

import (
	"context"

	"golang.org/x/crypto/bcrypt"
)

// hasher is one requester's turn to hash: its hashes run one at a time,
// so a loop of one user's password changes holds at most one of the
// hashes' share of the bcrypt turns (Config.hashTurnsMax), and the other
// users' changes and an admin's user creations take the rest.
type hasher struct {
	// turn holds a token while a hash of the requester runs; capacity 1.
	turn chan struct{}
	// requests counts the requester's hashes holding or waiting for turn;
	// the entry leaves Authenticator.hashers when it falls to 0. Guarded
	// by Authenticator.mu.
	requests int
}

// HashPassword hashes a new password with bcrypt for requester (the
// authenticated user asking; "" for the process itself, and for every
// caller of a node with authentication off), after the
// requester's earlier hashes, within the hashes' share of the bcrypt
// turns (Config.hashTurnsMax) and the bound on concurrent bcrypt runs.
// ErrUnavailable if ctx ends first, or if hashersMax requesters are
// already hashing.
func (a *Authenticator) HashPassword(ctx context.Context, requester, password string) ([]byte, error) {
	if password == "" || len(password) > passwordBytesMax {
		return nil, ErrPasswordInvalid
	}
	h, err := a.joinHasher(requester)
	if err != nil {
		return nil, err
	}
	defer a.leaveHasher(requester, h)
	// The requester's own turn first: a hash waiting for it holds none
	// of the hashes' share, which the other requesters then take.
	if !take(ctx, h.turn) {
		return nil, ErrUnavailable
	}
	defer func() { <-h.turn }()
	if !take(ctx, a.hashTurns) {
		return nil, ErrUnavailable
	}
	defer func() { <-a.hashTurns }()
	var hash []byte
	err = a.withTurn(ctx, func() error {
		a.countRun("hash")
		var err error
		hash, err = bcrypt.GenerateFromPassword([]byte(password), a.cfg.BcryptCost)
		return err
	})
	return hash, err
}

// take puts a token in turns once there is room; false if ctx ends first.
func take(ctx context.Context, turns chan struct{}) bool {
	select {
	case turns <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

// joinHasher counts a hash of requester in its hasher, made if absent
// (ErrUnavailable past hashersMax requesters).
func (a *Authenticator) joinHasher(requester string) (*hasher, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h, ok := a.hashers[requester]
	if !ok {
		if len(a.hashers) >= hashersMax {
			return nil, ErrUnavailable
		}
		h = &hasher{turn: make(chan struct{}, 1)}
		a.hashers[requester] = h
	}
	h.requests++
	return h, nil
}

// leaveHasher uncounts a hash of requester, dropping its hasher after
// the last one.
func (a *Authenticator) leaveHasher(requester string, h *hasher) {
	a.mu.Lock()
	defer a.mu.Unlock()
	h.requests--
	if h.requests == 0 {
		delete(a.hashers, requester)
	}
}
