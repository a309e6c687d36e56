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

// A wrong secret fails on both sides: the listener refuses the proof,
// which the dialer reports as an authentication failure.
func TestHandshakeWrongSecretFailsBothSides(t *testing.T) {
	result := runHandshake(keysOf("a", []byte("wrong")), keysOf("b", testSecret), "b")
	require.ErrorIs(t, result.listenerErr, ErrAuthentication)
	require.ErrorIs(t, result.dialerErr, ErrAuthentication)
	require.NotContains(t, result.listenerErr.Error(), string(testSecret))
}

// A dialer that proved the secret but reached another node than the one
// it meant learns which one, with that node's proof.
func TestHandshakeWrongPeer(t *testing.T) {
	result := runHandshake(keysOf("a", testSecret), keysOf("c", testSecret), "b")
	require.ErrorIs(t, result.dialerErr, ErrWrongPeer)
	require.ErrorContains(t, result.dialerErr, `dialed "b", reached "c"`)
	require.ErrorIs(t, result.listenerErr, ErrWrongPeer)
}

// A dialer claiming the listener's own id is refused.
func TestHandshakeRefusesOwnID(t *testing.T) {
	result := runHandshake(keysOf("b", testSecret), keysOf("b", testSecret), "b")
	require.ErrorIs(t, result.listenerErr, ErrHandshake)
	require.ErrorIs(t, result.dialerErr, ErrAuthentication)
}

// The listener names itself to no one who has not proved the secret: its
// challenge holds no id, and a wrong proof gets a bare refusal.
func TestListenerRevealsNoIDBeforeTheProof(t *testing.T) {
	dialerEnd, listenerEnd := net.Pipe()
	defer dialerEnd.Close()
	go func() {
		_, _ = listenerHandshake(listenerEnd, keysOf("secret-node-id", testSecret))
		listenerEnd.Close()
	}()
	var sent bytes.Buffer
	challenge, err := readChallenge(io.TeeReader(dialerEnd, &sent))
	require.NoError(t, err)
	forged := appendHello(nil, hello{dialerID: "x", expectedID: "guess", nonce: challenge})
	_, err = dialerEnd.Write(append(forged, make([]byte, macBytes)...))
	require.NoError(t, err)
	rest, _ := io.ReadAll(dialerEnd)
	sent.Write(rest)
	require.Equal(t, []byte{verdictRefused}, rest)
	require.NotContains(t, sent.String(), "secret-node-id")
}

// A listener that hangs up before its verdict (shedding load) is a
// handshake error for the dialer, not an authentication failure.
func TestListenerHangingUpIsNoAuthenticationFailure(t *testing.T) {
	dialerEnd, listenerEnd := net.Pipe()
	defer dialerEnd.Close()
	go func() {
		var nonce [nonceBytes]byte
		_, _ = listenerEnd.Write(appendChallenge(nil, nonce))
		_, _ = readHello(listenerEnd)
		_, _ = readProof(listenerEnd)
		listenerEnd.Close()
	}()
	err := dialerHandshake(dialerEnd, keysOf("a", testSecret), "b")
	require.ErrorIs(t, err, ErrHandshake)
	require.NotErrorIs(t, err, ErrAuthentication)
}

// readHello checks magic, version and id lengths before reading more.
func TestReadHelloRejectsMalformed(t *testing.T) {
	valid := appendHello(nil, hello{dialerID: "node-1", expectedID: "node-2"})
	head := []byte(handshakeMagic)
	cases := map[string][]byte{
		"bad magic":   append([]byte("HTTP"), valid[4:]...),
		"bad version": append(append(bytes.Clone(head), handshakeVersion+1), valid[5:]...),
		"empty id":    append(append(bytes.Clone(head), handshakeVersion, 0), make([]byte, nonceBytes)...),
		"id too long": append(append(bytes.Clone(head), handshakeVersion, nodeIDBytesMax+1), make([]byte, 2*nodeIDBytesMax+nonceBytes)...),
		"truncated":   valid[:len(valid)-1],
		"empty":       nil,
	}
	for name, input := range cases {
		_, err := readHello(bytes.NewReader(input))
		require.ErrorIs(t, err, ErrHandshake, name)
	}
	decoded, err := readHello(bytes.NewReader(valid))
	require.NoError(t, err)
	require.Equal(t, hello{dialerID: "node-1", expectedID: "node-2"}, decoded)
}

// readHello never reads past one hello, whatever follows it.
func TestReadHelloReadsOneHello(t *testing.T) {
	input := appendHello(nil, hello{dialerID: "n", expectedID: "m"})
	reader := bytes.NewReader(append(input, []byte("next bytes")...))
	_, err := readHello(reader)
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
