package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"time"
)

// configFileBytesMax bounds the configuration file; a real one is a few KiB.
const configFileBytesMax = 1 << 20

// ErrFile marks a configuration file that cannot be read or decoded;
// every problem of a file that decodes badly matches it.
var ErrFile = errors.New("bad configuration file")

// LoadFile reads the JSON file at path over the defaults.
func LoadFile(path string) (Config, error) { return LoadFileOver(Default(), path) }

// LoadFileOver reads the JSON file at path over base: a key the file
// leaves out keeps base's value (the defaults of `server start --dev`,
// say).
func LoadFileOver(base Config, path string) (Config, error) {
	data, err := readFileBounded(path)
	if err != nil {
		return Config{}, fmt.Errorf("%w %s: %w", ErrFile, path, err)
	}
	return parseOver(base, data, path)
}

func readFileBounded(path string) ([]byte, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(io.LimitReader(file, configFileBytesMax+1))
	if err != nil {
		return nil, err
	}
	if len(data) > configFileBytesMax {
		return nil, fmt.Errorf("larger than %d bytes", configFileBytesMax)
	}
	return data, nil
}

// Parse decodes a JSON configuration over the defaults. Keys that are
// left out keep their default; unknown, duplicate and internal keys,
// values of the wrong type and trailing data are errors (see parseOver).
func Parse(data []byte) (Config, error) { return parseOver(Default(), data, "") }

// parseOver is Parse over base instead of the defaults, for the file
// named file ("" for none), which every problem then names. A file that
// is not one JSON value is reported alone; otherwise every problem of
// the file is reported at once (joined, one per line, each at its key and
// matching ErrFile), up to fileProblemsMax of them.
func parseOver(base Config, data []byte, file string) (Config, error) {
	found := fileProblems{file: file}
	if err := scanFile(data, "", &found); err != nil {
		return Config{}, fileProblem{file: file, message: err.Error()}
	}
	cfg := base
	decodeFile(data, &cfg, &found)
	if err := found.err(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// httpJSON is the file form of HTTP: durations as Go duration strings.
type httpJSON struct {
	Addr           string       `json:"addr"`
	ReadTimeout    jsonDuration `json:"read_timeout"`
	WriteTimeout   jsonDuration `json:"write_timeout"`
	IdleTimeout    jsonDuration `json:"idle_timeout"`
	ShutdownGrace  jsonDuration `json:"shutdown_grace"`
	MaxConsumeWait jsonDuration `json:"max_consume_wait"`
	PprofAddr      string       `json:"pprof_addr"`
	TLSCertFile    string       `json:"tls_cert_file"`
	TLSKeyFile     string       `json:"tls_key_file"`
	MaxConnections int          `json:"max_connections"`
	// MaxBodyBytesInFlight is the request body budget in bytes.
	MaxBodyBytesInFlight int64 `json:"max_body_bytes_in_flight"`
	// MaxReplyBytesInFlight is the consume and replay reply budget in bytes.
	MaxReplyBytesInFlight int64 `json:"max_reply_bytes_in_flight"`
}

// wire is h in its file form.
func (h HTTP) wire() httpJSON {
	return httpJSON{
		Addr: h.Addr, ReadTimeout: jsonDuration(h.ReadTimeout), WriteTimeout: jsonDuration(h.WriteTimeout),
		IdleTimeout: jsonDuration(h.IdleTimeout), ShutdownGrace: jsonDuration(h.ShutdownGrace),
		MaxConsumeWait: jsonDuration(h.MaxConsumeWait), PprofAddr: h.PprofAddr,
		TLSCertFile: h.TLSCertFile, TLSKeyFile: h.TLSKeyFile,
		MaxConnections: h.MaxConnections, MaxBodyBytesInFlight: h.MaxBodyBytesInFlight,
		MaxReplyBytesInFlight: h.MaxReplyBytesInFlight,
	}
}

// http is the HTTP configuration of the file form w.
func (w httpJSON) http() HTTP {
	return HTTP{
		Addr: w.Addr, ReadTimeout: time.Duration(w.ReadTimeout), WriteTimeout: time.Duration(w.WriteTimeout),
		IdleTimeout: time.Duration(w.IdleTimeout), ShutdownGrace: time.Duration(w.ShutdownGrace),
		MaxConsumeWait: time.Duration(w.MaxConsumeWait), PprofAddr: w.PprofAddr,
		TLSCertFile: w.TLSCertFile, TLSKeyFile: w.TLSKeyFile,
		MaxConnections: w.MaxConnections, MaxBodyBytesInFlight: w.MaxBodyBytesInFlight,
		MaxReplyBytesInFlight: w.MaxReplyBytesInFlight,
	}
}

// MarshalJSON writes the durations as Go duration strings.
func (h HTTP) MarshalJSON() ([]byte, error) { return json.Marshal(h.wire()) }

// UnmarshalJSON reads the file form strictly, as the http section of a
// file (parseOver); keys left out keep the receiver's current values.
func (h *HTTP) UnmarshalJSON(data []byte) error {
	found := fileProblems{}
	if err := scanFile(data, "http", &found); err != nil {
		return fileProblem{message: "http: " + err.Error()}
	}
	wire := h.wire()
	decodeSection("http", data, reflect.ValueOf(&wire).Elem(), &found)
	if err := found.err(); err != nil {
		return err
	}
	*h = wire.http()
	return nil
}

// errWantDuration is the error of a duration that is not a Go duration
// string (decodeValue says what it got).
var errWantDuration = errors.New(durationWanted)

// durationWanted says what a duration of the file must be.
const durationWanted = `a duration string such as "10s"`

// jsonDuration is a time.Duration written as a Go duration string.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return errWantDuration
	}
	parsed, err := time.ParseDuration(text)
	if err != nil {
		return errWantDuration
	}
	*d = jsonDuration(parsed)
	return nil
}
