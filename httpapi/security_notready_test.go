package httpapi

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"narad/auth"
)

// notReadyBackend is a node that will not become ready by waiting.
type notReadyBackend struct{ instantBackend }

func (notReadyBackend) Ready() error {
	return errors.New("node n3 runs on data directory NEW, but the cluster's member n3 is the one on data directory OLD")
}

// A request that finds no user known says why the node is not ready: a
// node on another data directory knows no user and never will, and
// "retry" alone sent its clients to retry for ever (docs tour).
func TestNoUsersYetNamesWhyTheNodeIsNotReady(t *testing.T) {
	reg := prometheus.NewRegistry()
	authenticator, err := auth.New(auth.DefaultConfig(), reg)
	require.NoError(t, err)
	handler := NewHandler(notReadyBackend{}, newTestCodec(), reg, slog.New(slog.DiscardHandler),
		WithSecurity(Security{Enabled: true, Auth: authenticator, Users: instantBackend{}}))
	request := httptest.NewRequest(http.MethodGet, "/v1/topics", nil)
	request.SetBasicAuth("bob", "pw")
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	require.Equal(t, http.StatusServiceUnavailable, recorder.Code)
	require.Contains(t, recorder.Body.String(), "no users known yet")
	require.Contains(t, recorder.Body.String(), "runs on data directory NEW", "the answer names why the node is not ready")
}
