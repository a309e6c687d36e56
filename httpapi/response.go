package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"narad/msg"
)

// Response is a complete HTTP answer, built without a ResponseWriter so
// that the simulator can read it. Encode and Decode build it; nothing
// changes it afterwards.
type Response struct {
	// Status is the HTTP status code.
	Status int
	// Header holds the headers to send (Content-Type at least when Body is
	// not empty). It may be shared between responses (jsonHeader): never
	// change it; add to a Clone.
	Header http.Header
	// Body is sent as is; empty for 204.
	Body []byte
	// held is what the response took from the reply budget
	// (budgetReply), given back once it is written; 0 for the rest.
	held int64
}

// Write sends the response.
func (r Response) Write(w http.ResponseWriter) {
	for name, values := range r.Header {
		w.Header()[name] = values
	}
	if len(r.Body) > 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(r.Body)))
	}
	w.WriteHeader(r.Status)
	if len(r.Body) > 0 {
		// A failed write means the client went away; there is no one left
		// to tell.
		_, _ = w.Write(r.Body)
	}
}

// noContent is a 204 without body.
func noContent() Response {
	return Response{Status: http.StatusNoContent, Header: http.Header{}}
}

// jsonResponse encodes value as the JSON body of a response.
func jsonResponse(status int, value any) Response {
	return rawJSONResponse(status, marshalJSON(value))
}

// jsonHeader is the header of every JSON response but a 503, shared by
// all of them (no map to build per response); nothing changes it.
var jsonHeader = http.Header{"Content-Type": {"application/json"}}

// rawJSONResponse sends already encoded JSON followed by a newline. A 503
// carries Retry-After.
func rawJSONResponse(status int, body []byte) Response {
	header := jsonHeader
	if status == http.StatusServiceUnavailable {
		header = http.Header{"Content-Type": {"application/json"}, "Retry-After": {strconv.Itoa(RetryAfterSeconds)}}
	}
	return Response{Status: status, Header: header, Body: append(body, '\n')}
}

// errorBody is the JSON shape of every error (docs/api.md#conventions).
type errorBody struct {
	Error string `json:"error"`
}

// errorResponse answers a failed request with the status of its code.
func errorResponse(err error) Response {
	return jsonResponse(StatusOf(msg.CodeOf(err)), errorBody{Error: err.Error()})
}

// RetryAfterSeconds is the Retry-After of every 503: a retryable failure
// (an owner down or silent, a partition handed over, a cap reached)
// usually clears within a second or two.
const RetryAfterSeconds = 1

// marshalJSON encodes value without HTML escaping and without a trailing
// newline. Every value given to it is one of this package's reply shapes,
// which always encode.
func marshalJSON(value any) []byte {
	var buffer bytes.Buffer
	encoder := json.NewEncoder(&buffer)
	encoder.SetEscapeHTML(false)
	err := encoder.Encode(value)
	assert(err == nil, "encoding a %T reply: %v", value, err)
	return bytes.TrimSuffix(buffer.Bytes(), []byte("\n"))
}
