package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// A missing required flag is a usage error like the others: the usage,
// exit 2, nothing sent (it was cobra's own error: exit 1, no usage;
// review finding).
func TestAMissingRequiredFlagIsAUsageError(t *testing.T) {
	h := newHarness(t)
	broker := newFakeBroker(t)
	for _, args := range [][]string{{"user", "add", "alice"}, {"user", "passwd", "alice"}} {
		code := h.against(broker, args...)
		assert.Equal(t, exitUsage, code, "narad %v: stderr %q", args, h.stderr.String())
		assert.Contains(t, h.stderr.String(), "Usage:", "narad %v prints its usage", args)
		assert.Empty(t, broker.seen(""), "nothing is sent")
	}
}

// sub gives up, exit 1, on a failure no retry can mend: a certificate the
// client does not trust, a 200 whose body is not the API's JSON. It
// retried them every second until interrupted, then exited 0 (review
// finding). The deadline only bounds the test: sub must end long before.
func TestSubEndsOnAPermanentFailure(t *testing.T) {
	tlsServer := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	}))
	defer tlsServer.Close()
	garbage := newFakeBroker(t).on("GET /v1/topics/t/consume", reply{status: http.StatusOK, body: "<html>proxy login</html>"})

	for name, server := range map[string]string{"untrusted TLS certificate": tlsServer.URL, "undecodable 200": garbage.server.URL} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			code := h.runContext(ctx, "-s", server, "sub", "t", "--max", "1")
			assert.NoError(t, ctx.Err(), "sub gave up on its own, not interrupted; stderr:\n%s", h.stderr.String())
			assert.Equal(t, exitError, code, "stderr:\n%s", h.stderr.String())
		})
	}
}
