package httpserve

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkProduceShapedRequest: one produce-shaped request (a 256-byte
// body, the headers Go's client sends) and its 202 per op, on one
// loopback connection. The client side writes a prepared request and
// reads the reply's known length without parsing it, so allocs/op are
// the server's.
func BenchmarkProduceShapedRequest(b *testing.B) {
	_, addr := start(b, Options{Handler: http.HandlerFunc(answerProduce)})
	benchmarkProduceShaped(b, addr)
}

// BenchmarkProduceShapedRequestNetHTTP is the same against net/http's
// server, for comparison.
func BenchmarkProduceShapedRequestNetHTTP(b *testing.B) {
	server := httptest.NewServer(http.HandlerFunc(answerProduce))
	defer server.Close()
	benchmarkProduceShaped(b, server.Listener.Addr().String())
}

func answerProduce(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"partition":0,"offset":0}`)
}

func benchmarkProduceShaped(b *testing.B, addr string) {
	request := []byte("POST /v1/topics/t/produce HTTP/1.1\r\nHost: 127.0.0.1:7942\r\nUser-Agent: Go-http-client/1.1\r\n" +
		"Content-Length: 256\r\nContent-Type: application/octet-stream\r\nAccept-Encoding: gzip\r\n\r\n" + string(make([]byte, 256)))
	conn := dial(b, addr)
	if _, err := conn.Write(request); err != nil {
		b.Fatal(err)
	}
	var first bytes.Buffer
	response, err := http.ReadResponse(bufio.NewReader(io.TeeReader(conn.Conn, &first)), nil)
	if err != nil || response.StatusCode != http.StatusAccepted {
		b.Fatal(err, response)
	}
	_, _ = io.Copy(io.Discard, response.Body)
	reply := make([]byte, first.Len()) // every reply has this length: the Date is fixed-width
	b.ReportAllocs()
	for b.Loop() {
		if _, err := conn.Write(request); err != nil {
			b.Fatal(err)
		}
		if _, err := io.ReadFull(conn.Conn, reply); err != nil {
			b.Fatal(err)
		}
	}
}
