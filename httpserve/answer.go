package httpserve

import (
	"errors"
	"net/http"
	"strconv"
	"time"
)

// answerRefusal answers a request the server refused itself, then the
// connection closes; other errors close it silently.
func (c *conn) answerRefusal(err error) {
	var failure *refusal
	if !errors.As(err, &failure) {
		return
	}
	c.refused(failure.reason)
	c.linger = true
	body := `{"error":` + strconv.Quote(failure.message) + "}\n"
	out := append(c.writer.out[:0], "HTTP/1.1 "...)
	out = strconv.AppendInt(out, int64(failure.status), 10)
	out = append(out, ' ')
	out = append(out, http.StatusText(failure.status)...)
	out = append(out, "\r\nDate: "...) // an origin server's 4xx must carry one (RFC 9110 6.6.1)
	out = append(out, c.server.dates.get(time.Now())...)
	out = append(out, "\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: "...)
	out = strconv.AppendInt(out, int64(len(body)), 10)
	out = append(out, "\r\n\r\n"...)
	out = append(out, body...)
	timeout := c.server.options.WriteTimeout
	if timeout <= 0 {
		timeout = refusalWriteTimeout
	}
	_ = c.netConn.SetWriteDeadline(deadline(timeout))
	_, _ = c.netConn.Write(out)
	c.writer.out = out[:0]
}
