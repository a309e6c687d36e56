package peer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

func TestDefaultConfigWithSecretIsValid(t *testing.T) {
	cfg := DefaultConfig("a", ":7943")
	require.ErrorIs(t, cfg.Validate(), ErrInvalidConfig, "no secret")
	cfg.Secret = testSecret
	require.NoError(t, cfg.Validate())
	cfg.Secret, cfg.InsecureNoAuth = nil, true
	require.NoError(t, cfg.Validate())
}

// Validate reports every problem at once, each wrapping ErrInvalidConfig.
func TestValidateReportsEveryProblem(t *testing.T) {
	cfg := Config{
		NodeID:              strings.Repeat("n", nodeIDBytesMax+1),
		ListenAddr:          "no-port",
		Peers:               map[string]string{"": "127.0.0.1:1", "b": "nowhere"},
		Secret:              testSecret,
		InsecureNoAuth:      true,
		DialTimeout:         0,
		HandshakeTimeout:    -time.Second,
		WriteTimeout:        timeoutMax + 1,
		ReconnectBackoffMin: 2 * time.Second,
		ReconnectBackoffMax: time.Second,
		SendQueueMax:        sendQueueMaxLimit + 1,
		SendQueueBytesMax:   0,
	}
	err := cfg.Validate()
	joined, ok := err.(interface{ Unwrap() []error })
	require.True(t, ok, "Validate returns every problem joined")
	problems := joined.Unwrap()
	for _, problem := range problems {
		require.ErrorIs(t, problem, ErrInvalidConfig)
	}
	for _, fragment := range []string{"node id", "listen address", `peer id ""`, `peer "b"`,
		"exclude each other", "dial timeout", "handshake timeout", "write timeout", "backoff min", "send queue max", "send queue bytes max"} {
		require.Contains(t, err.Error(), fragment)
	}
	require.Len(t, problems, 11)
}

func TestNewRejectsInvalidInput(t *testing.T) {
	_, err := New(Config{}, func(msg.Envelope) {}, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
	_, err = New(testConfig("a", nil), nil, nil)
	require.ErrorIs(t, err, ErrInvalidConfig)
}

// Start twice is refused; Addr is empty before Start.
func TestStartTwice(t *testing.T) {
	checkGoroutinesEnd(t)
	transport, err := New(testConfig("a", nil), func(msg.Envelope) {}, nil)
	require.NoError(t, err)
	require.Empty(t, transport.Addr())
	require.NoError(t, transport.Start())
	require.NotEmpty(t, transport.Addr())
	require.ErrorIs(t, transport.Start(), ErrStarted)
	require.NoError(t, transport.Close())
}

// A listen address in use is reported by Start.
func TestStartReportsListenFailure(t *testing.T) {
	checkGoroutinesEnd(t)
	taken := startTransport(t, testConfig("a", nil))
	cfg := testConfig("b", nil)
	cfg.ListenAddr = taken.Addr()
	transport, err := New(cfg, func(msg.Envelope) {}, nil)
	require.NoError(t, err)
	err = transport.Start()
	require.Error(t, err)
	require.False(t, errors.Is(err, ErrStarted))
	require.NoError(t, transport.Close())
}
