package host

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// docs/api.md#conventions: HEAD on consume "is `405` (`Allow: GET`)". A
// wrong method on the same path (POST, PUT, DELETE) also answers 405, but
// its Allow header is http.ServeMux's "GET, HEAD": it advertises HEAD, a
// method the same resource refuses with 405 (RFC 9110 §10.2.1: Allow lists
// the methods the resource supports).
func TestConsumeWrongMethodAllowDoesNotAdvertiseHEAD(t *testing.T) {
	h := testHost(t)
	status, body := call(t, h, postJSON("/v1/topics", `{"name":"orders"}`))
	require.Equal(t, http.StatusCreated, status, body)

	head, err := http.NewRequest(http.MethodHead, "http://"+h.Addr()+"/v1/topics/orders/consume", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(head)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, "HEAD consume is refused")

	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodDelete} {
		req, err := http.NewRequest(method, "http://"+h.Addr()+"/v1/topics/orders/consume", strings.NewReader(""))
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode, method)
		require.Equal(t, "GET", resp.Header.Get("Allow"), "%s consume: Allow must not list HEAD, which answers 405", method)
	}
}
