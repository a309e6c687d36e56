package wire

import (
	"unicode/utf8"

	"narad/msg"
)

// errorMessageCutSuffix ends an error text cut at ErrorMessageBytesMax.
const errorMessageCutSuffix = " [cut]"

// reply writes a reply: its id, its error and its tagged result. Err and
// Result are written independently, so a reply decodes to exactly what was
// encoded even if a buggy sender set both.
func (e *encoder) reply(r *msg.Reply) {
	e.uvarint(uint64(r.ID))
	e.error(r.Err)
	e.result(r.Result)
}

func (d *decoder) reply() msg.Reply {
	return msg.Reply{ID: msg.RequestID(d.uvarint()), Err: d.error(), Result: d.result()}
}

// error writes a presence flag and, for a non-nil error, its code and
// text. An error that is not a *msg.Error is written as CodeInternal
// with its text, which is what msg.CodeOf makes of it.
func (e *encoder) error(err error) {
	e.bool(err != nil)
	if err == nil {
		return
	}
	code, message := msg.CodeInternal, err.Error()
	if nodeError, ok := err.(*msg.Error); ok {
		code = nodeError.Code
	}
	if !validCode(code) {
		assert(false, "error code %d is not one of CodeInvalid..CodeForbidden (message %q)", code, message)
	}
	e.uvarint(uint64(code))
	e.string(cutErrorMessage(message), errorMessageLimit)
}

// error reads an optional error; a present one is always a *msg.Error.
func (d *decoder) error() error {
	if !d.bool() {
		return nil
	}
	code := msg.Code(d.uvarint())
	message := d.string(errorMessageLimit)
	if d.err == nil && !validCode(code) {
		d.malformed("error code %d is not one of CodeInvalid..CodeForbidden", code)
	}
	if d.err != nil {
		return nil
	}
	return &msg.Error{Code: code, Message: message}
}

// validCode reports a code msg defines. CodeForbidden is the last one;
// wire_test fails if msg adds a code after it.
func validCode(code msg.Code) bool { return code >= msg.CodeInvalid && code <= msg.CodeForbidden }

// cutErrorMessage returns message, cut to ErrorMessageBytesMax at a UTF-8
// boundary and marked with errorMessageCutSuffix if it is longer.
func cutErrorMessage(message string) string {
	if len(message) <= ErrorMessageBytesMax {
		return message
	}
	cut := ErrorMessageBytesMax - len(errorMessageCutSuffix)
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + errorMessageCutSuffix
}
