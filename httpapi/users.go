package httpapi

import (
	"errors"
	"log/slog"
	"net/http"

	"narad/auth"
	"narad/meta"
	"narad/msg"
)

// Routes of the users API (docs/api.md#users), served by the handler itself
// when WithSecurity was given.
const (
	RouteCreateUser  = "POST /v1/users"
	RouteListUsers   = "GET /v1/users"
	RouteGetUser     = "GET /v1/users/{username}"
	RouteDeleteUser  = "DELETE /v1/users/{username}"
	RouteSetGrants   = "PUT /v1/users/{username}/grants"
	RouteSetPassword = "PUT /v1/users/{username}/password"
)

// userRoutes are the routes serveUsers answers.
var userRoutes = map[string]bool{RouteCreateUser: true, RouteListUsers: true, RouteGetUser: true,
	RouteDeleteUser: true, RouteSetGrants: true, RouteSetPassword: true}

// userBody is a user as the API shows it: never its password or hash.
type userBody struct {
	Username    string       `json:"username"`
	Grants      []meta.Grant `json:"grants"`
	Root        bool         `json:"root"`
	CreatedAtMs int64        `json:"created_at_ms"`
	UpdatedAtMs int64        `json:"updated_at_ms"`
}

func showUser(user meta.User) userBody {
	return userBody{Username: user.Username, Grants: nonNil(user.Grants), Root: user.Root,
		CreatedAtMs: user.CreatedAtMs, UpdatedAtMs: user.UpdatedAtMs}
}

// createUserBody is the body of POST /v1/users.
type createUserBody struct {
	Username string       `json:"username"`
	Password string       `json:"password"`
	Grants   []meta.Grant `json:"grants"`
}

// grantsBody is the body of PUT /v1/users/{username}/grants. Grants is
// required: nil when absent or null, an empty list for none.
type grantsBody struct {
	Grants []meta.Grant `json:"grants"`
}

// passwordBody is the body of PUT /v1/users/{username}/password.
type passwordBody struct {
	CurrentPassword string `json:"current_password"`
	NewPassword     string `json:"new_password"`
}

// serveUsers answers a route of the users API.
func (h *apiHandler) serveUsers(r *http.Request, route string, caller auth.Identity) Response {
	if h.security == nil {
		return errorResponse(msg.NotFound("the users API is not served here"))
	}
	if route == RouteSetPassword {
		return h.setPassword(r, caller)
	}
	if !caller.Admin() {
		return *forbidden("user %q is not an admin", caller.Username)
	}
	switch route {
	case RouteCreateUser:
		return h.createUser(r, caller)
	case RouteListUsers:
		users := h.security.Auth.Users().List()
		shown := make([]userBody, 0, len(users))
		for _, user := range users {
			shown = append(shown, showUser(user))
		}
		return h.holdReply(jsonResponse(http.StatusOK, shown))
	case RouteGetUser:
		return h.getUser(r.PathValue("username"))
	case RouteDeleteUser:
		return h.deleteUser(r, caller)
	}
	return h.setGrants(r, caller)
}

func (h *apiHandler) getUser(username string) Response {
	user, found := h.security.Auth.Users().User(username)
	if !found {
		return userNotFound(username)
	}
	return jsonResponse(http.StatusOK, showUser(user))
}

func (h *apiHandler) createUser(r *http.Request, caller auth.Identity) Response {
	var body createUserBody
	if failed := h.codec.readJSONBody(r, &body); failed != nil {
		return failed.Response
	}
	if failed := checkUserInput(body.Username, body.Grants); failed != nil {
		return *failed
	}
	if conferred := h.mayConfer(caller, body.Grants); conferred != nil {
		return *conferred
	}
	hash, failed := h.hash(r, caller, body.Password)
	if failed != nil {
		return *failed
	}
	cmd := meta.PutUser{Username: body.Username, PasswordHash: hash, Grants: body.Grants, CreateOnly: true, NameFoldChecked: true}
	if err := h.security.Users.ChangeUsers(r.Context(), cmd); err != nil {
		return errorResponse(err)
	}
	h.audit("user.create", slog.String("user", body.Username), slog.String("by", caller.Username), slog.Any("grants", nonNil(body.Grants)))
	return h.userAfterChange(http.StatusCreated, body.Username)
}

func (h *apiHandler) deleteUser(r *http.Request, caller auth.Identity) Response {
	username := r.PathValue("username")
	user, found := h.security.Auth.Users().User(username)
	if !found && auth.ValidUsername(username) != nil {
		return userNotFound(username) // none can exist; the metastore's answer would quote the name whole
	}
	if found && user.Root {
		return *forbidden("the root user cannot be deleted")
	}
	if username == caller.Username {
		return *forbidden("a user cannot delete itself")
	}
	if err := h.security.Users.ChangeUsers(r.Context(), meta.DeleteUser{Username: username, UserCreatedAtMs: user.CreatedAtMs}); err != nil {
		return errorResponse(err)
	}
	h.audit("user.delete", slog.String("user", username), slog.String("by", caller.Username))
	return noContent()
}

func (h *apiHandler) setGrants(r *http.Request, caller auth.Identity) Response {
	username := r.PathValue("username")
	var body grantsBody
	if failed := h.codec.readJSONBody(r, &body); failed != nil {
		return failed.Response
	}
	if body.Grants == nil {
		// an empty body or a misspelt field would otherwise take every
		// grant away
		return errorResponse(msg.Invalid(`"grants" is required: the full list of the user's grants, [] for none`))
	}
	if failed := checkUserInput(username, body.Grants); failed != nil {
		return *failed
	}
	user, found := h.security.Auth.Users().User(username)
	switch {
	case found && user.Root:
		return *forbidden("the root user's grants cannot be changed")
	case username == caller.Username:
		return *forbidden("a user cannot change its own grants")
	}
	if conferred := h.mayConfer(caller, body.Grants); conferred != nil {
		return *conferred
	}
	if err := h.security.Users.ChangeUsers(r.Context(), meta.SetGrants{Username: username, Grants: body.Grants, UserCreatedAtMs: user.CreatedAtMs}); err != nil {
		return errorResponse(err)
	}
	h.audit("user.grants", slog.String("user", username), slog.String("by", caller.Username), slog.Any("grants", nonNil(body.Grants)))
	return h.userAfterChange(http.StatusOK, username)
}

// setPassword changes a password: a user its own with the current one,
// an admin another's (only the root the root's).
func (h *apiHandler) setPassword(r *http.Request, caller auth.Identity) Response {
	username := r.PathValue("username")
	var body passwordBody
	if failed := h.codec.readJSONBody(r, &body); failed != nil {
		return failed.Response
	}
	target, found := h.security.Auth.Users().User(username)
	self := username == caller.Username
	switch {
	case !self && !caller.Admin():
		return *forbidden("user %q may change only its own password", caller.Username)
	case found && target.Root && !caller.Root:
		return *forbidden("only the root user changes its password")
	case !found:
		return userNotFound(username)
	}
	if self && h.security.Enabled {
		if failed := h.checkCurrent(r, username, body.CurrentPassword); failed != nil {
			return *failed
		}
	}
	hash, failed := h.hash(r, caller, body.NewPassword)
	if failed != nil {
		return *failed
	}
	if err := h.security.Users.ChangeUsers(r.Context(), meta.SetPassword{Username: username, PasswordHash: hash, UserCreatedAtMs: target.CreatedAtMs}); err != nil {
		return errorResponse(err)
	}
	h.audit("user.password", slog.String("user", username), slog.String("by", caller.Username))
	return noContent()
}

// checkCurrent verifies the current password of a self-service change.
func (h *apiHandler) checkCurrent(r *http.Request, username, current string) *Response {
	if current == "" {
		response := errorResponse(msg.Invalid("current_password is required to change your own password"))
		return &response
	}
	_, err := h.security.Auth.Verify(r.Context(), auth.SourceOf(r.RemoteAddr), username, current)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, auth.ErrThrottled):
		return h.throttled(err)
	case errors.Is(err, auth.ErrUnauthenticated):
		return forbidden("current_password is wrong")
	}
	response := unavailable("authentication unavailable; retry")
	return &response
}

// mayConfer applies the delegation rule: only the root confers admin,
// others only what they hold.
func (h *apiHandler) mayConfer(caller auth.Identity, grants []meta.Grant) *Response {
	for _, grant := range grants {
		if grant.Action == auth.ActionAdmin && !caller.Root {
			return forbidden("only the root user grants admin")
		}
	}
	if !caller.Root && !auth.Covers(caller.Grants, grants) {
		return forbidden("user %q cannot grant what it does not hold", caller.Username)
	}
	return nil
}

// hash hashes a new password for caller, after caller's earlier hashes
// (400 when empty or too long).
func (h *apiHandler) hash(r *http.Request, caller auth.Identity, password string) ([]byte, *Response) {
	hash, err := h.security.Auth.HashPassword(r.Context(), caller.Username, password)
	switch {
	case err == nil:
		return hash, nil
	case errors.Is(err, auth.ErrPasswordInvalid):
		response := errorResponse(msg.Invalid("%v", err))
		return nil, &response
	}
	response := unavailable("password hashing unavailable; retry")
	return nil, &response
}

// checkUserInput validates a username and a grant list (400).
func checkUserInput(username string, grants []meta.Grant) *Response {
	err := auth.ValidUsername(username)
	if err == nil {
		err = auth.ValidGrants(grants)
	}
	if err != nil {
		response := errorResponse(msg.Invalid("%v", err))
		return &response
	}
	return nil
}

// userNotFound answers 404 for a user, quoting at most echoBytesMax
// bytes of a name from the client.
func userNotFound(username string) Response {
	return errorResponse(msg.NotFound("user %s not found", quoteClipped(username)))
}

// userAfterChange answers with the user as published after the change.
func (h *apiHandler) userAfterChange(status int, username string) Response {
	user, found := h.security.Auth.Users().User(username)
	if !found {
		return userNotFound(username)
	}
	return jsonResponse(status, showUser(user))
}
