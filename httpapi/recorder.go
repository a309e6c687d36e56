package httpapi

import (
	"bytes"
	"cmp"
	"net/http"
)

// Recorder is an http.ResponseWriter that keeps a handler's answer whole
// in memory: its status, its header and its body. It is for answers whose
// size the caller bounds (a probe's few dozen bytes; a /metrics scrape,
// rendered under its slot and charged to the reply budget before it is
// written), never for a route's.
type Recorder struct {
	header http.Header // made by NewRecorder; the handler fills it
	status int         // 0 until WriteHeader or Write; the first one wins
	body   bytes.Buffer
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{header: http.Header{}} }

func (r *Recorder) Header() http.Header { return r.header }

func (r *Recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *Recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}

// Status is the answer's status: 200 if the handler set none.
func (r *Recorder) Status() int { return cmp.Or(r.status, http.StatusOK) }

// Body is the answer's body as the handler wrote it; the caller must not
// keep it past the Recorder's next Write.
func (r *Recorder) Body() []byte { return r.body.Bytes() }
