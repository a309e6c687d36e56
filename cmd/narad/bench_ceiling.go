package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"narad/client"
	"narad/httpserve"
)

// ceilingServerStartTimeout bounds how long bench waits for the ceiling
// server process to print its address; ceilingServerStopTimeout how long
// it waits for that process to exit once told to.
const (
	ceilingServerStartTimeout = 10 * time.Second
	ceilingServerStopTimeout  = 5 * time.Second
	// ceilingServerReadTimeout bounds the reading of one request by the
	// ceiling server (and a connection's idle wait).
	ceilingServerReadTimeout = 10 * time.Second
)

// ceilingServerCommand is the hidden command that runs the ceiling server
// in a process of its own (bench starts it).
const ceilingServerCommand = "bench-ceiling-server"

// ceilingSingleReply and ceilingBatchReply are the bodies of a 202 to a
// single and to a batch produce, shaped like the broker's.
const (
	ceilingSingleReply = `{"partition":0,"offset":0}`
	ceilingBatchReply  = `{"records":[]}`
)

// answerCeiling reads the whole body, as the broker does, and accepts
// without doing anything else: the same client against it measures this
// machine's HTTP ceiling (client, loopback, the broker's own connection
// server, package httpserve), the most any broker on this machine could
// reach with that client shape.
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

// newCeilingServerCommand is the hidden command: serve answerCeiling on a
// loopback port, print its URL on one line, and stop when stdin ends.
func newCeilingServerCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   ceilingServerCommand,
		Short: "Serve the ceiling endpoint of narad bench --ceiling until stdin ends",
		Long: `Serve, on a free loopback port, an endpoint that reads each request and
answers 202 like a produce, print its URL on one line, and exit when
stdin ends. narad bench --ceiling runs it as a child process; it is not
meant to be run by hand.`,
		Example: `  narad bench orders --ceiling   # starts it, measures, stops it`,
		Hidden:  true,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			listener, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			server := httpserve.New(httpserve.Options{Handler: http.HandlerFunc(answerCeiling), ReadTimeout: ceilingServerReadTimeout})
			served := make(chan error, 1)
			go func() { served <- server.Serve(listener) }()
			fmt.Fprintf(a.stdout, "http://%s\n", listener.Addr())
			_, _ = io.Copy(io.Discard, a.stdin) // until the bench closes its end
			err = server.Close()
			if servedErr := <-served; !errors.Is(servedErr, httpserve.ErrServerClosed) {
				err = errors.Join(err, servedErr)
			}
			return err
		},
	}
}

// ceilingProcess is a ceiling server running in a child process, so that
// on a busy machine it gets a process's share of the CPU, as the broker
// does, instead of sharing the bench's.
type ceilingProcess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
}

// startCeilingProcess starts the hidden command of this executable and
// reads the URL it serves.
func startCeilingProcess() (*ceilingProcess, error) {
	executable, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(executable, ceilingServerCommand)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &ceilingProcess{cmd: cmd, stdin: stdin}
	line := make(chan string, 1)
	go func() {
		text, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(text)
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case p.url = <-line:
	case <-time.After(ceilingServerStartTimeout):
	}
	if !strings.HasPrefix(p.url, "http://") {
		return nil, errors.Join(fmt.Errorf("the ceiling server did not start (printed %q)", p.url), p.stop())
	}
	return p, nil
}

// stop tells the child to exit (its stdin ends) and reaps it, killing it
// if it does not exit in time.
func (p *ceilingProcess) stop() error {
	p.stdin.Close()
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	select {
	case err := <-waited:
		return err
	case <-time.After(ceilingServerStopTimeout):
		return errors.Join(p.cmd.Process.Kill(), <-waited)
	}
}

// runCeilingBench runs the produce phase with the same options against a
// ceiling server: a child process (startCeiling is nil), or the server
// startCeiling gives (tests), stopped with the function it returns.
func runCeilingBench(ctx context.Context, topic string, options benchOptions, newHTTPClient func() *http.Client,
	startCeiling func() (string, func() error, error)) (phaseFigures, error) {
	if startCeiling == nil {
		startCeiling = func() (string, func() error, error) {
			p, err := startCeilingProcess()
			if err != nil {
				return "", nil, err
			}
			return p.url, p.stop, nil
		}
	}
	url, stop, err := startCeiling()
	if err != nil {
		return phaseFigures{}, err
	}
	httpClient := newHTTPClient()
	options.phase = "ceiling"
	figures := runProduceBench(ctx, client.New(url, client.WithHTTPClient(httpClient)), topic, options)
	httpClient.CloseIdleConnections()
	return figures, stop()
}
