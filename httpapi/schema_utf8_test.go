package httpapi

import (
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"narad/msg"
)

// TestASchemaTopicRefusesInvalidUTF8: a topic with a schema accepts
// only JSON payloads; a binary payload is 400 (docs/api.md#topics-with-a-schema).
// JSON text is UTF-8, and the consume path treats a payload that is not
// valid UTF-8 as binary (payload_encoding base64). The validator parses
// with encoding/json, which turns invalid UTF-8 inside a string into
// U+FFFD, so the record passes the schema and is stored, and consumers of
// the schema topic then receive a base64 string instead of a JSON value.
func TestASchemaTopicRefusesInvalidUTF8(t *testing.T) {
	fixture := newHandlerFixture(t)
	fixture.backend.schemas = map[string][]msg.SchemaVersion{
		"orders": {{Version: 1, ID: 5, Document: []byte(`{"type":"object","properties":{"name":{"type":"string"}}}`)}},
	}
	produced := 0
	fixture.backend.onProduce = func(r msg.Produce) msg.Reply { produced++; return tableReply(r) }

	payload := "{\"name\":\"\xff\"}"
	status, _, answer := fixture.call(t, "POST", "/v1/topics/orders/produce", payload)
	require.Equal(t, 400, status, "a payload that is not UTF-8 is not JSON: %s", answer)
	require.Zero(t, produced, "nothing reaches the node")

	// The same record in a batch line (the NDJSON decoder keeps the raw
	// bytes of a JSON payload).
	response, err := fixture.server.Client().Post(fixture.server.URL+"/v1/topics/orders/produce", "application/x-ndjson",
		strings.NewReader("{\"payload\":"+payload+"}\n"))
	require.NoError(t, err)
	body, err := io.ReadAll(response.Body)
	require.NoError(t, err)
	response.Body.Close()
	status, answer = response.StatusCode, string(body)
	require.Equal(t, 400, status, answer)
	require.Zero(t, produced)

	// What a consumer of the topic would get for it: not JSON.
	_, encoding := appendPayload(nil, []byte(payload))
	require.Equal(t, payloadEncodingBase64, encoding)
}
