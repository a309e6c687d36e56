package httpapi

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"narad/auth"
	"narad/meta"
)

// usersBackend applies the user changes it is sent to its authenticator's
// view, as a node would once they applied, and records them.
type usersBackend struct {
	instantBackend
	authenticator *auth.Authenticator
	mu            sync.Mutex
	changes       []meta.Command
}

func (b *usersBackend) ChangeUsers(_ context.Context, cmd meta.Command) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.changes = append(b.changes, cmd)
	view := b.authenticator.Users()
	users := append([]meta.User(nil), view.List()...)
	switch c := cmd.(type) {
	case meta.PutUser:
		users = append(users, meta.User{Username: c.Username, PasswordHash: c.PasswordHash, Grants: c.Grants, CreatedAtMs: 1})
	case meta.SetGrants:
		for i := range users {
			if users[i].Username == c.Username {
				users[i].Grants = c.Grants
			}
		}
	}
	b.authenticator.Publish(auth.NewUsers(view.Version()+1, users))
	return nil
}

// usersAPI serves the users API with the root "admin" (password "pw") and
// the user "frank", logging its audit lines as JSON into logs.
func usersAPI(t *testing.T) (http.Handler, *usersBackend, *bytes.Buffer) {
	t.Helper()
	reg := prometheus.NewRegistry()
	cfg := auth.DefaultConfig()
	cfg.BcryptCost = bcrypt.MinCost
	authenticator, err := auth.New(cfg, reg)
	require.NoError(t, err)
	hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	require.NoError(t, err)
	authenticator.Publish(auth.NewUsers(1, []meta.User{
		{Username: "admin", PasswordHash: hash, Root: true},
		{Username: "frank", PasswordHash: hash, CreatedAtMs: 1},
	}))
	backend := &usersBackend{authenticator: authenticator}
	logs := &bytes.Buffer{}
	handler := NewHandler(backend, newTestCodec(), reg, slog.New(slog.NewJSONHandler(logs, nil)),
		WithSecurity(Security{Enabled: true, Auth: authenticator, Users: backend}))
	return handler, backend, logs
}

func asAdmin(handler http.Handler, method, path, body string) *httptest.ResponseRecorder {
	request := httptest.NewRequest(method, path, strings.NewReader(body))
	request.Header.Set("Content-Type", "application/json")
	request.SetBasicAuth("admin", "pw")
	recorder := httptest.NewRecorder()
	handler.ServeHTTP(recorder, request)
	return recorder
}

// External audit finding 1: PUT /v1/users/frank/grants and POST /v1/users
// took a pattern that matches no topic name (".") and a pattern given
// twice, and let through a 255-byte prefix with its '*' that the
// metastore refused with its internal "meta: invalid command" text. Each
// is now a 400 of the API's own, and no change is sent.
func TestGrantsThatMatchNoTopicOrRepeatAreRefusedWithNothingChanged(t *testing.T) {
	handler, backend, _ := usersAPI(t)
	long := strings.Repeat("a", 255) + "*"
	for _, tc := range []struct{ grants, want string }{
		{`[{"action":"produce","patterns":["."]}]`, `invalid pattern \".\"`},
		{`[{"action":"produce","patterns":[".."]}]`, `invalid pattern \"..\"`},
		{`[{"action":"produce","patterns":["a","a"]}]`, `grant produce gives pattern \"a\" twice`},
		{`[{"action":"produce","patterns":["a"]},{"action":"produce","patterns":["a"]}]`, `grant produce gives pattern \"a\" twice`},
		{`[{"action":"produce","patterns":["` + long + `"]}]`, `up to 254 of them`},
	} {
		for _, call := range []struct{ method, path, body string }{
			{http.MethodPut, "/v1/users/frank/grants", `{"grants":` + tc.grants + `}`},
			{http.MethodPost, "/v1/users", `{"username":"gina","password":"pw","grants":` + tc.grants + `}`},
		} {
			answer := asAdmin(handler, call.method, call.path, call.body)
			require.Equal(t, http.StatusBadRequest, answer.Code, "%s %s: %s", call.method, call.body, answer.Body)
			require.Contains(t, answer.Body.String(), tc.want)
			require.NotContains(t, answer.Body.String(), "meta:")
		}
	}
	require.Empty(t, backend.changes, "a refused change is never sent")
	answer := asAdmin(handler, http.MethodPut, "/v1/users/frank/grants", `{"grants":[{"action":"produce","patterns":["a","b*",".x"]}]}`)
	require.Equal(t, http.StatusOK, answer.Code, answer.Body.String())
}

// External audit finding 5: the audit line of user.create showed
// "grants":null for a user created without grants, where the API shows [].
func TestAuditLineOfAUserCreatedWithoutGrantsShowsAnEmptyList(t *testing.T) {
	handler, _, logs := usersAPI(t)
	answer := asAdmin(handler, http.MethodPost, "/v1/users", `{"username":"gina","password":"pw"}`)
	require.Equal(t, http.StatusCreated, answer.Code, answer.Body.String())
	require.Contains(t, answer.Body.String(), `"grants":[]`)
	require.Contains(t, logs.String(), `"msg":"user.create"`)
	require.Contains(t, logs.String(), `"grants":[]`)
	require.NotContains(t, logs.String(), `"grants":null`)
}

// The users API quotes at most echoBytesMax bytes of a name or grant the
// client sent (hostile-client audit: a 100,000-character username came
// back in a 100,111-byte 400).
func TestUsersErrorsQuoteClientTextClipped(t *testing.T) {
	handler, backend, _ := usersAPI(t)
	long := strings.Repeat("a", 100_000)
	pathLong := strings.Repeat("b", 30_000)
	cases := []struct {
		method, path, body string
		status             int
	}{
		{"POST", "/v1/users", `{"username":"` + long + `","password":"a-long-password"}`, 400},
		{"POST", "/v1/users", `{"username":"ann","password":"a-long-password","grants":[{"action":"` + long + `","patterns":["x"]}]}`, 400},
		{"POST", "/v1/users", `{"username":"ann","password":"a-long-password","grants":[{"action":"produce","patterns":["` + long + `"]}]}`, 400},
		{"GET", "/v1/users/" + pathLong, "", 404},
		{"DELETE", "/v1/users/" + pathLong, "", 404},
		{"PUT", "/v1/users/" + pathLong + "/grants", `{"grants":[]}`, 400},
		{"PUT", "/v1/users/" + pathLong + "/password", `{"new_password":"a-long-password"}`, 404},
	}
	for _, tc := range cases {
		recorder := asAdmin(handler, tc.method, tc.path, tc.body)
		require.Equal(t, tc.status, recorder.Code, "%s %.40s: %.300s", tc.method, tc.path, recorder.Body.String())
		require.Less(t, recorder.Body.Len(), 400, "%s %.40s: %.300s", tc.method, tc.path, recorder.Body.String())
		require.Contains(t, recorder.Body.String(), `... (`, "%s %.40s says the length", tc.method, tc.path)
	}
	require.Empty(t, backend.changes, "nothing reached the metastore")
}
