package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"narad/auth"
	"narad/meta"
	"narad/msg"
)

// createdMeanwhileBackend does not know any topic when asked (GetTopic),
// but serves every other request as if another user had created the
// topic just after: what a node does when the create applies between the
// owner check and the request.
type createdMeanwhileBackend struct {
	instantBackend
	mu     sync.Mutex
	served []msg.Request
}

func (b *createdMeanwhileBackend) Do(_ context.Context, req msg.Request) msg.Reply {
	if get, ok := req.(msg.GetTopic); ok {
		return msg.Reply{Err: msg.NotFound("topic %q not found", get.Name)}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.served = append(b.served, req)
	return msg.Reply{Result: msg.TopicInfo{Name: "alice.t"}}
}

// A user who owns nothing cannot delete, alter, attach to, or make a child
// of a topic the node does not know yet: the owner check answers 404
// itself, so a topic another user creates meanwhile is never changed by
// the request.
func TestOwnerCheckOfAnUnknownTopicAnswers404(t *testing.T) {
	reg := prometheus.NewRegistry()
	authenticator := signInsWithPassword(t, reg,
		meta.User{Username: "bob", Grants: []meta.Grant{{Action: auth.ActionCreate, Patterns: []string{"bob.*"}}}})
	backend := &createdMeanwhileBackend{}
	handler := NewHandler(backend, newTestCodec(), reg, slog.New(slog.DiscardHandler),
		WithSecurity(Security{Enabled: true, Auth: authenticator, Users: instantBackend{}}))
	answers := map[string]string{}
	for _, tc := range []struct{ method, path, body string }{
		{http.MethodDelete, "/v1/topics/alice.t", ""},
		{http.MethodPatch, "/v1/topics/alice.t", `{"retention_ms":1000}`},
		{http.MethodPost, "/v1/topics", `{"name":"bob.spy","parent":"alice.t"}`},
		{http.MethodPost, "/v1/topics/alice.t/children", `{"child":"bob.c"}`},
		{http.MethodDelete, "/v1/topics/alice.t/children/bob.c", ""},
	} {
		request := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
		if tc.body != "" {
			request.Header.Set("Content-Type", "application/json")
		}
		request.SetBasicAuth("bob", "pw")
		recorder := httptest.NewRecorder()
		handler.ServeHTTP(recorder, request)
		answers[tc.method+" "+tc.path+" "+tc.body] = strconv.Itoa(recorder.Code) + " " + recorder.Body.String()
	}
	require.Empty(t, backend.served, "no request reached the node past the owner check")
	for request, answer := range answers {
		require.True(t, strings.HasPrefix(answer, "404 ") && strings.Contains(answer, "not found"), "%s: %s", request, answer)
	}
}

// ownedBackend answers the owner check as if owner owned every topic, and
// records every other request it serves.
type ownedBackend struct {
	instantBackend
	owner  string
	mu     sync.Mutex
	served []msg.Request
}

func (b *ownedBackend) Do(_ context.Context, req msg.Request) msg.Reply {
	if get, ok := req.(msg.GetTopic); ok {
		return msg.Reply{Result: msg.TopicDetail{TopicInfo: msg.TopicInfo{Name: get.Name, Owner: b.owner}}}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.served = append(b.served, req)
	switch req.(type) {
	case msg.DeleteTopic, msg.DetachChild:
		return msg.Reply{}
	}
	return msg.Reply{Result: msg.TopicInfo{Name: "bob.t"}}
}

// expectedOwnerOf returns the owner guard a topic change carries.
func expectedOwnerOf(t *testing.T, req msg.Request) string {
	switch r := req.(type) {
	case msg.CreateTopic:
		return r.ExpectedOwner
	case msg.AlterTopic:
		return r.ExpectedOwner
	case msg.DeleteTopic:
		return r.ExpectedOwner
	case msg.AttachChild:
		return r.ExpectedOwner
	case msg.DetachChild:
		return r.ExpectedOwner
	}
	t.Fatalf("%T is not a topic change", req)
	return ""
}

// A topic change of a caller who is not an admin goes to the node guarded
// by the owner it was checked against, so that the metastore refuses it
// if another user deleted the topic and created it again meanwhile; an
// admin's change, which no owner check stood for, is not guarded.
func TestAnOwnersTopicChangeCarriesTheOwnerItWasCheckedAgainst(t *testing.T) {
	authenticator := signInsWithPassword(t, prometheus.NewRegistry(),
		meta.User{Username: "bob", Grants: []meta.Grant{{Action: auth.ActionCreate, Patterns: []string{"bob.*"}}}},
		meta.User{Username: "root", Root: true})
	changes := []struct{ method, path, body string }{
		{http.MethodDelete, "/v1/topics/bob.t", ""},
		{http.MethodPatch, "/v1/topics/bob.t", `{"retention_ms":1000}`},
		{http.MethodPost, "/v1/topics", `{"name":"bob.child","parent":"bob.t"}`},
		{http.MethodPost, "/v1/topics/bob.t/children", `{"child":"bob.c"}`},
		{http.MethodDelete, "/v1/topics/bob.t/children/bob.c", ""},
	}
	for _, caller := range []struct{ name, guard string }{{"bob", "bob"}, {"root", ""}} {
		backend := &ownedBackend{owner: "bob"}
		handler := NewHandler(backend, newTestCodec(), prometheus.NewRegistry(), slog.New(slog.DiscardHandler),
			WithSecurity(Security{Enabled: true, Auth: authenticator, Users: instantBackend{}}))
		for _, tc := range changes {
			request := httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body))
			if tc.body != "" {
				request.Header.Set("Content-Type", "application/json")
			}
			request.SetBasicAuth(caller.name, "pw")
			recorder := httptest.NewRecorder()
			handler.ServeHTTP(recorder, request)
			require.Less(t, recorder.Code, 300, "%s %s by %s: %s", tc.method, tc.path, caller.name, recorder.Body.String())
		}
		require.Len(t, backend.served, len(changes))
		for _, req := range backend.served {
			require.Equal(t, caller.guard, expectedOwnerOf(t, req), "%T by %s", req, caller.name)
		}
	}
}
