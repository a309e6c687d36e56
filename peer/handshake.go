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
//	listener -> dialer:   challenge(listenerNonce)
//	dialer   -> listener: hello(dialerID, expectedID, dialerNonce) | dialerProof
//	listener -> dialer:   verdict
//
//	challenge     = magic "NRDP" | version | nonce (32 bytes)
//	hello         = magic | version | ID(dialerID) | ID(expectedID) | nonce (32 bytes)
//	dialerProof   = HMAC-SHA256(secret, "narad-peer-v2" | listenerNonce | ID(dialerID) | ID(expectedID))
//	verdict       = 'A' | listenerProof                    (accepted: the listener is expectedID)
//	              | 'W' | ID(listenerID) | listenerProof   (the dialer proved the secret but reached another node)
//	              | 'R'                                    (refused; the listener closes)
//	listenerProof = HMAC-SHA256(secret, "narad-peer-v2-ack" | dialerNonce | ID(listenerID) | ID(dialerID))
//	ID(x)         = len(x) (one byte) | x
//
// The listener names itself to no one who has not proved the secret: its
// challenge carries no id, and only a dialer whose proof verifies learns
// it (in 'A', implicitly, or in 'W', with a proof, so that the dialer can
// report "dialed X, reached Y"). Each side proves the secret over the
// other side's fresh nonce, so a recorded exchange proves nothing on a
// new connection; both ids are bound into both proofs, with their lengths
// so that no two id pairs hash alike; the two labels differ, so one
// side's proof is never valid as the other's. Tags are compared in
// constant time. A listener that closes without a verdict is shedding
// load (or stopping): the dialer reports a handshake error, not an
// authentication failure. The caller bounds the whole exchange with a
// deadline.
//
// Without TLS the handshake keeps out every process that lacks the secret,
// but frames after it are neither encrypted nor authenticated: an active
// attacker on the network path could still alter them. TLS covers that.

const (
	handshakeMagic          = "NRDP"
	handshakeVersion   byte = 2
	dialerProofLabel        = "narad-peer-v2"
	listenerProofLabel      = "narad-peer-v2-ack"
)

// The verdicts of a listener.
const (
	verdictAccepted  byte = 'A'
	verdictWrongPeer byte = 'W'
	verdictRefused   byte = 'R'
)

// hello is the dialer's first message.
type hello struct {
	dialerID, expectedID string
	nonce                [nonceBytes]byte
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

// appendID encodes ID(id) after dst.
func appendID(dst []byte, id string) []byte {
	assert(validNodeID(id), "handshake node id of %d bytes", len(id))
	dst = append(dst, byte(len(id)))
	return append(dst, id...)
}

// appendChallenge encodes the listener's challenge after dst.
func appendChallenge(dst []byte, nonce [nonceBytes]byte) []byte {
	dst = append(dst, handshakeMagic...)
	dst = append(dst, handshakeVersion)
	return append(dst, nonce[:]...)
}

// appendHello encodes h after dst.
func appendHello(dst []byte, h hello) []byte {
	dst = append(dst, handshakeMagic...)
	dst = append(dst, handshakeVersion)
	dst = appendID(dst, h.dialerID)
	dst = appendID(dst, h.expectedID)
	return append(dst, h.nonce[:]...)
}

// readHead reads and checks the magic and the version.
func readHead(r io.Reader) error {
	var head [len(handshakeMagic) + 1]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return fmt.Errorf("%w: reading greeting: %w", ErrHandshake, err)
	}
	if !bytes.Equal(head[:len(handshakeMagic)], []byte(handshakeMagic)) {
		return fmt.Errorf("%w: not a narad peer (bad magic)", ErrHandshake)
	}
	if version := head[len(handshakeMagic)]; version != handshakeVersion {
		return fmt.Errorf("%w: protocol version %d, want %d", ErrHandshake, version, handshakeVersion)
	}
	return nil
}

// readID reads ID(x), checking the length before reading x.
func readID(r io.Reader) (string, error) {
	var length [1]byte
	if _, err := io.ReadFull(r, length[:]); err != nil {
		return "", fmt.Errorf("%w: reading a node id: %v", ErrHandshake, err)
	}
	if length[0] == 0 || int(length[0]) > nodeIDBytesMax {
		return "", fmt.Errorf("%w: node id of %d bytes, want 1 to %d", ErrHandshake, length[0], nodeIDBytesMax)
	}
	id := make([]byte, length[0])
	if _, err := io.ReadFull(r, id); err != nil {
		return "", fmt.Errorf("%w: reading a node id: %v", ErrHandshake, err)
	}
	return string(id), nil
}

// readNonce reads one nonce.
func readNonce(r io.Reader) ([nonceBytes]byte, error) {
	var nonce [nonceBytes]byte
	if _, err := io.ReadFull(r, nonce[:]); err != nil {
		return nonce, fmt.Errorf("%w: reading a nonce: %v", ErrHandshake, err)
	}
	return nonce, nil
}

// readChallenge decodes the listener's challenge.
func readChallenge(r io.Reader) ([nonceBytes]byte, error) {
	if err := readHead(r); err != nil {
		return [nonceBytes]byte{}, err
	}
	return readNonce(r)
}

// readHello decodes the dialer's hello. It reads at most helloBytesMax
// bytes.
func readHello(r io.Reader) (hello, error) {
	var h hello
	if err := readHead(r); err != nil {
		return h, err
	}
	var err error
	if h.dialerID, err = readID(r); err != nil {
		return h, err
	}
	if h.expectedID, err = readID(r); err != nil {
		return h, err
	}
	h.nonce, err = readNonce(r)
	return h, err
}

// readProof reads one HMAC tag.
func readProof(r io.Reader) ([]byte, error) {
	tag := make([]byte, macBytes)
	if _, err := io.ReadFull(r, tag); err != nil {
		return nil, fmt.Errorf("%w: reading proof: %v", ErrHandshake, err)
	}
	return tag, nil
}

// dialerHandshake runs the dialer's side over conn, which must reach the
// node expectedID.
func dialerHandshake(conn io.ReadWriter, keys handshakeKeys, expectedID string) error {
	theirs, err := readChallenge(conn)
	if err != nil {
		return err
	}
	ours, err := keys.newNonce()
	if err != nil {
		return err
	}
	message := appendHello(make([]byte, 0, helloBytesMax+macBytes), hello{dialerID: keys.localID, expectedID: expectedID, nonce: ours})
	message = append(message, proof(keys.secret, dialerProofLabel, theirs, keys.localID, expectedID)...)
	if _, err := conn.Write(message); err != nil {
		return fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	return readVerdict(conn, keys, expectedID, ours)
}

// readVerdict reads and checks the listener's verdict on our proof.
func readVerdict(conn io.Reader, keys handshakeKeys, expectedID string, ours [nonceBytes]byte) error {
	var verdict [1]byte
	_, err := io.ReadFull(conn, verdict[:])
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isConnectionReset(err) {
		return fmt.Errorf("%w: the listener closed the connection before its verdict (busy or stopping)", ErrHandshake)
	}
	if err != nil {
		return fmt.Errorf("%w: reading the verdict: %v", ErrHandshake, err)
	}
	reached := expectedID
	switch verdict[0] {
	case verdictRefused:
		return fmt.Errorf("%w: the listener refused our proof of the cluster secret", ErrAuthentication)
	case verdictWrongPeer:
		if reached, err = readID(conn); err != nil {
			return err
		}
	case verdictAccepted:
	default:
		return fmt.Errorf("%w: unknown verdict %q", ErrHandshake, verdict[0])
	}
	tag, err := readProof(conn)
	if err != nil {
		return err
	}
	if !hmac.Equal(tag, proof(keys.secret, listenerProofLabel, ours, reached, keys.localID)) {
		return fmt.Errorf("%w: %q did not prove the cluster secret", ErrAuthentication, reached)
	}
	if reached != expectedID {
		return fmt.Errorf("%w: dialed %q, reached %q", ErrWrongPeer, expectedID, reached)
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
	if _, err := conn.Write(appendChallenge(nil, ours)); err != nil {
		return "", fmt.Errorf("%w: sending the challenge: %v", ErrHandshake, err)
	}
	theirs, err := readHello(conn)
	if err != nil {
		return "", err
	}
	tag, err := readProof(conn)
	if err != nil {
		return "", err
	}
	refusal := listenerRefusal(keys, ours, theirs, tag)
	if refusal != nil {
		_, _ = conn.Write([]byte{verdictRefused}) // the dialer learns only that it was refused
		return "", refusal
	}
	answer := []byte{verdictAccepted}
	if theirs.expectedID != keys.localID {
		answer = appendID([]byte{verdictWrongPeer}, keys.localID)
	}
	answer = append(answer, proof(keys.secret, listenerProofLabel, theirs.nonce, keys.localID, theirs.dialerID)...)
	if _, err := conn.Write(answer); err != nil {
		return "", fmt.Errorf("%w: sending proof: %v", ErrHandshake, err)
	}
	if theirs.expectedID != keys.localID {
		return "", fmt.Errorf("%w: %q dialed %q here", ErrWrongPeer, theirs.dialerID, theirs.expectedID)
	}
	return theirs.dialerID, nil
}

// listenerRefusal says why the listener refuses a hello, or returns nil.
func listenerRefusal(keys handshakeKeys, ours [nonceBytes]byte, theirs hello, tag []byte) error {
	if !hmac.Equal(tag, proof(keys.secret, dialerProofLabel, ours, theirs.dialerID, theirs.expectedID)) {
		return fmt.Errorf("%w: dialer claiming %q did not prove the cluster secret", ErrAuthentication, theirs.dialerID)
	}
	if theirs.dialerID == keys.localID {
		return fmt.Errorf("%w: dialer claims this node's own id %q", ErrHandshake, theirs.dialerID)
	}
	return nil
}

// isConnectionReset reports a peer that closed with our data unread, which
// is how a rejecting listener's close usually reaches the dialer.
func isConnectionReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}
