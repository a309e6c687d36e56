package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/bcrypt"

	"narad/auth"
	"narad/meta"
	"narad/msg"
)

// instantBackend answers every produce at once, so that a benchmark of
// the handler measures the handler.
type instantBackend struct{}

func (instantBackend) Do(_ context.Context, req msg.Request) msg.Reply {
	return msg.Reply{Result: msg.ProduceResult{Records: []msg.Placement{{Partition: 0, Offset: 1}}}}
}
func (instantBackend) Ready() error                                    { return nil }
func (instantBackend) ShuttingDown() bool                              { return false }
func (instantBackend) HandBack(msg.Reply)                              {}
func (instantBackend) TopicSchemas(string) []msg.SchemaVersion         { return nil }
func (instantBackend) ChangeUsers(context.Context, meta.Command) error { return nil }

// BenchmarkHandlerProduceSecurity serves single produces through the
// whole handler with security off and on (a producer whose credential is
// cached, the steady state): the difference is the cost of
// authentication and authorization per request.
func BenchmarkHandlerProduceSecurity(b *testing.B) {
	payload := strings.Repeat("x", 256)
	for _, enabled := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[enabled]
		b.Run(name, func(b *testing.B) {
			reg := prometheus.NewRegistry()
			authenticator, err := auth.New(auth.DefaultConfig(), reg)
			if err != nil {
				b.Fatal(err)
			}
			hash, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
			if err != nil {
				b.Fatal(err)
			}
			authenticator.Publish(auth.NewUsers(1, []meta.User{{Username: "ann", PasswordHash: hash,
				Grants: []meta.Grant{{Action: auth.ActionProduce, Patterns: []string{"orders*"}}}}}))
			handler := NewHandler(instantBackend{}, newTestCodec(), reg, slog.New(slog.DiscardHandler),
				WithSecurity(Security{Enabled: enabled, Auth: authenticator, Users: instantBackend{}}))
			b.ReportAllocs()
			for b.Loop() {
				request := httptest.NewRequest(http.MethodPost, "/v1/topics/orders/produce", strings.NewReader(payload))
				request.Header.Set("Content-Type", "application/octet-stream") // as narad bench and the client send
				request.SetBasicAuth("ann", "pw")
				recorder := httptest.NewRecorder()
				handler.ServeHTTP(recorder, request)
				if recorder.Code != http.StatusAccepted {
					b.Fatalf("status %d: %s", recorder.Code, recorder.Body)
				}
			}
		})
	}
}
