package peer

import (
	"bytes"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.etcd.io/raft/v3/raftpb"

	"narad/msg"
	"narad/wire"
)

// waitMax bounds every wait of these tests for something to happen over
// loopback; it is never an assertion on how long anything took.
const waitMax = 10 * time.Second

// testSecret is the cluster secret of the test clusters.
var testSecret = []byte("correct horse battery staple")

// inbox collects what a transport delivers.
type inbox struct {
	t        *testing.T
	received chan msg.Envelope
}

const inboxCapacity = 1 << 14

func newInbox(t *testing.T) *inbox {
	return &inbox{t: t, received: make(chan msg.Envelope, inboxCapacity)}
}

// deliver is the transport's deliver function. It never blocks: a test
// that overflows the inbox fails.
func (in *inbox) deliver(env msg.Envelope) {
	select {
	case in.received <- env:
	default:
		in.t.Errorf("inbox full: more than %d deliveries", inboxCapacity)
	}
}

// next waits for the next delivery.
func (in *inbox) next() msg.Envelope {
	in.t.Helper()
	select {
	case env := <-in.received:
		return env
	case <-time.After(waitMax):
		in.t.Fatalf("nothing delivered within %v", waitMax)
		return msg.Envelope{}
	}
}

// nextWithin waits up to wait for a delivery and reports whether one came.
func (in *inbox) nextWithin(wait time.Duration) (msg.Envelope, bool) {
	select {
	case env := <-in.received:
		return env, true
	case <-time.After(wait):
		return msg.Envelope{}, false
	}
}

// requireEmpty checks that nothing was delivered.
func (in *inbox) requireEmpty() {
	in.t.Helper()
	require.Len(in.t, in.received, 0, "unexpected deliveries")
}

// testConfig is a loopback configuration with short backoffs.
func testConfig(id string, peers map[string]string) Config {
	cfg := DefaultConfig(id, "127.0.0.1:0")
	cfg.Secret = testSecret
	cfg.Peers = peers
	cfg.ReconnectBackoffMin = 5 * time.Millisecond
	cfg.ReconnectBackoffMax = 50 * time.Millisecond
	cfg.SendQueueMax = 1024
	cfg.BackoffSeed = 1
	return cfg
}

// testLogger writes the transport's logs to the test log when -v is set.
func testLogger() *slog.Logger {
	if !testing.Verbose() {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// started is a running transport with its inbox.
type started struct {
	*Transport
	inbox *inbox
}

// startTransport creates and starts a transport, closed at cleanup.
func startTransport(t *testing.T, cfg Config) started {
	t.Helper()
	in := newInbox(t)
	transport, err := New(cfg, in.deliver, testLogger())
	require.NoError(t, err)
	require.NoError(t, transport.Start())
	t.Cleanup(func() { require.NoError(t, transport.Close()) })
	return started{Transport: transport, inbox: in}
}

// startCluster starts one transport per id, each knowing all the others.
func startCluster(t *testing.T, ids ...string) map[string]started {
	t.Helper()
	cluster := map[string]started{}
	for _, id := range ids {
		cluster[id] = startTransport(t, testConfig(id, nil))
	}
	for _, id := range ids {
		for _, other := range ids {
			require.NoError(t, cluster[id].SetPeer(other, cluster[other].Addr()))
		}
	}
	return cluster
}

// sampleMessages returns one message of each peer message type, with seq
// woven in so that every message of a stream is distinct.
func sampleMessages(seq int) []msg.PeerMessage {
	return []msg.PeerMessage{
		msg.RaftMessage{Message: &raftpb.Message{Type: new(raftpb.MsgHeartbeat), From: new(uint64(1)), To: new(uint64(2)), Term: new(uint64(seq)), Commit: new(uint64(7))}},
		msg.ForwardRequest{ID: uint64(seq), LocalOnly: true, Request: msg.Produce{
			Topic: "orders", Records: []msg.ProduceRecord{{Key: []byte("k"), Partition: msg.PartitionNone, Payload: []byte("payload")}},
		}},
		msg.ForwardReply{ID: uint64(seq), Reply: msg.Reply{ID: msg.RequestID(seq), Result: msg.TopicInfo{Name: "orders", Partitions: 3}}},
		msg.Subscribe{Topic: "orders", ForMs: int64(seq)},
		msg.Notify{Topic: "orders"},
	}
}

// canonical is env as it looks after an encode and decode, the form a
// receiver sees (the codec canonicalizes nil and empty slices).
func canonical(t *testing.T, env msg.Envelope) msg.Envelope {
	t.Helper()
	encoded, err := wire.EncodeEnvelope(nil, env)
	require.NoError(t, err)
	decoded, err := wire.DecodeEnvelope(encoded)
	require.NoError(t, err)
	return decoded
}

// requireEventually waits until condition holds, checking it every few
// milliseconds, and fails with message after waitMax.
func requireEventually(t *testing.T, condition func() bool, message string, args ...any) {
	t.Helper()
	require.Eventuallyf(t, condition, waitMax, 2*time.Millisecond, message, args...)
}

// checkGoroutinesEnd registers a cleanup, run after every other cleanup
// of the test, that fails if a goroutine started by the package's
// production code is still alive. It waits for them to end (up to
// waitMax): a goroutine that is past wg.Done but not yet gone is fine.
func checkGoroutinesEnd(t *testing.T) {
	t.Cleanup(func() {
		var leaked []string
		deadline := time.Now().Add(waitMax)
		for {
			leaked = packageGoroutines()
			if len(leaked) == 0 || time.Now().After(deadline) {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		require.Empty(t, leaked, "goroutines of package peer still running after Close")
	})
}

// packageGoroutines returns the stacks of live goroutines created by a
// function of the package's non-test files.
func packageGoroutines() []string {
	buffer := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buffer, true)
		if n < len(buffer) {
			buffer = buffer[:n]
			break
		}
		buffer = make([]byte, 2*len(buffer))
	}
	var found []string
	for _, stack := range bytes.Split(buffer, []byte("\n\n")) {
		if createdByPackage(string(stack)) {
			found = append(found, string(stack))
		}
	}
	return found
}

// createdByPackage reports a goroutine stack whose creator is in a
// non-test file of this package.
func createdByPackage(stack string) bool {
	lines := strings.Split(stack, "\n")
	for i, line := range lines {
		if strings.HasPrefix(line, "created by narad/peer.") && i+1 < len(lines) {
			location := strings.TrimSpace(lines[i+1])
			return strings.Contains(location, "/peer/") && !strings.Contains(location, "_test.go:")
		}
	}
	return false
}
