package httpapi

import (
	"encoding/base64"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"narad/auth"
	"narad/meta"
)

// signInsWithPassword is an authenticator, its metrics in reg, that knows
// users, each with the password "pw".
func signInsWithPassword(t *testing.T, reg *prometheus.Registry, users ...meta.User) *auth.Authenticator {
	t.Helper()
	authenticator, err := auth.New(auth.DefaultConfig(), reg)
	require.NoError(t, err)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	for i := range users {
		users[i].PasswordHash = hash
	}
	authenticator.Publish(auth.NewUsers(1, users))
	return authenticator
}

// A request with two Authorization headers is refused (400), whichever
// comes first: the server took the first, so a caller's own credential
// placed first and an admin's second acted as the caller, and placed the
// other way as the admin; a proxy that reads the other one would be
// fooled either way.
func TestTwoAuthorizationHeadersAreRefused(t *testing.T) {
	reg := prometheus.NewRegistry()
	authenticator := signInsWithPassword(t, reg,
		meta.User{Username: "bob", Grants: []meta.Grant{{Action: auth.ActionProduce, Patterns: []string{"t"}}}},
		meta.User{Username: "root", Grants: []meta.Grant{{Action: auth.ActionAdmin}}})
	handler := NewHandler(instantBackend{}, newTestCodec(), reg, slog.New(slog.DiscardHandler),
		WithSecurity(Security{Enabled: true, Auth: authenticator, Users: instantBackend{}}))
	basic := func(user string) string { return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":pw")) }
	for _, order := range [][2]string{{"bob", "root"}, {"root", "bob"}} {
		request := httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce", strings.NewReader("x"))
		request.Header.Add("Authorization", basic(order[0]))
		request.Header.Add("Authorization", basic(order[1]))
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		require.Equal(t, http.StatusBadRequest, recorder.Code, "%v first", order[0])
		require.Contains(t, recorder.Body.String(), "Authorization header is given more than once")
	}
	request := httptest.NewRequest(http.MethodPost, "/v1/topics/t/produce", strings.NewReader("x"))
	request.Header.Add("Authorization", basic("bob"))
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	require.Equal(t, http.StatusAccepted, recorder.Code, "one header is read as before: %s", recorder.Body.String())
}
