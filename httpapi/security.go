package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"narad/auth"
	"narad/meta"
	"narad/msg"
)

// Security wires authentication and the users API into NewHandler
// (WithSecurity). Without it the server has no user routes and checks no
// credentials.
type Security struct {
	// Enabled requires HTTP Basic auth on every route but /healthz,
	// /readyz and /metrics. Disabled, every caller is a nameless root:
	// every check passes and topics get no owner.
	Enabled bool
	// Auth verifies credentials against the users the node published and
	// hashes new passwords; required.
	Auth *auth.Authenticator
	// Users applies user changes; required.
	Users UserChanger
}

// UserChanger applies a user change (meta.PutUser, DeleteUser, SetGrants
// or SetPassword) through the node and returns once it is applied on this
// node, with the node's *msg.Error on failure. The published users then
// include it.
type UserChanger interface {
	ChangeUsers(ctx context.Context, cmd meta.Command) error
}

// HandlerOption configures NewHandler.
type HandlerOption func(*apiHandler)

// WithSecurity turns on the users API and, when s.Enabled, authentication
// and authorization.
func WithSecurity(s Security) HandlerOption {
	assert(s.Auth != nil && s.Users != nil, "WithSecurity needs an authenticator and a user changer")
	return func(h *apiHandler) { h.security = &s }
}

// realm is the challenge of every 401 (docs/api.md#authentication).
const realm = `Basic realm="narad"`

// Messages of the authentication failures (docs/api.md#authentication).
const (
	messageUnauthenticated = "authentication required"
	messageThrottled       = "too many failed authentication attempts"
)

// exemptRoutes need no credentials.
var exemptRoutes = map[string]bool{RouteHealth: true, RouteReady: true, RouteMetrics: true}

// nobody is the caller when security is disabled: every check passes.
var nobody = auth.Identity{Root: true}

// authenticate returns the caller of r, or the answer that refuses it.
func (h *apiHandler) authenticate(r *http.Request, route string) (auth.Identity, *Response) {
	if h.security == nil || !h.security.Enabled || exemptRoutes[route] {
		return nobody, nil
	}
	if len(r.Header.Values("Authorization")) > 1 {
		// one credential per request: which of two the server took would
		// depend on its reading, and a proxy's may differ
		response := jsonResponse(http.StatusBadRequest, errorBody{Error: "the Authorization header is given more than once"})
		return auth.Identity{}, &response
	}
	username, password, ok := r.BasicAuth()
	if !ok {
		return auth.Identity{}, unauthenticated()
	}
	identity, err := h.security.Auth.Verify(r.Context(), auth.SourceOf(r.RemoteAddr), username, password)
	switch {
	case err == nil:
		return identity, nil
	case errors.Is(err, auth.ErrThrottled):
		return auth.Identity{}, h.throttled(err)
	case err == auth.ErrUnauthenticated:
		return auth.Identity{}, unauthenticated()
	case err == auth.ErrNoUsersYet:
		response := unavailable(h.noUsersYet())
		return auth.Identity{}, &response
	}
	response := unavailable("authentication unavailable; retry")
	return auth.Identity{}, &response
}

// noUsersYet says why no user is known: with the node's readiness answer
// when it is not ready, since a node that will not become ready by
// waiting (on another data directory, say) would send its client to
// retry for ever.
func (h *apiHandler) noUsersYet() string {
	if err := h.backend.Ready(); err != nil {
		return auth.ErrNoUsersYet.Error() + "; this node is not ready: " + err.Error()
	}
	return auth.ErrNoUsersYet.Error()
}

// throttled is the 429 of a check refused by an empty bucket of attempts
// (err: the user's or the client address's), with the time to its next
// attempt in Retry-After (whole seconds, rounded up): the refill time of
// the bucket that refused it. The body is the same for both.
func (h *apiHandler) throttled(err error) *Response {
	response := jsonResponse(http.StatusTooManyRequests, errorBody{Error: messageThrottled})
	response.Header = response.Header.Clone() // the JSON header is shared
	seconds := (h.security.Auth.ThrottledFor(err) + time.Second - 1) / time.Second
	response.Header.Set("Retry-After", strconv.Itoa(int(seconds)))
	return &response
}

func unauthenticated() *Response {
	response := jsonResponse(http.StatusUnauthorized, errorBody{Error: messageUnauthenticated})
	response.Header = response.Header.Clone() // the JSON header is shared
	response.Header.Set("WWW-Authenticate", realm)
	return &response
}

// unavailable is a 503 (errorResponse adds its Retry-After).
func unavailable(message string) Response {
	return errorResponse(msg.Unavailable("%s", message))
}

// forbidden is a 403 with its reason.
func forbidden(format string, args ...any) *Response {
	response := errorResponse(msg.Forbidden(format, args...))
	return &response
}

// authorize applies the route rules of docs/api.md#authentication to a
// decoded node request.
func (h *apiHandler) authorize(ctx context.Context, caller auth.Identity, request msg.Request) *Response {
	if caller.Admin() {
		return nil
	}
	switch r := request.(type) {
	case msg.CreateTopic:
		if refused := requireGrant(caller.Allowed(auth.ActionCreate, r.Name), caller, auth.ActionCreate, r.Name); refused != nil {
			return refused
		}
		if refused := requireDeadLetterGrant(caller, r.DeadLetterTopic); refused != nil || r.Parent == "" {
			return refused
		}
		return h.requireOwner(ctx, caller, r.Parent)
	case msg.Produce:
		return requireGrant(caller.Allowed(auth.ActionProduce, r.Topic), caller, auth.ActionProduce, r.Topic)
	case msg.Consume:
		return requireGrant(caller.Allowed(auth.ActionConsume, r.Topic), caller, auth.ActionConsume, r.Topic)
	case msg.Replay:
		return requireGrant(caller.Allowed(auth.ActionConsume, r.Topic), caller, auth.ActionConsume, r.Topic)
	case msg.Ack:
		return requireGrant(caller.Allowed(auth.ActionConsume, r.Topic), caller, auth.ActionConsume, r.Topic)
	case msg.AlterTopic:
		if r.DeadLetterTopic != nil {
			if refused := requireDeadLetterGrant(caller, *r.DeadLetterTopic); refused != nil {
				return refused
			}
		}
		return h.requireOwner(ctx, caller, r.Name)
	case msg.DeleteTopic:
		return h.requireOwner(ctx, caller, r.Name)
	case msg.AttachChild:
		// The parent's records will be written into the child, whose
		// schema the parent then manages: the caller must own both.
		if refused := h.requireOwner(ctx, caller, r.Parent); refused != nil {
			return refused
		}
		return h.requireOwner(ctx, caller, r.Child)
	case msg.DetachChild:
		// Either end may cut the link: a child's owner is never stuck
		// with another user's records.
		if refused := h.requireOwner(ctx, caller, r.Parent); refused == nil {
			return nil
		}
		return h.requireOwner(ctx, caller, r.Child)
	case msg.Decommission:
		return forbidden("user %q is not an admin", caller.Username)
	case nil, msg.ListTopics, msg.GetTopic, msg.ListMembers, msg.ListMoves, msg.ListChildren:
		return nil // nil: the schema read-back, a read like GetTopic
	}
	return forbidden("user %q may not send %T", caller.Username, request)
}

// requireDeadLetterGrant: the owner writes a topic's exhausted records
// into its dead-letter topic on the topic's behalf, so naming one needs
// produce there ("" names none).
func requireDeadLetterGrant(caller auth.Identity, deadLetterTopic string) *Response {
	if deadLetterTopic == "" {
		return nil
	}
	return requireGrant(caller.Allowed(auth.ActionProduce, deadLetterTopic), caller, auth.ActionProduce, deadLetterTopic)
}

// requireGrant is nil when allowed, else the 403 that names what is missing.
func requireGrant(allowed bool, caller auth.Identity, action, topic string) *Response {
	if allowed {
		return nil
	}
	return forbidden("user %q has no %s grant on topic %q", caller.Username, action, topic)
}

// requireOwner lets the topic's owner manage it (admins passed already).
// A topic the node does not know is answered 404 here: passed on, the
// request would be served if another user created the topic before the
// node handled it, and nothing checks the owner after this.
func (h *apiHandler) requireOwner(ctx context.Context, caller auth.Identity, topic string) *Response {
	reply := h.backend.Do(ctx, msg.GetTopic{Name: topic, Partition: 0})
	if reply.Err != nil {
		response := errorResponse(reply.Err)
		return &response
	}
	detail, ok := reply.Result.(msg.TopicDetail)
	if ok && detail.Owner != "" && detail.Owner == caller.Username {
		return nil
	}
	return forbidden("user %q neither owns topic %q nor is an admin", caller.Username, topic)
}

// withCreator records the caller as the owner of a topic it creates.
func withCreator(request msg.Request, caller auth.Identity) msg.Request {
	if create, ok := request.(msg.CreateTopic); ok {
		create.CreatedBy, create.CreatorCreatedAtMs = caller.Username, caller.CreatedAtMs
		return create
	}
	return request
}

// withExpectedOwner guards a change that requireOwner let through for a
// caller who is not an admin: the metastore applies it only while the
// topics it checked are still that caller's. Between the check and the
// apply another user may delete a topic and create it again under its
// name; unguarded, the change would then apply to that user's topic.
func withExpectedOwner(request msg.Request, caller auth.Identity) msg.Request {
	if caller.Admin() {
		return request
	}
	switch r := request.(type) {
	case msg.CreateTopic:
		if r.Parent != "" {
			r.ExpectedOwner = caller.Username
		}
		return r
	case msg.AlterTopic:
		r.ExpectedOwner = caller.Username
		return r
	case msg.DeleteTopic:
		r.ExpectedOwner = caller.Username
		return r
	case msg.AttachChild:
		r.ExpectedOwner = caller.Username
		return r
	case msg.DetachChild:
		r.ExpectedOwner = caller.Username
		return r
	}
	return request
}

// auditDecommission logs a decommission or its cancel that succeeded.
func (h *apiHandler) auditDecommission(request msg.Request, reply msg.Reply, caller auth.Identity) {
	decommission, ok := request.(msg.Decommission)
	if !ok || reply.Err != nil {
		return
	}
	action := "cluster.decommission"
	if decommission.Cancel {
		action = "cluster.decommission.cancel"
	}
	h.audit(action, slog.String("member", decommission.ID), slog.String("by", caller.Username))
}

// audit writes one audit line (component=audit). It never carries a
// password or a hash.
func (h *apiHandler) audit(action string, attrs ...slog.Attr) {
	h.logger.LogAttrs(context.Background(), slog.LevelInfo, action, append([]slog.Attr{slog.String("component", "audit")}, attrs...)...)
}

// authorizeDelivery checks a consume's records against the users view of
// now, before its answer hands them over, and refuses it as the caller's
// next request would be refused (401: the user deleted, created again or
// its password changed; 403: its consume grant revoked) when the caller
// lost the right since it was authenticated: a long poll parks for up to
// the consume wait cap, and took records produced after its user was
// deleted, leased for the visibility timeout to a client that could never
// ack them. The records go back to the node (Backend.HandBack), delivered
// again at once with their delivery uncounted. nil when the answer may go.
func (h *apiHandler) authorizeDelivery(caller auth.Identity, request msg.Request, reply msg.Reply) *Response {
	consume, isConsume := request.(msg.Consume)
	result, delivers := reply.Result.(msg.ConsumeResult)
	if !isConsume || !delivers || len(result.Messages) == 0 || h.security == nil || !h.security.Enabled {
		return nil
	}
	current, holds := h.security.Auth.Current(caller)
	refused := unauthenticated()
	if holds {
		refused = requireGrant(current.Allowed(auth.ActionConsume, consume.Topic), current, auth.ActionConsume, consume.Topic)
	}
	if refused != nil {
		h.backend.HandBack(reply)
	}
	return refused
}
