package fuzz

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"narad/node/lease"
)

// FuzzReceiptHandle: any key, topic, partition, offset and nonce (brought
// into their bounds), and any text.
//   - A minted handle begins with "partition:offset:", parses back to its
//     fields, and verifies under its key and topic.
//   - Under another topic or another key it verifies to nonce 0, which
//     matches no reservation.
//   - Any text parses without panicking; text that parses has one spelling
//     (its fields re-format to it), and text that verifies to a nonce was
//     minted with the key and topic.
func FuzzReceiptHandle(f *testing.F) {
	f.Add(bytes.Repeat([]byte{7}, lease.HandleKeyBytes), "orders", 3, uint64(42), uint64(1099511627777), "3:42:1:0011223344556677")
	f.Add([]byte("short"), "", 0, uint64(0), uint64(0), "")
	f.Add(bytes.Repeat([]byte{0}, lease.HandleKeyBytes), "rh", 1048576, ^uint64(0), ^uint64(0), "1:2:3:ABCDEF0011223344")
	f.Fuzz(func(t *testing.T, keySeed []byte, topic string, partition int, offset, nonce uint64, text string) {
		key := fuzzHandleKey(keySeed)
		partition = ((partition % (lease.PartitionMax + 1)) + lease.PartitionMax + 1) % (lease.PartitionMax + 1)
		nonce = max(nonce, 1)
		handle := lease.FormatHandle(key, topic, partition, offset, nonce)
		checkMinted(t, key, topic, handle, partition, offset, nonce)
		checkParsed(t, key, topic, text)
	})
}

// fuzzHandleKey stretches any bytes into a key of the right size.
func fuzzHandleKey(seed []byte) []byte {
	key := make([]byte, lease.HandleKeyBytes)
	for i := range key {
		if len(seed) > 0 {
			key[i] = seed[i%len(seed)] + byte(i)
		}
	}
	return key
}

func checkMinted(t *testing.T, key []byte, topic, handle string, partition int, offset, nonce uint64) {
	gotPartition, gotOffset, gotNonce, err := lease.VerifyHandle(key, topic, handle)
	if err != nil || gotPartition != partition || gotOffset != offset || gotNonce != nonce {
		t.Fatalf("minted %q verifies to (%d, %d, %d, %v), want (%d, %d, %d)", handle, gotPartition, gotOffset, gotNonce, err, partition, offset, nonce)
	}
	if !strings.HasPrefix(handle, lease.FormatHandlePrefix(partition, offset)) {
		t.Fatalf("minted %q does not begin with partition:offset:", handle)
	}
	if _, _, otherNonce, err := lease.VerifyHandle(key, topic+"x", handle); err != nil || otherNonce != 0 {
		t.Fatalf("handle %q of topic %q verifies under topic %q: nonce %d, %v", handle, topic, topic+"x", otherNonce, err)
	}
	otherKey := bytes.Clone(key)
	otherKey[0] ^= 1
	if _, _, otherNonce, err := lease.VerifyHandle(otherKey, topic, handle); err != nil || otherNonce != 0 {
		t.Fatalf("handle %q verifies under another key: nonce %d, %v", handle, otherNonce, err)
	}
}

func checkParsed(t *testing.T, key []byte, topic, text string) {
	partition, offset, nonce, err := lease.ParseHandle(text)
	if err != nil {
		return
	}
	tag := text[strings.LastIndexByte(text, ':')+1:]
	if text != lease.FormatHandlePrefix(partition, offset)+strconv.FormatUint(nonce, 10)+":"+tag {
		t.Fatalf("%q parses but is not canonical", text)
	}
	if _, _, verified, err := lease.VerifyHandle(key, topic, text); err != nil || (verified != 0 && text != lease.FormatHandle(key, topic, partition, offset, nonce)) {
		t.Fatalf("%q verifies to nonce %d (%v) without being minted with the key", text, verified, err)
	}
}
