package host

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"narad/auth"
)

// rootPassword is the root password of the secured test hosts.
const rootPassword = "root-pw"

// securedHost starts a host with security on, bcrypt at its cheapest, a
// frozen authentication clock (buckets never refill) and the root seeded.
func securedHost(t *testing.T, adminPassword string, logs io.Writer) *Host {
	t.Helper()
	return securedHostAt(t, t.TempDir(), adminPassword, logs)
}

// securedHostAt is securedHost on the data directory dir.
func securedHostAt(t *testing.T, dir, adminPassword string, logs io.Writer) *Host {
	t.Helper()
	return securedHostLogging(t, dir, adminPassword, slog.New(slog.NewTextHandler(logs, nil)))
}

// securedHostLogging is securedHostAt logging to logger.
func securedHostLogging(t *testing.T, dir, adminPassword string, logger *slog.Logger) *Host {
	t.Helper()
	opts := DefaultOptions(dir)
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Codec.ConsumeWaitMaxMs, opts.Node.ConsumeWaitMaxMs = 2_000, 2_000
	frozen := time.Unix(1_700_000_000, 0)
	opts.Security = SecurityOptions{Enabled: true, AdminPassword: adminPassword, Auth: auth.DefaultConfig()}
	opts.Security.Auth.BcryptCost, opts.Security.Auth.Now = bcrypt.MinCost, func() time.Time { return frozen }
	h, err := Start(opts, logger)
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })
	return h
}

// as is an API call made with credentials (user "" sends none).
type as struct {
	user, password string
}

func callAs(t *testing.T, h *Host, who as, c apiCall) (int, string, http.Header) {
	t.Helper()
	return callFrom(t, h, http.DefaultClient, who, c)
}

// callFrom is callAs through client (from another client address, say).
func callFrom(t *testing.T, h *Host, client *http.Client, who as, c apiCall) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(c.method, "http://"+h.Addr()+c.path, strings.NewReader(c.body))
	require.NoError(t, err)
	if c.contentType != "" {
		req.Header.Set("Content-Type", c.contentType)
	}
	if who.user != "" {
		req.SetBasicAuth(who.user, who.password)
	}
	resp, err := client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(body), resp.Header
}

// mustAs sends a call that must answer status.
func mustAs(t *testing.T, h *Host, who as, c apiCall, status int) string {
	t.Helper()
	got, body, _ := callAs(t, h, who, c)
	require.Equal(t, status, got, "%s %s as %q: %s", c.method, c.path, who.user, body)
	return body
}

// waitSeeded waits (a bounded number of polls) until the root user works.
func waitSeeded(t *testing.T, h *Host, root as) {
	t.Helper()
	for range 500 {
		if status, _, _ := callAs(t, h, root, get("/v1/users")); status == http.StatusOK {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("the root user was not seeded")
}

func put(path, body string) apiCall {
	return apiCall{method: http.MethodPut, path: path, contentType: "application/json", body: body}
}

// addUser creates a user as root.
func addUser(t *testing.T, h *Host, name, grants string) as {
	t.Helper()
	mustAs(t, h, as{"admin", rootPassword}, postJSON("/v1/users",
		fmt.Sprintf(`{"username":%q,"password":"pw-%s","grants":%s}`, name, name, grants)), http.StatusCreated)
	return as{name, "pw-" + name}
}

// authzRow is one route: the call a caller makes (built from its name so
// that creations do not collide), an optional setup run as root first,
// and who may do it.
type authzRow struct {
	name    string
	call    func(caller string) apiCall
	setup   func(t *testing.T, h *Host, caller string)
	allowed []string
	exempt  bool
}

func fixed(c apiCall) func(string) apiCall { return func(string) apiCall { return c } }

func authzRows(memberID, handle string) []authzRow {
	admins := []string{"admin2", "admin"}
	everyone := []string{"nobody", "producer", "consumer", "creator", "owner", "admin2", "admin"}
	recreateOwned := func(t *testing.T, h *Host, _ string) {
		if status, _, _ := callAs(t, h, as{"admin", rootPassword}, get("/v1/topics/owned")); status == http.StatusNotFound {
			mustAs(t, h, as{"owner", "pw-owner"}, postJSON("/v1/topics", `{"name":"owned"}`), http.StatusCreated)
		}
	}
	addVictim := func(prefix string) func(t *testing.T, h *Host, caller string) {
		return func(t *testing.T, h *Host, caller string) { addUser(t, h, prefix+caller, `[]`) }
	}
	return []authzRow{
		{name: "create topic", call: func(c string) apiCall { return postJSON("/v1/topics", `{"name":"orders-`+c+`"}`) }, allowed: []string{"creator", "admin2", "admin"}},
		{name: "list topics", call: fixed(get("/v1/topics")), allowed: everyone},
		{name: "get topic", call: fixed(get("/v1/topics/orders")), allowed: everyone},
		{name: "topic schema", call: fixed(get("/v1/topics/orders/schema")), allowed: everyone},
		{name: "alter topic", call: fixed(patch("/v1/topics/owned", `{"retention_ms":7200000}`)), allowed: []string{"owner", "admin2", "admin"}},
		{name: "delete topic", call: fixed(del("/v1/topics/owned")), setup: recreateOwned, allowed: []string{"owner", "admin2", "admin"}},
		{name: "produce", call: fixed(post("/v1/topics/orders/produce", "application/json", `"x"`)), allowed: []string{"producer", "admin2", "admin"}},
		{name: "consume", call: fixed(get("/v1/topics/orders/consume?wait=0")), allowed: []string{"consumer", "admin2", "admin"}},
		{name: "replay", call: fixed(get("/v1/topics/orders/consume?partition=0&offset=0")), allowed: []string{"consumer", "admin2", "admin"}},
		{name: "ack", call: fixed(postJSON("/v1/topics/orders/ack", `{"receipt_handles":["`+handle+`"]}`)), allowed: []string{"consumer", "admin2", "admin"}},
		{name: "create user", call: func(c string) apiCall {
			return postJSON("/v1/users", `{"username":"new-`+c+`","password":"pw","grants":[]}`)
		}, allowed: admins},
		{name: "list users", call: fixed(get("/v1/users")), allowed: admins},
		{name: "get user", call: fixed(get("/v1/users/producer")), allowed: admins},
		{name: "delete user", call: func(c string) apiCall { return del("/v1/users/del-" + c) }, setup: addVictim("del-"), allowed: admins},
		{name: "set grants", call: fixed(put("/v1/users/nobody/grants", `{"grants":[]}`)), allowed: admins},
		{name: "set password", call: func(c string) apiCall {
			return put("/v1/users/pw-"+c+"/password", `{"new_password":"pw2"}`)
		}, setup: addVictim("pw-"), allowed: admins},
		{name: "decommission", call: fixed(postJSON("/v1/cluster/members/ghost/decommission", ``)), allowed: admins},
		{name: "cancel decommission", call: fixed(del("/v1/cluster/members/" + memberID + "/decommission")), allowed: admins},
		{name: "members", call: fixed(get("/v1/cluster/members")), allowed: everyone},
		{name: "moves", call: fixed(get("/v1/cluster/moves")), allowed: everyone},
		{name: "healthz", call: fixed(get("/healthz")), exempt: true},
		{name: "readyz", call: fixed(get("/readyz")), exempt: true},
		{name: "metrics", call: fixed(get("/metrics")), exempt: true},
	}
}

// TestAuthorizationTable: every route against an anonymous caller, a
// wrong password, a user without grants, each grant, a topic owner, an
// admin and the root, through the real handler and node.
func TestAuthorizationTable(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	callers := map[string]as{"admin": root, "anonymous": {}, "wrong-password": {"stranger", "not-it"}}
	for name, grants := range map[string]string{
		"nobody": `[]`, "producer": `[{"action":"produce","patterns":["orders*"]}]`,
		"consumer": `[{"action":"consume","patterns":["orders"]}]`, "creator": `[{"action":"create","patterns":["orders-*"]}]`,
		"owner": `[{"action":"create","patterns":["owned"]}]`, "admin2": `[{"action":"admin"}]`, "stranger": `[]`,
	} {
		if name == "stranger" {
			addUser(t, h, name, grants)
			continue
		}
		callers[name] = addUser(t, h, name, grants)
	}
	mustAs(t, h, root, postJSON("/v1/topics", `{"name":"orders"}`), http.StatusCreated)
	mustAs(t, h, callers["owner"], postJSON("/v1/topics", `{"name":"owned"}`), http.StatusCreated)
	require.Contains(t, mustAs(t, h, root, get("/v1/topics/owned"), http.StatusOK), `"owner":"owner"`, "the creator owns the topic")

	mustAs(t, h, root, post("/v1/topics/orders/produce", "application/json", `"x"`), http.StatusAccepted)
	handle := regexp.MustCompile(`"receipt_handle":"([^"]+)"`).FindStringSubmatch(
		mustAs(t, h, root, get("/v1/topics/orders/consume?wait=1s"), http.StatusOK))
	require.NotNil(t, handle)
	for _, row := range authzRows(h.opts.Node.NodeID, handle[1]) {
		for callerName, caller := range callers {
			if row.setup != nil {
				row.setup(t, h, callerName)
			}
			status, body, header := callAs(t, h, caller, row.call(callerName))
			what := fmt.Sprintf("%s as %s: %d %s", row.name, callerName, status, body)
			switch {
			case row.exempt:
				require.Equal(t, http.StatusOK, status, what)
			case callerName == "wrong-password" && status == http.StatusTooManyRequests:
				// Each user change empties the negative cache, so repeated
				// wrong guesses spend the stranger's tokens until 429.
				require.JSONEq(t, `{"error":"too many failed authentication attempts"}`, body, what)
			case callerName == "anonymous" || callerName == "wrong-password":
				require.Equal(t, http.StatusUnauthorized, status, what)
				require.Equal(t, `Basic realm="narad"`, header.Get("WWW-Authenticate"), what)
				require.JSONEq(t, `{"error":"authentication required"}`, body, what)
			case contains(row.allowed, callerName):
				require.NotContains(t, []int{401, 403, 429}, status, what)
				require.Less(t, status, 500, what)
			default:
				require.Equal(t, http.StatusForbidden, status, what)
			}
		}
	}
}

// TestWritingIntoAnotherUsersTopicNeedsItsGrants: a topic's dead letters
// and a parent's fan-out copies are written into another topic on the
// caller's behalf. Naming a dead-letter topic needs produce there, and
// attaching a child needs owning it as well as the parent; either owner
// may detach. A refused request changes nothing.
func TestWritingIntoAnotherUsersTopicNeedsItsGrants(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	alice := addUser(t, h, "alice", `[{"action":"create","patterns":["alice.*"]},{"action":"produce","patterns":["alice.*"]},{"action":"consume","patterns":["alice.*"]}]`)
	bob := addUser(t, h, "bob", `[{"action":"create","patterns":["bob.*"]},{"action":"produce","patterns":["bob.*"]},{"action":"consume","patterns":["bob.*"]}]`)
	mustAs(t, h, alice, postJSON("/v1/topics", `{"name":"alice.secret"}`), http.StatusCreated)
	mustAs(t, h, bob, postJSON("/v1/topics", `{"name":"bob.parent"}`), http.StatusCreated)
	mustAs(t, h, bob, postJSON("/v1/topics", `{"name":"bob.dead"}`), http.StatusCreated)

	body := mustAs(t, h, bob, postJSON("/v1/topics", `{"name":"bob.q","max_deliveries":1,"dead_letter_topic":"alice.secret"}`), http.StatusForbidden)
	require.Contains(t, body, "has no produce grant on topic", "the refusal names the missing grant")
	mustAs(t, h, root, get("/v1/topics/bob.q"), http.StatusNotFound)
	mustAs(t, h, bob, postJSON("/v1/topics", `{"name":"bob.q"}`), http.StatusCreated)
	mustAs(t, h, bob, patch("/v1/topics/bob.q", `{"max_deliveries":1,"dead_letter_topic":"alice.secret"}`), http.StatusForbidden)
	require.NotContains(t, mustAs(t, h, root, get("/v1/topics/bob.q"), http.StatusOK), "alice.secret", "a refused alter changes nothing")
	mustAs(t, h, bob, patch("/v1/topics/bob.q", `{"max_deliveries":1,"dead_letter_topic":"bob.dead"}`), http.StatusOK)

	mustAs(t, h, bob, postJSON("/v1/topics/bob.parent/children", `{"child":"alice.secret"}`), http.StatusForbidden)
	require.NotContains(t, mustAs(t, h, root, get("/v1/topics/bob.parent"), http.StatusOK), "alice.secret", "a refused attach changes nothing")
	mustAs(t, h, root, postJSON("/v1/topics/bob.parent/children", `{"child":"alice.secret"}`), http.StatusOK)
	mustAs(t, h, alice, del("/v1/topics/bob.parent/children/alice.secret"), http.StatusNoContent)
	require.NotContains(t, mustAs(t, h, root, get("/v1/topics/bob.parent"), http.StatusOK), "alice.secret", "the child's owner detached it")
}

func contains(list []string, item string) bool {
	for _, element := range list {
		if element == item {
			return true
		}
	}
	return false
}

// TestUserRulesAndSecrets: the rules of the users API, and neither a
// password nor its hash in any answer or log line.
func TestUserRulesAndSecrets(t *testing.T) {
	var logs syncBuffer
	h := securedHost(t, rootPassword, &logs)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	admin2 := addUser(t, h, "admin2", `[{"action":"admin"}]`)
	ann := addUser(t, h, "ann", `[{"action":"produce","patterns":["a*"]}]`)

	mustAs(t, h, root, postJSON("/v1/users", `{"username":"ann","password":"x","grants":[]}`), http.StatusConflict)
	mustAs(t, h, root, postJSON("/v1/users", `{"username":"bad name","password":"x","grants":[]}`), http.StatusBadRequest)
	mustAs(t, h, root, postJSON("/v1/users", `{"username":"b","password":"","grants":[]}`), http.StatusBadRequest)
	mustAs(t, h, root, postJSON("/v1/users", `{"username":"b","password":"x","grants":[{"action":"admin","patterns":["a"]}]}`), http.StatusBadRequest)
	mustAs(t, h, root, postJSON("/v1/users", `{"username":"b","password":"x","grants":[{"action":"produce"}]}`), http.StatusBadRequest)
	mustAs(t, h, admin2, postJSON("/v1/users", `{"username":"b","password":"x","grants":[{"action":"admin"}]}`), http.StatusForbidden)
	mustAs(t, h, admin2, put("/v1/users/admin2/grants", `{"grants":[]}`), http.StatusForbidden)
	mustAs(t, h, admin2, put("/v1/users/admin/grants", `{"grants":[]}`), http.StatusForbidden)
	mustAs(t, h, admin2, del("/v1/users/admin"), http.StatusForbidden)
	mustAs(t, h, admin2, del("/v1/users/admin2"), http.StatusForbidden)
	mustAs(t, h, admin2, put("/v1/users/admin/password", `{"new_password":"x"}`), http.StatusForbidden)
	mustAs(t, h, admin2, del("/v1/users/ghost"), http.StatusNotFound)
	mustAs(t, h, root, get("/v1/users/ghost"), http.StatusNotFound)

	missing := mustAs(t, h, ann, put("/v1/users/ann/password", `{"new_password":"pw2"}`), http.StatusBadRequest)
	require.Contains(t, missing, "current_password is required")
	mustAs(t, h, ann, put("/v1/users/ann/password", `{"current_password":"wrong","new_password":"pw2"}`), http.StatusForbidden)
	mustAs(t, h, ann, put("/v1/users/ann/password", `{"current_password":"pw-ann","new_password":"pw2"}`), http.StatusNoContent)
	mustAs(t, h, ann, get("/v1/topics"), http.StatusUnauthorized)
	mustAs(t, h, as{"ann", "pw2"}, get("/v1/topics"), http.StatusOK)
	mustAs(t, h, admin2, put("/v1/users/ann/password", `{"new_password":"pw3"}`), http.StatusNoContent)
	mustAs(t, h, as{"ann", "pw2"}, get("/v1/topics"), http.StatusUnauthorized)
	body := mustAs(t, h, root, put("/v1/users/ann/grants", `{"grants":[{"action":"consume","patterns":["b"]}]}`), http.StatusOK)
	require.Contains(t, body, `"grants":[{"action":"consume","patterns":["b"]}]`)
	for _, missing := range []string{`{}`, `{"grants":null}`} {
		refused := mustAs(t, h, root, put("/v1/users/ann/grants", missing), http.StatusBadRequest)
		require.Contains(t, refused, `\"grants\" is required`)
	}
	require.Contains(t, mustAs(t, h, root, get("/v1/users/ann"), http.StatusOK), `"grants":[{"action":"consume","patterns":["b"]}]`,
		"a body without grants changed nothing")
	require.Contains(t, mustAs(t, h, root, put("/v1/users/ann/grants", `{"grants":[]}`), http.StatusOK), `"grants":[]`, "[] takes every grant away")
	mustAs(t, h, root, put("/v1/users/ann/grants", `{"grants":[{"action":"consume","patterns":["b"]}]}`), http.StatusOK)
	mustAs(t, h, as{"ann", "pw3"}, post("/v1/topics/a1/produce", "application/json", `"x"`), http.StatusForbidden)

	list := mustAs(t, h, root, get("/v1/users"), http.StatusOK)
	require.Contains(t, list, `"username":"admin","grants":[],"root":true`)
	metrics := mustAs(t, h, as{}, get("/metrics"), http.StatusOK)
	require.Contains(t, metrics, `narad_auth_attempts_total{result="cached"}`)
	for _, secret := range []string{"pw-ann", "pw2", "pw3", rootPassword, "$2a$", "password_hash"} {
		require.NotContains(t, list, secret)
		require.NotContains(t, metrics, secret)
		require.NotContains(t, logs.String(), secret, "the log never carries a password or a hash")
	}
	for _, action := range []string{"user.create", "user.password", "user.grants"} {
		require.Regexp(t, `msg=`+regexp.QuoteMeta(action)+` component=audit`, logs.String())
	}
	mustAs(t, h, root, del("/v1/users/ann"), http.StatusNoContent)
	mustAs(t, h, root, del("/v1/cluster/members/"+h.opts.Node.NodeID+"/decommission"), http.StatusNoContent)
	require.Contains(t, logs.String(), "msg=user.delete component=audit")
	require.Contains(t, logs.String(), "msg=cluster.decommission.cancel component=audit")
}

// TestBruteForceIsThrottled: 100 wrong passwords for one user at once
// cost BucketBurst bcrypt runs, answer 401 then 429, and leave another
// user's right password working.
func TestBruteForceIsThrottled(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	waitSeeded(t, h, as{"admin", rootPassword})
	addUser(t, h, "ann", `[]`)
	bob := addUser(t, h, "bob", `[]`)
	authenticator := h.loop.authenticator
	before := authenticator.VerifyRuns()

	statuses := make(chan int, 100)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Go(func() {
			status, _, _ := callAs(t, h, as{"ann", fmt.Sprintf("guess-%d", i)}, get("/v1/topics"))
			statuses <- status
		})
	}
	wg.Wait()
	close(statuses)
	counts := map[int]int{}
	for status := range statuses {
		counts[status]++
	}
	burst := auth.DefaultConfig().BucketBurst
	require.Equal(t, map[int]int{http.StatusUnauthorized: burst, http.StatusTooManyRequests: 100 - burst}, counts)
	require.Equal(t, uint64(burst), authenticator.VerifyRuns()-before, "bcrypt ran once per token, never for a throttled attempt")
	mustAs(t, h, bob, get("/v1/topics"), http.StatusOK)
	status, _, header := callAs(t, h, as{"ann", "pw-ann"}, get("/v1/topics"))
	require.Equal(t, http.StatusTooManyRequests, status)
	require.Equal(t, "12", header.Get("Retry-After"), "the time a token takes to come back")
}

// TestGeneratedRootPasswordLoggedOnce: without NARAD_ADMIN_PASSWORD the
// seeded root's random password is logged once, as an audit warning, and
// works.
func TestGeneratedRootPasswordLoggedOnce(t *testing.T) {
	var logs syncBuffer
	h := securedHost(t, "", &logs)
	password := loggedRootPassword(t, &logs, "WARN")
	require.Equal(t, 1, strings.Count(logs.String(), password))
	mustAs(t, h, as{"admin", password}, get("/v1/users"), http.StatusOK)
}

// With log.level error, which hides warnings, the generated password is
// still logged, as an error: it is shown nowhere else, and a node started
// so had a root nobody could log in as (first-day operator audit).
func TestGeneratedRootPasswordSurvivesLogLevelError(t *testing.T) {
	var logs syncBuffer
	h := securedHostLogging(t, t.TempDir(), "", slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError})))
	password := loggedRootPassword(t, &logs, "ERROR")
	mustAs(t, h, as{"admin", password}, get("/v1/users"), http.StatusOK)
}

// loggedRootPassword waits for the audit line of the root's generated
// password, at level, and returns the password.
func loggedRootPassword(t *testing.T, logs *syncBuffer, level string) string {
	t.Helper()
	line := regexp.MustCompile(`level=` + level + ` msg="root user seeded[^\n]*component=audit[^\n]*password=([A-Za-z0-9_-]+)`)
	for range 500 {
		if match := line.FindStringSubmatch(logs.String()); match != nil {
			require.Len(t, match[1], 32, "192 bits in URL-safe base64")
			return match[1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.Failf(t, "no password logged", "at level %s: %s", level, logs.String())
	return ""
}

// External audit finding 4: NARAD_ADMIN_PASSWORD set on a node whose
// users already hold the root was ignored without a word. A restart with
// it set (another password) logs one line saying so, never the
// password; the root keeps its password.
func TestAdminPasswordIgnoredOnceARootExistsIsLogged(t *testing.T) {
	dir := t.TempDir()
	var first syncBuffer
	h := securedHostAt(t, dir, rootPassword, &first)
	waitSeeded(t, h, as{"admin", rootPassword})
	require.NotContains(t, first.String(), "NARAD_ADMIN_PASSWORD ignored", "the seed was used")
	require.NoError(t, h.Shutdown())

	var logs syncBuffer
	restarted := securedHostAt(t, dir, "another-pw", &logs)
	require.Equal(t, 1, strings.Count(logs.String(), "NARAD_ADMIN_PASSWORD ignored"), logs.String())
	require.Contains(t, logs.String(), "level=WARN")
	require.NotContains(t, logs.String(), "another-pw")
	mustAs(t, restarted, as{"admin", rootPassword}, get("/v1/users"), http.StatusOK)
	mustAs(t, restarted, as{"admin", "another-pw"}, get("/v1/users"), http.StatusUnauthorized)
	require.NoError(t, restarted.Shutdown())

	var same syncBuffer // narad cluster up, or a deployment, sets the same password at every start
	again := securedHostAt(t, dir, rootPassword, &same)
	mustAs(t, again, as{"admin", rootPassword}, get("/v1/users"), http.StatusOK)
	require.NotContains(t, same.String(), "NARAD_ADMIN_PASSWORD ignored", "the root's own password is no news")
}

// TestHTTPOverTLS serves the API with a certificate the test makes.
func TestHTTPOverTLS(t *testing.T) {
	certFile, keyFile, pool := writeCertificate(t)
	opts := DefaultOptions(t.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	opts.Security.TLSCertFile, opts.Security.TLSKeyFile = certFile, keyFile
	h, err := Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Shutdown() })

	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := client.Get("https://" + h.Addr() + "/healthz")
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = http.Get("http://" + h.Addr() + "/healthz")
	if err == nil {
		resp.Body.Close()
		require.Equal(t, http.StatusBadRequest, resp.StatusCode, "plain HTTP to a TLS listener is refused")
	}

	opts.Security.TLSKeyFile = filepath.Join(t.TempDir(), "missing.pem")
	opts.DataDir = t.TempDir()
	_, err = Start(opts, slog.New(slog.NewTextHandler(io.Discard, nil)))
	require.ErrorContains(t, err, "http.tls_key_file (NARAD_HTTP_TLS_KEY_FILE): open "+opts.Security.TLSKeyFile)
}

// writeCertificate writes a self-signed certificate for 127.0.0.1.
func writeCertificate(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "narad test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	require.NoError(t, err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	certificate, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	pool = x509.NewCertPool()
	pool.AddCert(certificate)
	return certFile, keyFile, pool
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu     sync.Mutex
	buffer bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buffer.String()
}

// Property: listing the users holds its reply's bytes from the reply
// budget only while the reply is written: after any number of lists the
// budget holds nothing (a list that kept its bytes filled the budget, and
// every consume was then refused until a restart).
func TestListingUsersGivesItsReplyBytesBack(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	for range 5 {
		mustAs(t, h, root, get("/v1/users"), http.StatusOK)
	}
	metrics := mustAs(t, h, root, get("/metrics"), http.StatusOK)
	held := regexp.MustCompile(`(?m)^narad_http_reply_bytes_in_flight (\S+)$`).FindStringSubmatch(metrics)
	require.Len(t, held, 2, "the reply budget's gauge is exported")
	require.Equal(t, "0", held[1], "reply bytes still held after every list was written")
}

// A long poll parked before its user was deleted, its password changed
// or its consume grant revoked took the record produced after: 200 with a
// receipt handle its client could no longer use, the record leased to it
// for the visibility timeout. It is answered as its next request would be
// (401, 403), and its record goes back, delivered again at once with its
// delivery uncounted.
func TestAParkedPollWhoseUserLostTheRightGetsNoRecord(t *testing.T) {
	h := securedHost(t, rootPassword, io.Discard)
	root := as{"admin", rootPassword}
	waitSeeded(t, h, root)
	mustAs(t, h, root, postJSON("/v1/topics", `{"name":"q"}`), http.StatusCreated)
	for _, c := range []struct {
		name    string
		change  func(user string) apiCall
		changed int // the change's own answer
		status  int
	}{
		{"deleted", func(user string) apiCall { return del("/v1/users/" + user) }, http.StatusNoContent, http.StatusUnauthorized},
		{"password", func(user string) apiCall { return put("/v1/users/"+user+"/password", `{"new_password":"another-pw"}`) },
			http.StatusNoContent, http.StatusUnauthorized},
		{"revoked", func(user string) apiCall { return put("/v1/users/"+user+"/grants", `{"grants":[]}`) }, http.StatusOK, http.StatusForbidden},
	} {
		t.Run(c.name, func(t *testing.T) {
			who := addUser(t, h, "u-"+c.name, `[{"action":"consume","patterns":["q"]}]`)
			answered := make(chan int, 1)
			go func() {
				req, err := http.NewRequest(http.MethodGet, "http://"+h.Addr()+"/v1/topics/q/consume?wait=2s", nil)
				if err != nil {
					answered <- 0
					return
				}
				req.SetBasicAuth(who.user, who.password)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- 0
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				answered <- resp.StatusCode
			}()
			time.Sleep(300 * time.Millisecond) // for the order only: the poll is authenticated and parked first
			mustAs(t, h, root, c.change(who.user), c.changed)
			mustAs(t, h, root, post("/v1/topics/q/produce?partition=0", "text/plain", "for-"+c.name), http.StatusAccepted)
			require.Equal(t, c.status, <-answered, "the parked poll of a user that lost the right")
			body := mustAs(t, h, root, get("/v1/topics/q/consume?partition=0"), http.StatusOK)
			require.Contains(t, body, "for-"+c.name, "the record is delivered again at once")
			require.Contains(t, body, `"delivery_count":1`, "its refused delivery is uncounted")
			var message struct {
				ReceiptHandle string `json:"receipt_handle"`
			}
			require.NoError(t, json.Unmarshal([]byte(body), &message))
			mustAs(t, h, root, post("/v1/topics/q/ack?receipt_handle="+message.ReceiptHandle, "", ""), http.StatusNoContent)
		})
	}
}
