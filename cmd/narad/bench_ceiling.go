package main

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"narad/client"
)

// ceilingServer is an HTTP server on loopback that answers every request
// as an accepted produce without doing anything else: the same client
// against it measures this machine's HTTP ceiling (client, loopback, Go's
// HTTP server), the most any broker on this machine could reach with that
// client shape.
type ceilingServer struct {
	server   *http.Server
	listener net.Listener
	served   chan error
}

// ceilingSingleReply and ceilingBatchReply are the bodies of a 202 to a
// single and to a batch produce, shaped like the broker's.
const (
	ceilingSingleReply = `{"partition":0,"offset":0}`
	ceilingBatchReply  = `{"records":[]}`
)

func startCeilingServer() (*ceilingServer, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	c := &ceilingServer{listener: listener, served: make(chan error, 1),
		server: &http.Server{Handler: http.HandlerFunc(answerCeiling), ReadHeaderTimeout: 10 * time.Second}}
	go func() { c.served <- c.server.Serve(listener) }()
	return c, nil
}

// answerCeiling reads the whole body, as the broker does, and accepts.
func answerCeiling(w http.ResponseWriter, r *http.Request) {
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	body := ceilingSingleReply
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-ndjson") {
		body = ceilingBatchReply
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, body)
}

func (c *ceilingServer) url() string { return "http://" + c.listener.Addr().String() }

// stop closes the server and every connection at once: the phase is over,
// and a connection the client dialled but never used would hold a
// graceful shutdown for seconds.
func (c *ceilingServer) stop() error {
	err := c.server.Close()
	if served := <-c.served; !errors.Is(served, http.ErrServerClosed) {
		err = errors.Join(err, served)
	}
	return err
}

// runCeilingBench runs the produce phase with the same options against a
// ceiling server started for it.
func runCeilingBench(ctx context.Context, topic string, options benchOptions, newHTTPClient func() *http.Client) (phaseFigures, error) {
	ceiling, err := startCeilingServer()
	if err != nil {
		return phaseFigures{}, err
	}
	httpClient := newHTTPClient()
	figures := runProduceBench(ctx, client.New(ceiling.url(), client.WithHTTPClient(httpClient)), topic, options)
	httpClient.CloseIdleConnections()
	return figures, ceiling.stop()
}
