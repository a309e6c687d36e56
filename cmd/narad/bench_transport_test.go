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
				if err != nil || string(body) != id {
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
	var arrived sync.WaitGroup
	server, _ := countingServer(t, func(w http.ResponseWriter, r *http.Request) {
		arrived.Done()
		<-release
		fmt.Fprint(w, "ok")
	})
	transport := newLeanTransport(2)
	client := &http.Client{Transport: transport}
	const concurrent = 5
	arrived.Add(concurrent)
	var group sync.WaitGroup
	for range concurrent {
		group.Go(func() {
			status, body := leanGet(t, client, server.URL)
			assert.Equal(t, http.StatusOK, status)
			assert.Equal(t, "ok", body)
		})
	}
	arrived.Wait() // five connections open at once
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
	for range 3 {
		status, body := leanGet(t, client, server.URL)
		assert.Equal(t, http.StatusOK, status)
		assert.Equal(t, "bye", body)
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

// closingServer answers each connection's first request with a kept-alive
// 200, then closes the connection without saying so, as a server does at
// its idle timeout; it counts the requests it answered.
func closingServer(t *testing.T) (string, *atomic.Int64) {
	t.Helper()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { listener.Close() })
	var answered atomic.Int64
	go func() {
		for {
			conn, err := listener.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				request, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				io.Copy(io.Discard, request.Body)
				answered.Add(1)
				fmt.Fprint(conn, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}()
		}
	}()
	return "http://" + listener.Addr().String(), &answered
}

func TestLeanTransportSendsARepeatableRequestAgainAfterTheServerClosedTheIdleConnection(t *testing.T) {
	url, answered := closingServer(t)
	client := &http.Client{Transport: newLeanTransport(4)}
	status, _ := leanGet(t, client, url)
	require.Equal(t, http.StatusOK, status)
	time.Sleep(20 * time.Millisecond) // the server has closed the pooled connection
	status, body := leanGet(t, client, url)
	assert.Equal(t, http.StatusOK, status, "a GET on the dead connection is sent again on a new one")
	assert.Equal(t, "ok", body)
	assert.EqualValues(t, 2, answered.Load())

	time.Sleep(20 * time.Millisecond)
	_, err := client.Post(url, "text/plain", strings.NewReader("once"))
	require.ErrorIs(t, err, errNoAnswer, "a POST the server may have handled is not sent twice")
	assert.EqualValues(t, 2, answered.Load())
}

func TestLeanTransportReadsAnAnswerToARequestTheServerDidNotRead(t *testing.T) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer listener.Close()
	go func() {
		conn, err := listener.Accept()
		if err != nil {
			return
		}
		defer conn.Close()
		if _, err := http.ReadRequest(bufio.NewReader(conn)); err != nil {
			return
		}
		fmt.Fprint(conn, "HTTP/1.1 413 Request Entity Too Large\r\nConnection: close\r\nContent-Length: 8\r\n\r\ntoo long")
	}()
	client := &http.Client{Transport: newLeanTransport(4)}
	response, err := client.Post("http://"+listener.Addr().String(), "text/plain", strings.NewReader(strings.Repeat("x", 32<<10)))
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
