package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"narad/client"
)

// countingServer is an httptest server that counts the connections it
// accepted.
func countingServer(t *testing.T, handler http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var accepted atomic.Int64
	server := httptest.NewUnstartedServer(handler)
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			accepted.Add(1)
		}
	}
	server.Start()
	t.Cleanup(server.Close)
	return server, &accepted
}

func leanGet(t *testing.T, client *http.Client, url string) (int, string) {
	t.Helper()
	response, err := client.Get(url)
	require.NoError(t, err)
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	return response.StatusCode, string(body)
}

func TestLeanTransportKeepsOneConnectionAliveForSequentialRequests(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.RequestURI(), body)
	})
	client := &http.Client{Transport: newLeanTransport(4)}
	for i := range 20 {
		response, err := client.Post(server.URL+fmt.Sprintf("/p?i=%d", i), "text/plain", strings.NewReader("body"))
		require.NoError(t, err)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		require.NoError(t, response.Body.Close())
		assert.Equal(t, fmt.Sprintf("POST /p?i=%d body", i), string(body))
	}
	assert.EqualValues(t, 1, accepted.Load(), "every request after the first reuses the kept-alive connection")
}

func TestLeanTransportServesConcurrentRequestsOnePerConnection(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Query().Get("id"), "0") {
			w.WriteHeader(http.StatusNoContent) // released at once, without a body to read
			return
		}
		fmt.Fprint(w, r.URL.Query().Get("id"))
	})
	const workers, each, idleMax = 8, 25, 8
	transport := newLeanTransport(idleMax)
	client := &http.Client{Transport: transport}
	var wrong atomic.Int64
	var group sync.WaitGroup
	for worker := range workers {
		group.Go(func() {
			for i := range each {
				id := fmt.Sprintf("%d-%d", worker, i)
				response, err := client.Get(server.URL + "/?id=" + id)
				if err != nil {
					wrong.Add(1)
					continue
				}
				body, err := io.ReadAll(response.Body)
				response.Body.Close()
				want := id
				if strings.HasSuffix(id, "0") {
					want = ""
				}
				if err != nil || string(body) != want {
					wrong.Add(1)
				}
			}
		})
	}
	group.Wait()
	assert.Zero(t, wrong.Load(), "each answer reaches the request that asked for it")
	assert.LessOrEqual(t, accepted.Load(), int64(workers), "at most one connection per concurrent request")
	transport.mu.Lock()
	pooled := len(transport.idle[strings.TrimPrefix(server.URL, "http://")])
	transport.mu.Unlock()
	assert.LessOrEqual(t, pooled, idleMax)
	assert.Positive(t, pooled)
	transport.CloseIdleConnections()
	transport.mu.Lock()
	assert.Empty(t, transport.idle)
	transport.mu.Unlock()
}

func TestLeanTransportPoolsNoMoreThanIdleMax(t *testing.T) {
	release := make(chan struct{})
	const concurrent = 5
	arrived := make(chan struct{}, concurrent)
	server, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		fmt.Fprint(w, "ok")
	})
	transport := newLeanTransport(2)
	client := &http.Client{Transport: transport}
	failed := make(chan error, concurrent)
	var group sync.WaitGroup
	for range concurrent {
		group.Go(func() {
			response, err := client.Get(server.URL)
			if err != nil {
				failed <- err
				return
			}
			body, err := io.ReadAll(response.Body)
			response.Body.Close()
			assert.NoError(t, err)
			assert.Equal(t, "ok", string(body))
		})
	}
	for range concurrent { // five connections open at once
		select {
		case <-arrived:
		case err := <-failed:
			close(release)
			t.Fatalf("a request failed: %v", err)
		}
	}
	close(release)
	group.Wait()
	transport.mu.Lock()
	defer transport.mu.Unlock()
	assert.Len(t, transport.idle[strings.TrimPrefix(server.URL, "http://")], 2, "the connections beyond idleMax are closed")
}

func TestLeanTransportOpensANewConnectionWhenTheServerClosesIt(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		fmt.Fprint(w, "bye")
	})
	client := &http.Client{Transport: newLeanTransport(4)}
	for range 3 { // a POST is not sent twice: reusing a closed connection would fail it
		response, err := client.Post(server.URL, "text/plain", strings.NewReader("hi"))
		require.NoError(t, err)
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		response.Body.Close()
		assert.Equal(t, "bye", string(body))
	}
	assert.EqualValues(t, 3, accepted.Load())
}

func TestLeanTransportReadsAChunkedAnswerAndKeepsTheConnection(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		for i := range 3 {
			fmt.Fprintf(w, "part%d;", i)
			w.(http.Flusher).Flush() // no Content-Length: chunked
		}
	})
	client := &http.Client{Transport: newLeanTransport(4)}
	for range 2 {
		status, body := leanGet(t, client, server.URL)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "part0;part1;part2;", body)
	}
	assert.EqualValues(t, 1, accepted.Load())
}

func TestLeanTransportDropsAConnectionWhoseAnswerWasNotReadToItsEnd(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, strings.Repeat("x", 64<<10))
	})
	client := &http.Client{Transport: newLeanTransport(4)}
	response, err := client.Get(server.URL)
	require.NoError(t, err)
	head := make([]byte, 10)
	_, err = io.ReadFull(response.Body, head)
	require.NoError(t, err)
	require.NoError(t, response.Body.Close()) // the rest of the answer is still on the connection
	status, body := leanGet(t, client, server.URL)
	assert.Equal(t, http.StatusOK, status)
	assert.Len(t, body, 64<<10)
	assert.EqualValues(t, 2, accepted.Load(), "a connection with an unread answer on it is not reused")
}

func TestLeanTransportEndsARequestWhenItsContextEnds(t *testing.T) {
	release := make(chan struct{})
	server, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
		fmt.Fprint(w, "ok")
	})
	defer close(release)
	client := &http.Client{Transport: newLeanTransport(4)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL+"/slow", nil)
	require.NoError(t, err)
	_, err = client.Do(request)
	require.ErrorIs(t, err, context.DeadlineExceeded)

	cancelled, cancelNow := context.WithCancel(context.Background())
	request, err = http.NewRequestWithContext(cancelled, http.MethodGet, server.URL+"/slow", nil)
	require.NoError(t, err)
	time.AfterFunc(20*time.Millisecond, cancelNow)
	_, err = client.Do(request)
	require.ErrorIs(t, err, context.Canceled)

	status, body := leanGet(t, client, server.URL+"/fast")
	assert.Equal(t, http.StatusOK, status, "the transport goes on after a request it cut")
	assert.Equal(t, "ok", body)
}

// serveRaw listens on loopback and runs handle on each connection it
// accepts, closing the connection after; it returns the server's URL.
func serveRaw(t *testing.T, handle func(conn net.Conn)) string {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { listener.Close() })
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				handle(conn)
			}()
		}
	}()
	return "http://" + listener.Addr().String()
}

// closingServer answers each connection's first request with a kept-alive
// 200, then closes the connection without saying so, as a server does at
// its idle timeout; it counts the requests it answered.
func closingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	var answered atomic.Int64
	url := serveRaw(t, func(conn net.Conn) {
		request, err := http.ReadRequest(bufio.NewReader(conn))
		if err != nil {
			return
		}
		io.Copy(io.Discard, request.Body)
		answered.Add(1)
		fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	return url, &answered
}

func TestLeanTransportSendsARepeatableRequestAgainAfterTheServerClosedTheIdleConnection(t *testing.T) {
	url, answered := closingServer(t)
	transport := newLeanTransport(4)
	client := &http.Client{Transport: transport}
	status, _ := leanGet(t, client, url)
	require.Equal(t, http.StatusOK, status)
	time.Sleep(20 * time.Millisecond) // the server has closed the pooled connection
	freshen(transport)                // so that it is used without a probe
	status, body := leanGet(t, client, url)
	assert.Equal(t, http.StatusOK, status, "a GET on the dead connection is sent again on a new one")
	assert.Equal(t, "ok", body)
	assert.EqualValues(t, 2, answered.Load())

	time.Sleep(20 * time.Millisecond)
	freshen(transport)
	_, err := client.Post(url, "text/plain", strings.NewReader("once"))
	require.ErrorIs(t, err, errNoAnswer, "a POST the server may have handled is not sent twice")
	assert.EqualValues(t, 2, answered.Load())
}

func TestLeanTransportReadsAnAnswerToARequestTheServerDidNotRead(t *testing.T) {
	url := serveRaw(t, func(conn net.Conn) {
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		fmt.Fprint(conn, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo long")
	})
	client := &http.Client{Transport: newLeanTransport(4)}
	response, err := client.Post(url, "text/plain", strings.NewReader(strings.Repeat("x", 32<<10)))
	require.NoError(t, err)
	defer response.Body.Close()
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, response.StatusCode)
	assert.Equal(t, "too long", string(body))
}

func TestLeanTransportRefusesAnythingButHTTP(t *testing.T) {
	_, err := (&http.Client{Transport: newLeanTransport(1)}).Get("https://127.0.0.1:1/")
	require.ErrorContains(t, err, "not an http:// URL")
}

func TestBenchTransportSendsHTTPSThroughNetHTTPWithTheGivenCAs(t *testing.T) {
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"status":"ok"}`)
	}))
	defer server.Close()
	pool := x509.NewCertPool()
	pool.AddCert(server.Certificate())
	bench := &http.Client{Transport: &benchTransport{lean: newLeanTransport(1), standard: &http.Transport{Proxy: http.ProxyFromEnvironment}}}

	secured := client.New(server.URL, client.WithHTTPClient(bench), client.WithRootCAs(pool))
	_, err := secured.Healthz(context.Background())
	require.NoError(t, err, "the bench's transport takes --ca-file's pool for https")
	_, err = client.New(server.URL, client.WithHTTPClient(bench)).Healthz(context.Background())
	require.ErrorContains(t, err, "certificate", "without the pool, the server's certificate is unknown")
}

func TestLeanTransportDialsPort80WhenTheURLNamesNoPort(t *testing.T) {
	for raw, want := range map[string]string{
		"http://broker.example/v1":      "broker.example:80",
		"http://broker.example:7942/v1": "broker.example:7942",
		"http://[::1]/v1":               "[::1]:80",
		"http://127.0.0.1:1/":           "127.0.0.1:1",
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		assert.Equal(t, want, dialAddress(u), raw)
	}
}

func TestLeanTransportDropsAnIdleConnectionTheServerClosedBeforeSendingAPost(t *testing.T) {
	var accepted atomic.Int64
	server := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		fmt.Fprint(w, "ok")
	}))
	server.Config.IdleTimeout = 20 * time.Millisecond
	server.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			accepted.Add(1)
		}
	}
	server.Start()
	defer server.Close()
	client := &http.Client{Transport: newLeanTransport(4)}
	for range 3 {
		response, err := client.Post(server.URL, "text/plain", strings.NewReader("produce"))
		require.NoError(t, err, "a POST is never sent on a connection the server closed while it was idle")
		body, err := io.ReadAll(response.Body)
		require.NoError(t, err)
		response.Body.Close()
		assert.Equal(t, "ok", string(body))
		time.Sleep(200 * time.Millisecond) // past the server's idle timeout and leanProbeAfter
	}
	assert.EqualValues(t, 3, accepted.Load())
}

func TestLeanTransportDropsAConnectionPooledLongerThanIdleMax(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	transport := newLeanTransport(4)
	client := &http.Client{Transport: transport}
	leanGet(t, client, server.URL)
	transport.mu.Lock()
	pool := transport.idle[strings.TrimPrefix(server.URL, "http://")]
	require.Len(t, pool, 1)
	pool[0].idleSince = time.Now().Add(-leanIdleMax)
	transport.mu.Unlock()
	status, body := leanGet(t, client, server.URL)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", body)
	assert.EqualValues(t, 2, accepted.Load(), "the expired connection was closed, a new one dialled")
}

// rawServer answers each connection's requests with answer (raw bytes)
// until the client closes it.
func rawServer(t *testing.T, answer string) string {
	t.Helper()
	return serveRaw(t, func(conn net.Conn) {
		reader := bufio.NewReader(conn)
		for {
			request, err := http.ReadRequest(reader)
			if err != nil {
				return
			}
			io.Copy(io.Discard, request.Body)
			if _, err := io.WriteString(conn, answer); err != nil {
				return
			}
		}
	})
}

func TestLeanTransportSkipsInformationalAnswers(t *testing.T) {
	url := rawServer(t, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfinal")
	client := &http.Client{Transport: newLeanTransport(4)}
	for range 2 {
		status, body := leanGet(t, client, url)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "final", body, "each request gets its own final answer")
	}
}

func TestLeanTransportRefusesAnAnswerHeadOverItsBound(t *testing.T) {
	url := rawServer(t, "HTTP/1.1 200 OK\r\nX-Big: "+strings.Repeat("x", leanHeaderBytesMax)+"\r\nContent-Length: 0\r\n\r\n")
	_, err := (&http.Client{Transport: newLeanTransport(1)}).Get(url)
	require.ErrorIs(t, err, errHeadTooLarge)
}

func TestLeanTransportKeepsTheConnectionOfAnAnswerWithNoBody(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	client := &http.Client{Transport: newLeanTransport(4)}
	for range 3 {
		response, err := client.Get(server.URL)
		require.NoError(t, err)
		assert.Equal(t, http.StatusNoContent, response.StatusCode)
		require.NoError(t, response.Body.Close()) // closed without a read
	}
	assert.EqualValues(t, 1, accepted.Load())
}

func TestLeanTransportGivesTheContextsErrorWhenItEndsDuringTheBody(t *testing.T) {
	server := stallingServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
	require.NoError(t, err)
	response, err := (&http.Client{Transport: newLeanTransport(1)}).Do(request)
	require.NoError(t, err)
	defer response.Body.Close()
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = io.ReadAll(response.Body)
	require.ErrorIs(t, err, context.Canceled)
	_, err = response.Body.Read(make([]byte, 1))
	require.ErrorIs(t, err, context.Canceled, "the error sticks")
}

func TestLeanTransportClosesAConnectionItsEndedContextMayStillCut(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "whole answer") })
	client := &http.Client{Transport: newLeanTransport(4)}
	ctx, cancel := context.WithCancel(context.Background())
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
	require.NoError(t, err)
	response, err := client.Do(request)
	require.NoError(t, err)
	cancel() // its callback, which sets the connection's deadline in the past, may run at any time now
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err, "the answer was buffered whole")
	assert.Equal(t, "whole answer", string(body))
	leanGet(t, client, server.URL)
	assert.EqualValues(t, 2, accepted.Load(), "the first connection was not pooled")
}

func TestLeanTransportResendsAnIdempotentPostWithoutChangingTheCallersRequest(t *testing.T) {
	url, answered := closingServer(t)
	transport := newLeanTransport(4)
	client := &http.Client{Transport: transport}
	leanGet(t, client, url)
	time.Sleep(20 * time.Millisecond) // the server has closed the pooled connection
	freshen(transport)
	request, err := http.NewRequest(http.MethodPost, url, strings.NewReader("payload"))
	require.NoError(t, err)
	request.Header.Set("Idempotency-Key", "k1")
	body := request.Body
	response, err := client.Do(request)
	require.NoError(t, err)
	response.Body.Close()
	assert.Equal(t, http.StatusOK, response.StatusCode)
	assert.EqualValues(t, 2, answered.Load())
	assert.True(t, body == request.Body, "the retry sent a copy of the request")
}

func TestBenchTransportSendsAProxiedHTTPRequestThroughNetHTTP(t *testing.T) {
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "via proxy "+r.URL.String())
	}))
	defer proxy.Close()
	proxyURL, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	client := &http.Client{Transport: &benchTransport{lean: newLeanTransport(1), standard: &http.Transport{Proxy: http.ProxyURL(proxyURL)}}}
	status, body := leanGet(t, client, "http://broker.example/v1/healthz")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "via proxy http://broker.example/v1/healthz", body)
}

func TestLeanTransportCloseEndsAReadUnderWay(t *testing.T) {
	server := stallingServer(t)
	response, err := (&http.Client{Transport: newLeanTransport(1)}).Get(server.URL)
	require.NoError(t, err)
	read := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(response.Body)
		read <- err
	}()
	time.Sleep(20 * time.Millisecond) // the read waits for the rest of the body
	require.NoError(t, response.Body.Close())
	select {
	case err := <-read:
		require.Error(t, err, "the body was cut")
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the read under way")
	}
}

// freshen marks every pooled connection of transport as just pooled, so
// that the next request uses one without probing it: the tests of what
// happens on a connection the server closed need it used as it is, however
// long the machine took to get there.
func freshen(transport *leanTransport) {
	transport.mu.Lock()
	defer transport.mu.Unlock()
	for _, pool := range transport.idle {
		for _, c := range pool {
			c.idleSince = time.Now()
		}
	}
}

func TestLeanTransportReusesAHealthyConnectionPastItsLastRequestsDeadline(t *testing.T) {
	server, accepted := countingServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	client := &http.Client{Transport: newLeanTransport(4)}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, server.URL, nil)
	require.NoError(t, err)
	response, err := client.Do(request)
	require.NoError(t, err)
	_, err = io.ReadAll(response.Body)
	require.NoError(t, err)
	<-ctx.Done()
	time.Sleep(leanProbeAfter) // the next take probes the connection
	status, body := leanGet(t, client, server.URL)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "ok", body)
	assert.EqualValues(t, 1, accepted.Load(), "the probe saw an open connection, not a stale deadline")
}

// stallingServer answers with the first 4 of 100 bytes of a body and
// then waits until the request ends (or the test does).
func stallingServer(t *testing.T) *httptest.Server {
	t.Helper()
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	server, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		fmt.Fprint(w, "part")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	return server
}
