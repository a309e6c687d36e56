package route

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestServedRequestsShareOneNumberingAndAreTakenOnce(t *testing.T) {
	s := NewServed[string, int]()
	require.True(t, s.Empty())
	forwarded := s.Forwarded("from b")
	part := s.Part(7)
	require.Equal(t, forwarded+1, part, "forwarded requests and parts never share a number")
	require.False(t, s.Empty())

	_, ok := s.TakeOrigin(part)
	require.False(t, ok, "a part's number names no forwarded request")
	_, ok = s.TakeContinuation(forwarded)
	require.False(t, ok, "a forwarded request's number names no part")

	origin, ok := s.TakeOrigin(forwarded)
	require.True(t, ok)
	require.Equal(t, "from b", origin)
	_, ok = s.TakeOrigin(forwarded)
	require.False(t, ok, "a reply goes back once")

	continuation, ok := s.TakeContinuation(part)
	require.True(t, ok)
	require.Equal(t, 7, continuation)
	require.True(t, s.Empty())
	require.Greater(t, s.Forwarded("from c"), part, "numbers only increase")
}
