package config

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fileErrorLines parses file and returns the lines of its error, which
// must be a file error.
func fileErrorLines(t *testing.T, file string) []string {
	t.Helper()
	_, err := Parse([]byte(file))
	require.Error(t, err, file)
	require.ErrorIs(t, err, ErrFile)
	require.NotErrorIs(t, err, ErrInvalid)
	return strings.Split(err.Error(), "\n")
}

// A key given twice was taken without a word (the second value won, two
// objects of one section were merged), in a file operations.md calls
// strict (audit finding): it is refused, at its full path, wherever it is.
func TestParseRefusesDuplicateKeys(t *testing.T) {
	cases := []struct{ file, want string }{
		{`{"log": {"level": "error", "level": "debug"}}`, "log.level: duplicate key"},
		{`{"log": {"level": "warn"}, "log": {"format": "text"}}`, "log: duplicate key"},
		{`{"cluster": {"peers": ["n1@a:1"], "node_id": "n1", "peers": []}}`, "cluster.peers: duplicate key"},
		{`{"bogus": {"a": {"b": 1, "b": 2}}}`, "bogus.a.b: duplicate key"},
		{`{"cluster": {"peers": [{}, {"x": 1, "x": 1}]}}`, "cluster.peers[1].x: duplicate key"},
	}
	for _, tc := range cases {
		assert.Contains(t, fileErrorLines(t, tc.file), tc.want, tc.file)
	}
	lines := fileErrorLines(t, `{"log": {"level": "warn", "level": "warn"}, "http": {"addr": ":1", "addr": ":1"}}`)
	assert.Equal(t, []string{"log.level: duplicate key", "http.addr: duplicate key"}, lines, "every duplicate, in the file's order")
}

// An unknown key was prefixed with its section only under http
// (`json: unknown field "zzz"` elsewhere; audit finding): every section
// names it at its full path, and every unknown key is reported at once.
func TestParseNamesEveryUnknownKeyAtItsPath(t *testing.T) {
	for _, section := range []string{"http", "cluster", "storage", "topic", "moves", "fanout", "log", "security"} {
		lines := fileErrorLines(t, `{"`+section+`": {"zzz": 1}}`)
		assert.Equal(t, []string{section + ".zzz: unknown key"}, lines)
	}
	assert.Equal(t, []string{"zzz: unknown key"}, fileErrorLines(t, `{"zzz": {}}`))
	lines := fileErrorLines(t, `{"storage": {"zzz": 1, "yyy": 2}, "log": {"xxx": 3}, "www": 4}`)
	assert.Equal(t, []string{"storage.zzz: unknown key", "storage.yyy: unknown key", "log.xxx: unknown key", "www: unknown key"}, lines)
}

// Keys match exactly (encoding/json matched them under case folding, so
// "Level" and "level" were one key given twice); a near miss is named
// with the key it most likely meant, in its section or another.
func TestParseSuggestsTheKeyAnUnknownOneMeant(t *testing.T) {
	cases := []struct{ file, want string }{
		{`{"log": {"Level": "debug"}}`, `log.Level: unknown key (did you mean "level"?)`},
		{`{"LOG": {}}`, `LOG: unknown key (did you mean "log"?)`},
		{`{"http": {"read_timout": "1s"}}`, `http.read_timout: unknown key (did you mean "read_timeout"?)`},
		{`{"http": {"data_dir": "/x"}}`, `http.data_dir: unknown key (did you mean storage.data_dir?)`},
		{`{"log": {"Level": "debug", "level": "info"}}`, `log.Level: unknown key (did you mean "level"?)`},
	}
	for _, tc := range cases {
		assert.Equal(t, []string{tc.want}, fileErrorLines(t, tc.file), tc.file)
	}
}

// A wrong value named no key (`http: want a duration string ...`), showed
// only the first problem, or quoted Go's types (`Go struct field
// httpJSON.max_connections`; audit finding): each is named at its key, in
// the file's terms, all at once.
func TestParseNamesEveryWrongValueAtItsKey(t *testing.T) {
	lines := fileErrorLines(t, `{"http": {"read_timeout": 10, "write_timeout": "x", "max_connections": "x"}}`)
	assert.Equal(t, []string{
		`http.read_timeout: want a duration string such as "10s", got 10`,
		`http.write_timeout: want a duration string such as "10s", got "x"`,
		`http.max_connections: want an integer, got "x"`,
	}, lines)
	cases := []struct{ file, want string }{
		{`{"topic": {"max_partitions": "many"}}`, `topic.max_partitions: want an integer, got "many"`},
		{`{"topic": {"max_partitions": 1.5}}`, `topic.max_partitions: want an integer, got 1.5`},
		{`{"fanout": {"linger_ms": 1e30}}`, `fanout.linger_ms: want an integer, got 1e30`},
		{`{"storage": {"group_sync": "yes"}}`, `storage.group_sync: want true or false, got "yes"`},
		{`{"storage": {"data_dir": 7}}`, `storage.data_dir: want a string, got 7`},
		{`{"cluster": {"peers": "n1@a:1"}}`, `cluster.peers: want a list of strings, got "n1@a:1"`},
		{`{"cluster": {"peers": ["n1@a:1", 2]}}`, `cluster.peers: want a list of strings, got ["n1@a:1",2]`},
		{`{"log": {"level": null}}`, `log.level: want a string, got null`},
		{`{"cluster": {"peers": null, "node_id": null}}`, `cluster.node_id: want a string, got null`},
		{`{"http": {"idle_timeout": null}}`, `http.idle_timeout: want a duration string such as "10s", got null`},
		{`{"log": "debug"}`, `log: want an object, got "debug"`},
		{`{"http": [1]}`, `http: want an object, got [1]`},
		{`[]`, `want a JSON object, got []`},
	}
	for _, tc := range cases {
		assert.Equal(t, []string{tc.want}, fileErrorLines(t, tc.file), tc.file)
	}
	long := fileErrorLines(t, `{"log": {"level": 1, "format": "`+strings.Repeat("x", 1000)+`"}}`)
	require.Len(t, long, 1)
	assert.Less(t, len(long[0]), 200, "a long value is clipped")
}

// No message of the file quotes Go: its type names, its field paths, its
// package prefixes.
func TestParseErrorsNeverQuoteGo(t *testing.T) {
	files := []string{
		`{"http": {"max_connections": "x", "tls": 1, "read_timeout": {}}}`,
		`{"topic": {"max_partitions": "many", "x": 1}}`,
		`{"cluster": {"peers": [1], "heartbeat_interval_ms": true}}`,
		`{"security": {"enabled": "yes"}}`,
		`{"storage": {"segment_bytes": -1.5}}`,
		`{"http": {"read_timeout": "ten seconds"}}`,
	}
	for _, file := range files {
		message := strings.Join(fileErrorLines(t, file), "\n")
		for _, goism := range []string{"Go ", "struct", "httpJSON", "json:", "unmarshal", "int64", "time:", "field"} {
			assert.NotContains(t, message, goism, file)
		}
	}
}

// The two secrets are read only from the environment: a file that sets
// one is told so, not given a bare "unknown field" (audit finding).
func TestParseSaysASecretIsReadOnlyFromTheEnvironment(t *testing.T) {
	lines := fileErrorLines(t, `{"security": {"admin_password": "x", "cluster_secret": "y", "enabled": true}}`)
	assert.Equal(t, []string{
		"security.admin_password is read only from NARAD_ADMIN_PASSWORD, never from the file",
		"security.cluster_secret is read only from NARAD_CLUSTER_SECRET, never from the file",
	}, lines)
}

// Internal storage keys of the reference are all named (only the first
// was), with the other problems of the file.
func TestParseNamesEveryInternalStorageKey(t *testing.T) {
	lines := fileErrorLines(t, `{"storage": {"flush_bytes": 1, "sync_bytes": 2}, "log": {"zzz": 1}}`)
	assert.Equal(t, []string{
		"storage.flush_bytes is an internal setting and cannot be configured",
		"storage.sync_bytes is an internal setting and cannot be configured",
		"log.zzz: unknown key",
	}, lines)
}

// A file with a great many problems is reported in a bounded message.
func TestParseBoundsTheProblemsItLists(t *testing.T) {
	var file strings.Builder
	file.WriteString(`{"log": {`)
	for i := range 1000 {
		if i > 0 {
			file.WriteString(",")
		}
		file.WriteString(`"level": "x"`)
	}
	file.WriteString(`}}`)
	lines := fileErrorLines(t, file.String())
	require.Len(t, lines, fileProblemsMax+1)
	assert.Equal(t, "log.level: duplicate key", lines[0])
	assert.Equal(t, "and 949 more problems", lines[fileProblemsMax])
}

// A file that is not one JSON value is reported alone, with where.
func TestParseReportsSyntaxAlone(t *testing.T) {
	cases := []struct{ file, want string }{
		{"{\n  \"log\": {\"level\": \"x\",}\n}", "not JSON: invalid character '}' looking for beginning of object key string (line 2)"},
		{`{"log": {"level": "x", "level": 1}`, "not JSON: unexpected end of file"},
		{`{"zzz": 1} {"zzz": 2}`, "trailing data after the configuration object"},
		{"", "empty: want a JSON object"},
		{" \n ", "empty: want a JSON object"},
	}
	for _, tc := range cases {
		assert.Equal(t, []string{tc.want}, fileErrorLines(t, tc.file), tc.file)
	}
}

// LoadFile names the file on every line.
func TestLoadFileNamesTheFileOnEveryLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "narad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"storage": {"zzz": 1}, "http": {"read_timeout": 10}}`), 0o600))
	_, err := LoadFile(path)
	require.ErrorIs(t, err, ErrFile)
	assert.Equal(t, path+`: storage.zzz: unknown key`+"\n"+path+`: http.read_timeout: want a duration string such as "10s", got 10`, err.Error())
}

// A file that decodes well still layers over the base, HTTP durations
// included, and a value the file gives twice never reaches it.
func TestParseOverKeepsWhatTheFileLeavesOut(t *testing.T) {
	base := Default()
	base.Log.Format = "text"
	path := filepath.Join(t.TempDir(), "narad.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"log": {"level": "debug"}, "http": {"read_timeout": "2s"}, "cluster": {"peers": []}}`), 0o600))
	cfg, err := LoadFileOver(base, path)
	require.NoError(t, err)
	want := base
	want.Log.Level = "debug"
	want.HTTP.ReadTimeout = 2_000_000_000
	want.Cluster.Peers = []string{}
	assert.Equal(t, want, cfg)
}

// Every setting of the file is of a type wantOf words.
func TestEverySettingHasAWant(t *testing.T) {
	for _, section := range jsonKeys(reflect.TypeFor[Config]()) {
		sectionType := sectionType(section)
		for _, key := range jsonKeys(sectionType) {
			field, ok := fieldByKey(sectionType, key)
			require.True(t, ok)
			assert.NotEqual(t, "another value", wantOf(field.Type), section+"."+key)
		}
	}
}

// HTTP decodes on its own (json.Unmarshal of a Config) as the http
// section of a file does.
func TestHTTPUnmarshalJSONIsTheFilesSection(t *testing.T) {
	h := Default().HTTP
	require.NoError(t, json.Unmarshal([]byte(`{"read_timeout": "2s"}`), &h))
	assert.Equal(t, 2*time.Second, h.ReadTimeout)
	assert.Equal(t, Default().HTTP.WriteTimeout, h.WriteTimeout, "keys left out keep their values")
	err := json.Unmarshal([]byte(`{"read_timeout": 10, "zzz": 1, "addr": ":1", "addr": ":2"}`), &h)
	require.ErrorIs(t, err, ErrFile)
	assert.Equal(t, "http.addr: duplicate key\nhttp.read_timeout: want a duration string such as \"10s\", got 10\nhttp.zzz: unknown key", err.Error())
}
