package fuzz

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"narad/host"
)

// schemaFuzzTimeout bounds one request of the schema fuzz target: a
// compile is bounded by the server (2 s), the rest is one metadata write.
const schemaFuzzTimeout = 30 * time.Second

// startSchemaHost starts one real node (loopback HTTP, its own data
// directory) for every input of FuzzCreateTopicSchema in this process.
func startSchemaHost(f *testing.F) string {
	opts := host.DefaultOptions(f.TempDir())
	opts.HTTPAddr = "127.0.0.1:0"
	h, err := host.Start(opts, slog.New(slog.DiscardHandler))
	if err != nil {
		f.Fatalf("start node: %v", err)
	}
	f.Cleanup(func() { _ = h.Shutdown() })
	return h.Addr()
}

// FuzzCreateTopicSchema: any bytes as the schema of a topic created
// through the real handler and node. The answer is always 201 or 400 (413
// over the size bound), never a crash or a 5xx; a created topic reads its
// schema back as the same JSON value, and is deleted again.
func FuzzCreateTopicSchema(f *testing.F) {
	for _, seed := range []string{
		`{}`, `true`, `false`, `null`, `[]`, `"x"`, `{`, `{"type":"object"}`,
		`{"type":"object","required":["id","amount"],"properties":{"id":{"type":"string"},"amount":{"type":"number","minimum":0}}}`,
		`{"$ref":"https://example.com/s.json"}`, `{"$ref":"file:///etc/passwd"}`, `{"$ref":"other.json"}`,
		`{"$id":"http://example.com/root.json","$ref":"item.json"}`, `{"$schema":"http://json-schema.org/draft-07/schema#","type":"string"}`,
		`{"$schema":"https://example.com/custom-meta"}`, `{"$defs":{"n":{"$ref":"#/$defs/n"}},"$ref":"#/$defs/n"}`,
		`{"allOf":[{"$ref":"#"}]}`, `{"anyOf":[{"type":"string"},{"$dynamicRef":"#node"}],"$dynamicAnchor":"node"}`,
		`{"type":"object","properties":{"children":{"type":"array","items":{"$ref":"#"}}}}`,
		`{"$dynamicRef":"#meta"}`, `{"pattern":"(a*)*b"}`, `{"pattern":"((("}`, `{"pattern":"` + strings.Repeat("(a|b)", 500) + `"}`,
		`{"type":["string",1]}`, `{"format":"email"}`, `{"minimum":"x"}`, `{"multipleOf":0}`, `{"enum":[]}`,
		`{"description":"<>&\u2028"}`, strings.Repeat(`{"not":`, 60) + `{}` + strings.Repeat(`}`, 60),
		strings.Repeat(`[`, 100) + strings.Repeat(`]`, 100),
	} {
		f.Add([]byte(seed))
	}
	addr := startSchemaHost(f)
	var topics atomic.Uint64 // names each input's topic
	f.Fuzz(func(t *testing.T, schema []byte) {
		name := fmt.Sprintf("fuzz-%d", topics.Add(1))
		status, body := schemaCall(t, addr, http.MethodPost, "/v1/topics", createBody(name, schema))
		switch {
		case status == http.StatusRequestEntityTooLarge && len(schema) > 256<<10:
			return
		case status == http.StatusBadRequest:
			return
		case status != http.StatusCreated:
			t.Fatalf("create with schema %q: %d %s", schema, status, body)
		}
		status, body = schemaCall(t, addr, http.MethodGet, "/v1/topics/"+name+"/schema", nil)
		if string(bytes.TrimSpace(schema)) == "null" { // null is no schema
			if status != http.StatusNotFound {
				t.Fatalf("read back of a topic made with a null schema: %d %s", status, body)
			}
			schemaCall(t, addr, http.MethodDelete, "/v1/topics/"+name, nil)
			return
		}
		if status != http.StatusOK {
			t.Fatalf("read back: %d %s", status, body)
		}
		var readBack struct {
			Version int             `json:"version"`
			Schema  json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal([]byte(body), &readBack); err != nil || readBack.Version != 1 {
			t.Fatalf("read back %s: %v", body, err)
		}
		if !sameJSON(schema, readBack.Schema) {
			t.Fatalf("read back %s, created with %s", readBack.Schema, schema)
		}
		if status, body = schemaCall(t, addr, http.MethodDelete, "/v1/topics/"+name, nil); status != http.StatusNoContent {
			t.Fatalf("delete: %d %s", status, body)
		}
	})
}

// createBody embeds schema in a create body: as itself when it is JSON,
// else as a JSON string (which the server must refuse as a schema).
func createBody(name string, schema []byte) []byte {
	field := schema
	if !json.Valid(schema) {
		field, _ = json.Marshal(string(schema))
	}
	return append([]byte(`{"name":"`+name+`","schema":`), append(field, '}')...)
}

// sameJSON reports whether two documents hold the same JSON value.
func sameJSON(a, b []byte) bool {
	var x, y any
	da, db := json.NewDecoder(bytes.NewReader(a)), json.NewDecoder(bytes.NewReader(b))
	da.UseNumber()
	db.UseNumber()
	return da.Decode(&x) == nil && db.Decode(&y) == nil && reflect.DeepEqual(x, y)
}

func schemaCall(t *testing.T, addr, method, path string, body []byte) (int, string) {
	t.Helper()
	request, err := http.NewRequest(method, "http://"+addr+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	request.Header.Set("Content-Type", "application/json")
	response, err := (&http.Client{Timeout: schemaFuzzTimeout}).Do(request)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer response.Body.Close()
	answer, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatalf("%s %s: read answer: %v", method, path, err)
	}
	return response.StatusCode, string(answer)
}
