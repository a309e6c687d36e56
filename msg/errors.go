package msg

import (
	"fmt"
	"strconv"
	"strings"
)

// Code classifies a request failure. httpapi maps each code to one HTTP
// status; the simulator's clients read the same codes.
type Code int

const (
	CodeInvalid     Code = iota + 1 // bad input: 400
	CodeNotFound                    // topic or member missing: 404
	CodeConflict                    // topic exists: 409
	CodeGone                        // stale receipt, replay aged out: 410
	CodeTooLarge                    // record or batch over a limit: 413
	CodeNotOwner                    // partition owned elsewhere: 421
	CodeUnavailable                 // retryable: 503
	CodeInternal                    // unexpected failure: 500
	CodeForbidden                   // not allowed, whoever asks: 403
)

// Error is a request failure with a message meant for the client.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return e.Message }

func errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Invalid, NotFound, ... build client-facing errors of each code.
func Invalid(format string, args ...any) *Error  { return errorf(CodeInvalid, format, args...) }
func NotFound(format string, args ...any) *Error { return errorf(CodeNotFound, format, args...) }
func Conflict(format string, args ...any) *Error { return errorf(CodeConflict, format, args...) }
func Gone(format string, args ...any) *Error     { return errorf(CodeGone, format, args...) }
func TooLarge(format string, args ...any) *Error { return errorf(CodeTooLarge, format, args...) }
func NotOwner(format string, args ...any) *Error { return errorf(CodeNotOwner, format, args...) }
func Unavailable(format string, args ...any) *Error {
	return errorf(CodeUnavailable, format, args...)
}
func Internal(format string, args ...any) *Error { return errorf(CodeInternal, format, args...) }
func Forbidden(format string, args ...any) *Error {
	return errorf(CodeForbidden, format, args...)
}

// CodeOf returns the code of err, CodeInternal for an error that is not an
// *Error.
func CodeOf(err error) Code {
	if e, ok := err.(*Error); ok {
		return e.Code
	}
	return CodeInternal
}

// BatchRecordPrefix starts the message of an error that refuses record
// index (from 0) of a batch produce: "record N: ", N counted from 1.
// ParseBatchRecordPrefix reads it back, so the HTTP layer can name the
// record's NDJSON line.
func BatchRecordPrefix(index int) string { return fmt.Sprintf("record %d: ", index+1) }

// ParseBatchRecordPrefix splits a message that starts with
// BatchRecordPrefix into the record's index (from 0) and the rest.
func ParseBatchRecordPrefix(message string) (index int, rest string, ok bool) {
	head, rest, found := strings.Cut(message, ": ")
	number, isRecord := strings.CutPrefix(head, "record ")
	if !found || !isRecord {
		return 0, "", false
	}
	n, err := strconv.Atoi(number)
	if err != nil || n < 1 {
		return 0, "", false
	}
	return n - 1, rest, true
}
