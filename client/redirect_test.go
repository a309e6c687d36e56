package client

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"
)

// The client follows no redirect: Go's would send the Basic credentials
// along to the same host on another port or scheme (an https:// server
// redirecting to http:// had the password sent in clear). The redirect is
// an error that names it, and nothing reaches its target.
func TestTheClientFollowsNoRedirect(t *testing.T) {
	var reached []string
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = append(reached, r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusOK)
	}))
	defer target.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	c := New(redirector.URL, WithBasicAuth("alice", "secret"))
	_, err := c.ListTopics(context.Background(), 0, "")
	require.Error(t, err)
	require.Contains(t, err.Error(), "redirect")
	require.Contains(t, err.Error(), target.URL)
	require.Empty(t, reached, "nothing, and no credential, reached the redirect's target")
}
