package sim

import (
	"net/url"
	"reflect"
	"testing"
)

// TestParseRequestTargetAsParseRequestURI checks that the hand split of a
// plain target gives the URL url.ParseRequestURI gives, and that every
// other target still gets ParseRequestURI's.
func TestParseRequestTargetAsParseRequestURI(t *testing.T) {
	targets := []string{
		"/v1/topics", "/v1/topics/sim/consume?max=5&wait_ms=300", "/v1/topics/a-b_c.d~e/partitions/3/messages?offset=17",
		"/v1/topics/sim/ack?receipt_handle=a%2Fb+c", "/v1/topics/sim?", "/v1/topics/sim?a?b", "/v1/topics/sim?a?",
		"/v1/topics/caf%C3%A9", "/v1/topics/a b", "/v1/topics/x:y", "//host/path", "/v1/topics/sim?q=é#frag",
	}
	for _, target := range targets {
		want, err := url.ParseRequestURI(target)
		if err != nil {
			t.Fatalf("%q: %v", target, err)
		}
		var got url.URL
		parseRequestTarget(&got, target)
		if !reflect.DeepEqual(&got, want) {
			t.Errorf("%q parsed as %#v, ParseRequestURI gives %#v", target, got, *want)
		}
	}
}
