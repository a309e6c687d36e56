package peer

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"syscall"
)

// The handshake, run on every new connection before any frame (inside
// TLS when TLS is configured):
//
//	listener -> dialer:   greeting(listenerID, listenerNonce)
//	dialer   -> listener: greeting(dialerID, dialerNonce) | dialerProof
//	listener -> dialer:   listenerProof
//
//	greeting      = magic "NRDP" | version | len(id) | id | nonce (32 bytes)
//	dialerProof   = HMAC-SHA256(secret, "narad-peer-v1" | listenerNonce | ID(dialerID) | ID(listenerID))
//	listenerProof = HMAC-SHA256(secret, "narad-peer-v1-ack" | dialerNonce | ID(listenerID) | ID(dialerID))
//	ID(x)         = len(x) (one byte) | x
//
// Each side proves the secret over the other side's fresh nonce, so a
// recorded exchange proves nothing on a new connection; both ids are bound
// into both proofs, with their lengths so that no two id pairs hash alike;
// the two labels differ, so one side's proof is never valid as the other's.
// The listener verifies before it answers, and closes the connection
// without a word when the proof is wrong. Tags are compared in constant
// time. The caller bounds the whole exchange with a deadline.
//
// Without TLS the handshake keeps out every process that lacks the secret,
// but frames after it are neither encrypted nor authenticated: an active
// attacker on the network path could still alter them. TLS covers that.

const (
	handshakeMagic          = "NRDP"
	handshakeVersion   byte = 1
	dialerProofLabel        = "narad-peer-v1"
	listenerProofLabel      = "narad-peer-v1-ack"
)

// greeting is the first message of each side.
type greeting struct {
	nodeID string
	nonce  [nonceBytes]byte
}

// handshakeKeys is what one side brings to a handshake. Immutable.
type handshakeKeys struct {
	// secret is the HMAC key; empty in InsecureNoAuth mode.
	secret []byte
	// localID is this node's id.
	localID string
	// random supplies the nonces (crypto/rand in production).
	random io.Reader
}

// newNonce draws a fresh challenge.
func (k handshakeKeys) newNonce() ([nonceBytes]byte, error) {
	var nonce [nonceBytes]byte
	if _, err := io.ReadFull(k.random, nonce[:]); err != nil {
		return nonce, fmt.Errorf("%w: drawing a nonce: %v", ErrHandshake, err)
	}
	return nonce, nil
}

// proof computes HMAC-SHA256(secret, label | nonce | ID(first) | ID(second)).
func proof(secret []byte, label string, nonce [nonceBytes]byte, first, second string) []byte {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(label))
	mac.Write(nonce[:])
	mac.Write([]byte{byte(len(first))})
	mac.Write([]byte(first))
	mac.Write([]byte{byte(len(second))})
	mac.Write([]byte(second))
	return mac.Sum(nil)
}

// appendGreeting encodes g after dst.
func appendGreeting(dst []byte, g greeting) []byte {
	assert(validNodeID(g.nodeID), "greeting node id of %d bytes", len(g.nodeID))
	dst = append(dst, handshakeMagic...)
	dst = append(dst, handshakeVersion, byte(len(g.nodeID)))
	dst = append(dst, g.nodeID...)
	return append(dst, g.nonce[:]...)
}

// readGreeting decodes one greeting, checking magic, version and the id
// length before reading the id. It reads at most greetingBytesMax bytes.
func readGreeting(r io.Reader) (greeting, error) {
	var head [len(handshakeMagic) + 2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return greeting{}, fmt.Errorf("%w: reading greeting: %v", ErrHandshake, err)
	}
	if !bytes.Equal(head[:len(handshakeMagic)], []byte(handshakeMagic)) {
		return greeting{}, fmt.Errorf("%w: not a narad peer (bad magic)", ErrHandshake)
	}
	version, idBytes := head[len(handshakeMagic)], int(head[len(handshakeMagic)+1])
	if version != handshakeVersion {
		return greeting{}, fmt.Errorf("%w: protocol version %d, want %d", ErrHandshake, version, handshakeVersion)
	}
	if idBytes == 0 || idBytes > nodeIDBytesMax {
		return greeting{}, fmt.Errorf("%w: node id of %d bytes, want 1 to %d", ErrHandshake, idBytes, nodeIDBytesMax)
	}
	rest := make([]byte, idBytes+nonceBytes)
	if _, err := io.ReadFull(r, rest); err != nil {
		return greeting{}, fmt.Errorf("%w: reading greeting: %v", ErrHandshake, err)
	}
	g := greeting{nodeID: string(rest[:idBytes])}
	copy(g.nonce[:], rest[idBytes:])
	return g, nil
}

// readProof reads one HMAC tag.
func readProof(r io.Reader) ([]byte, error) {
	tag := make([]byte, macBytes)
	if _, err := io.ReadFull(r, tag); err != nil {
		return nil, fmt.Errorf("%w: reading proof: %v", ErrHandshake, err)
	}
	return tag, nil
}

// readListenerProof reads the listener's tag. An end of stream here means
// the listener hung up instead of answering, which it does when our proof
// is wrong, so it counts as an authentication failure.
func readListenerProof(r io.Reader) ([]byte, error) {
	tag := make([]byte, macBytes)
	_, err := io.ReadFull(r, tag)
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnectionReset(err) {
		return nil, fmt.Errorf("%w: the listener closed the connection instead of proving the secret", ErrAuthentication)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: reading proof: %v", ErrHandshake, err)
	}
	return tag, nil
}

// dialerHandshake runs the dialer's side over conn, which must reach the
// node expectedID.
func dialerHandshake(conn io.ReadWriter, keys handshakeKeys, expectedID string) error {
	theirs, err := readGreeting(conn)
	if err != nil {
		return err
	}
	if theirs.nodeID != expectedID {
		return fmt.Errorf("%w: dialed %q, reached %q", ErrWrongPeer, expectedID, theirs.nodeID)
	}
	ours, err := keys.newNonce()
	if err != nil {
		return err
	}
	message := appendGreeting(make([]byte, 0, greetingBytesMax+macBytes), greeting{nodeID: keys.localID, nonce: ours})
	message = append(message, proof(keys.secret, dialerProofLabel, theirs.nonce, keys.localID, expectedID)...)
	if _, err := conn.Write(message); err != nil {
		return fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	tag, err := readListenerProof(conn)
	if err != nil {
		return err
	}
	if !hmac.Equal(tag, proof(keys.secret, listenerProofLabel, ours, expectedID, keys.localID)) {
		return fmt.Errorf("%w: %q did not prove the cluster secret", ErrAuthentication, expectedID)
	}
	return nil
}

// listenerHandshake runs the listener's side over conn and returns the
// dialer's authenticated id.
func listenerHandshake(conn io.ReadWriter, keys handshakeKeys) (string, error) {
	ours, err := keys.newNonce()
	if err != nil {
		return "", err
	}
	if _, err := conn.Write(appendGreeting(nil, greeting{nodeID: keys.localID, nonce: ours})); err != nil {
		return "", fmt.Errorf("%w: sending greeting: %v", ErrHandshake, err)
	}
	theirs, err := readGreeting(conn)
	if err != nil {
		return "", err
	}
	tag, err := readProof(conn)
	if err != nil {
		return "", err
	}
	if !hmac.Equal(tag, proof(keys.secret, dialerProofLabel, ours, theirs.nodeID, keys.localID)) {
		return "", fmt.Errorf("%w: dialer claiming %q did not prove the cluster secret", ErrAuthentication, theirs.nodeID)
	}
	if theirs.nodeID == keys.localID {
		return "", fmt.Errorf("%w: dialer claims this node's own id %q", ErrHandshake, theirs.nodeID)
	}
	if _, err := conn.Write(proof(keys.secret, listenerProofLabel, theirs.nonce, keys.localID, theirs.nodeID)); err != nil {
		return "", fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	return theirs.nodeID, nil
}

// isConnectionReset reports a peer that closed with our data unread, which
// is how a rejecting listener's close usually reaches the dialer.
func isConnectionReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}
