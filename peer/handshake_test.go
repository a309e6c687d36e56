package peer

import (
	"bytes"
	"crypto/rand"
	"io"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

func keysOf(id string, secret []byte) handshakeKeys {
	return handshakeKeys{secret: secret, localID: id, random: rand.Reader}
}

// handshakeResult is what each side of an in-memory handshake returned.
type handshakeResult struct {
	dialerErr   error
	listenerErr error
	dialerID    string
}

// runHandshake runs both sides over a pipe; the listener closes its end
// when it fails, as the transport does.
func runHandshake(dialer, listener handshakeKeys, expectedID string) handshakeResult {
	dialerEnd, listenerEnd := net.Pipe()
	defer dialerEnd.Close()
	var result handshakeResult
	done := make(chan struct{})
	go func() {
		defer close(done)
		result.dialerID, result.listenerErr = listenerHandshake(listenerEnd, listener)
		listenerEnd.Close()
	}()
	result.dialerErr = dialerHandshake(dialerEnd, dialer, expectedID)
	dialerEnd.Close()
	<-done
	return result
}

// Both sides verify each other when they share the secret, and the
// listener learns the dialer's id.
func TestHandshakeSucceedsWithSharedSecret(t *testing.T) {
	result := runHandshake(keysOf("a", testSecret), keysOf("b", testSecret), "b")
	require.NoError(t, result.dialerErr)
	require.NoError(t, result.listenerErr)
	require.Equal(t, "a", result.dialerID)
}

// InsecureNoAuth runs the same exchange with an empty key.
func TestHandshakeInsecureModeUsesEmptyKey(t *testing.T) {
	result := runHandshake(keysOf("a", nil), keysOf("b", nil), "b")
	require.NoError(t, result.dialerErr)
	require.NoError(t, result.listenerErr)
	result = runHandshake(keysOf("a", nil), keysOf("b", testSecret), "b")
	require.ErrorIs(t, result.listenerErr, ErrAuthentication, "a secured listener refuses an insecure dialer")
}

// A wrong secret fails on both sides: the listener refuses the proof and
// hangs up, which the dialer reports as an authentication failure.
func TestHandshakeWrongSecretFailsBothSides(t *testing.T) {
	result := runHandshake(keysOf("a", []byte("wrong")), keysOf("b", testSecret), "b")
	require.ErrorIs(t, result.listenerErr, ErrAuthentication)
	require.ErrorIs(t, result.dialerErr, ErrAuthentication)
	require.NotContains(t, result.listenerErr.Error(), string(testSecret))
}

// A dialer that reaches another node than the one it meant stops before
// proving anything.
func TestHandshakeWrongPeer(t *testing.T) {
	result := runHandshake(keysOf("a", testSecret), keysOf("c", testSecret), "b")
	require.ErrorIs(t, result.dialerErr, ErrWrongPeer)
	require.ErrorIs(t, result.listenerErr, ErrHandshake)
}

// A dialer claiming the listener's own id is refused.
func TestHandshakeRefusesOwnID(t *testing.T) {
	result := runHandshake(keysOf("b", testSecret), keysOf("b", testSecret), "b")
	require.ErrorIs(t, result.listenerErr, ErrHandshake)
	require.Error(t, result.dialerErr)
}

// readGreeting checks magic, version and id length before reading more.
func TestReadGreetingRejectsMalformed(t *testing.T) {
	valid := appendGreeting(nil, greeting{nodeID: "node-1"})
	cases := map[string][]byte{
		"bad magic":   append([]byte("HTTP"), valid[4:]...),
		"bad version": append(append([]byte(handshakeMagic), handshakeVersion+1), valid[5:]...),
		"empty id":    append(append([]byte(handshakeMagic), handshakeVersion, 0), make([]byte, nonceBytes)...),
		"id too long": append(append([]byte(handshakeMagic), handshakeVersion, nodeIDBytesMax+1), make([]byte, nodeIDBytesMax+1+nonceBytes)...),
		"truncated":   valid[:len(valid)-1],
		"empty":       nil,
	}
	for name, input := range cases {
		_, err := readGreeting(bytes.NewReader(input))
		require.ErrorIs(t, err, ErrHandshake, name)
	}
	decoded, err := readGreeting(bytes.NewReader(valid))
	require.NoError(t, err)
	require.Equal(t, "node-1", decoded.nodeID)
}

// readGreeting never reads past one greeting, whatever follows it.
func TestReadGreetingReadsOneGreeting(t *testing.T) {
	input := appendGreeting(nil, greeting{nodeID: "n"})
	reader := bytes.NewReader(append(input, []byte("next bytes")...))
	_, err := readGreeting(reader)
	require.NoError(t, err)
	rest, _ := io.ReadAll(reader)
	require.Equal(t, "next bytes", string(rest))
}

// Each proof depends on every input, the two labels give different tags,
// and the id lengths keep ("ab","c") apart from ("a","bc").
func TestProofBindsEveryInput(t *testing.T) {
	var nonce, otherNonce [nonceBytes]byte
	otherNonce[0] = 1
	base := proof(testSecret, dialerProofLabel, nonce, "a", "b")
	variants := map[string][]byte{
		"secret":         proof([]byte("other"), dialerProofLabel, nonce, "a", "b"),
		"label":          proof(testSecret, listenerProofLabel, nonce, "a", "b"),
		"nonce":          proof(testSecret, dialerProofLabel, otherNonce, "a", "b"),
		"first id":       proof(testSecret, dialerProofLabel, nonce, "x", "b"),
		"second id":      proof(testSecret, dialerProofLabel, nonce, "a", "x"),
		"swapped ids":    proof(testSecret, dialerProofLabel, nonce, "b", "a"),
		"id boundary":    proof(testSecret, dialerProofLabel, nonce, "ab", "c"),
		"id boundary 2":  proof(testSecret, dialerProofLabel, nonce, "a", "bc"),
		"identical call": proof(testSecret, dialerProofLabel, nonce, "a", "b"),
	}
	for name, tag := range variants {
		require.Len(t, tag, macBytes)
		if name == "identical call" {
			require.Equal(t, base, tag)
			continue
		}
		require.NotEqual(t, base, tag, name)
	}
	require.NotEqual(t, variants["id boundary"], variants["id boundary 2"])
}
