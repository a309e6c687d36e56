package httpapi

import (
	"fmt"
	"net/http"

	"narad/msg"
)

// errorEntry is one row of the error registry.
type errorEntry struct {
	status      int
	description string
}

// errorRegistry is the one table from node error codes to HTTP statuses
// (docs/style.md#errors-and-assertions). Every msg.Code has exactly one row;
// a test checks that no code is missing.
var errorRegistry = map[msg.Code]errorEntry{
	msg.CodeInvalid:     {http.StatusBadRequest, "malformed or invalid input"},
	msg.CodeNotFound:    {http.StatusNotFound, "topic or member not found"},
	msg.CodeConflict:    {http.StatusConflict, "conflicts with existing state"},
	msg.CodeGone:        {http.StatusGone, "receipt handle stale or replay offset aged out"},
	msg.CodeTooLarge:    {http.StatusRequestEntityTooLarge, "request over a size limit"},
	msg.CodeNotOwner:    {http.StatusMisdirectedRequest, "partition owned by another node"},
	msg.CodeUnavailable: {http.StatusServiceUnavailable, "temporarily unavailable; retry"},
	msg.CodeInternal:    {http.StatusInternalServerError, "unexpected failure"},
	msg.CodeForbidden:   {http.StatusForbidden, "authenticated but not allowed"},
}

// StatusOf returns the HTTP status of a node error code.
func StatusOf(code msg.Code) int {
	entry, ok := errorRegistry[code]
	assert(ok, "node error code %d has no row in the error registry", code)
	return entry.status
}

// Messages of the decode errors whose wording the compatible API fixes
// (docs/api.md#conventions), as sentinels.
var (
	ErrBodyTooLarge               = msg.TooLarge("request body too large")
	ErrPartitionRequiredForReplay = msg.Invalid("partition required for replay-mode consume")
	ErrReceiptHandleRequired      = msg.Invalid("receipt_handle required")
	ErrReceiptHandleMalformed     = msg.Invalid("receipt handle is malformed")
	ErrInvalidExtend              = msg.Invalid(`invalid extend: want "true" or "1" (renew the lease), "0" (release for redelivery), or "false" or none (ack)`)
	ErrEmptyMessage               = msg.Invalid("message body is empty")
	ErrEmptyBatch                 = msg.Invalid("batch produce has no records")
	ErrAlterNothing               = msg.Invalid("at least one field is required")
)

// errInternalPanic answers a request whose handling panicked.
var errInternalPanic = msg.Internal("internal server panic")

// ErrorResponse is a request that failed before reaching the node. Decode
// builds it; callers only read it. Err and Response agree: Response is
// errorResponse(Err) whenever Err is set.
type ErrorResponse struct {
	// Err is the failure; its code decides the status. It is nil for an
	// answer http.ServeMux wrote itself (404, 405, redirects).
	Err *msg.Error
	// Response is the exact HTTP answer to send.
	Response Response
}

// Status is the HTTP status of the answer.
func (e *ErrorResponse) Status() int { return e.Response.Status }

// Write sends the answer.
func (e *ErrorResponse) Write(w http.ResponseWriter) { e.Response.Write(w) }

// failure wraps a node error as an ErrorResponse.
func failure(err *msg.Error) *ErrorResponse {
	return &ErrorResponse{Err: err, Response: errorResponse(err)}
}

// invalidf builds a 400 decode failure.
func invalidf(format string, args ...any) *ErrorResponse {
	return failure(msg.Invalid(format, args...))
}

// echoBytesMax bounds the client text an error message quotes
// (msg.EchoBytesMax).
const echoBytesMax = msg.EchoBytesMax

// quoteClipped quotes text for an error message, as %q does, keeping at
// most echoBytesMax bytes of it (msg.QuoteClipped).
func quoteClipped[T string | []byte](text T) string { return msg.QuoteClipped(text) }

// clipMessage cuts text that may hold client text whole (a message of
// encoding/json's, a number as written) to at most 2*echoBytesMax bytes,
// marked with "...".
func clipMessage[T string | []byte](text T) string {
	if len(text) <= 2*echoBytesMax {
		return string(text)
	}
	return string(msg.CutAtRune(text, 2*echoBytesMax)) + "..."
}

// assert panics with a message naming what broke when ok is false.
func assert(ok bool, format string, args ...any) {
	if !ok {
		panic("httpapi: " + fmt.Sprintf(format, args...))
	}
}
