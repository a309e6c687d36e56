package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"time"
)

// configFileBytesMax bounds the configuration file; a real one is a few KiB.
const configFileBytesMax = 1 << 20

// ErrFile marks a configuration file that cannot be read or decoded.
var ErrFile = errors.New("bad configuration file")

// internalStorageKeys are storage settings of the reference that are
// internal there and here (segment_bytes excepted, see the package doc).
var internalStorageKeys = map[string]bool{
	"fsync": true, "flush_bytes": true, "flush_records": true, "flush_interval_ms": true,
	"sync_interval_ms": true, "sync_bytes": true, "high_watermark_sync_interval_ms": true,
	"ingress_wal_sync_interval_ms": true, "retention_check_interval_ms": true,
}

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
	cfg, err := parseOver(base, data)
	if err != nil {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	return cfg, nil
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
// left out keep their default; unknown keys, internal storage keys and
// trailing data are errors.
func Parse(data []byte) (Config, error) { return parseOver(Default(), data) }

// parseOver is Parse over base instead of the defaults.
func parseOver(base Config, data []byte) (Config, error) {
	if err := rejectInternalStorageKeys(data); err != nil {
		return Config{}, err
	}
	cfg := base
	if err := decodeStrict(data, &cfg); err != nil {
		return Config{}, fmt.Errorf("%w: %w", ErrFile, err)
	}
	return cfg, nil
}

// rejectInternalStorageKeys names the first internal storage key (in sorted
// order) with a clearer message than "unknown field". Malformed JSON is left
// for decodeStrict to report.
func rejectInternalStorageKeys(data []byte) error {
	var shape struct {
		Storage map[string]json.RawMessage `json:"storage"`
	}
	if json.Unmarshal(data, &shape) != nil {
		return nil
	}
	for _, key := range slices.Sorted(maps.Keys(shape.Storage)) {
		if internalStorageKeys[key] {
			return fmt.Errorf("%w: storage.%s is an internal setting and cannot be configured", ErrFile, key)
		}
	}
	return nil
}

// decodeStrict decodes exactly one JSON value into out, rejecting unknown
// fields and anything after the value.
func decodeStrict(data []byte, out any) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(out); err != nil {
		return err
	}
	var extra json.RawMessage
	if err := decoder.Decode(&extra); err != io.EOF {
		return errors.New("trailing data after the configuration object")
	}
	return nil
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

// MarshalJSON writes the durations as Go duration strings.
func (h HTTP) MarshalJSON() ([]byte, error) {
	return json.Marshal(httpJSON{
		Addr: h.Addr, ReadTimeout: jsonDuration(h.ReadTimeout), WriteTimeout: jsonDuration(h.WriteTimeout),
		IdleTimeout: jsonDuration(h.IdleTimeout), ShutdownGrace: jsonDuration(h.ShutdownGrace),
		MaxConsumeWait: jsonDuration(h.MaxConsumeWait), PprofAddr: h.PprofAddr,
		TLSCertFile: h.TLSCertFile, TLSKeyFile: h.TLSKeyFile,
		MaxConnections: h.MaxConnections, MaxBodyBytesInFlight: h.MaxBodyBytesInFlight,
		MaxReplyBytesInFlight: h.MaxReplyBytesInFlight,
	})
}

// UnmarshalJSON reads the file form strictly; keys left out keep the
// receiver's current values (the defaults, when called from Parse).
func (h *HTTP) UnmarshalJSON(data []byte) error {
	current, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	var wire httpJSON
	if err := json.Unmarshal(current, &wire); err != nil {
		return err
	}
	if err := decodeStrict(data, &wire); err != nil {
		return fmt.Errorf("http: %w", err)
	}
	*h = HTTP{
		Addr: wire.Addr, ReadTimeout: time.Duration(wire.ReadTimeout), WriteTimeout: time.Duration(wire.WriteTimeout),
		IdleTimeout: time.Duration(wire.IdleTimeout), ShutdownGrace: time.Duration(wire.ShutdownGrace),
		MaxConsumeWait: time.Duration(wire.MaxConsumeWait), PprofAddr: wire.PprofAddr,
		TLSCertFile: wire.TLSCertFile, TLSKeyFile: wire.TLSKeyFile,
		MaxConnections: wire.MaxConnections, MaxBodyBytesInFlight: wire.MaxBodyBytesInFlight,
		MaxReplyBytesInFlight: wire.MaxReplyBytesInFlight,
	}
	return nil
}

// jsonDuration is a time.Duration written as a Go duration string.
type jsonDuration time.Duration

func (d jsonDuration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

func (d *jsonDuration) UnmarshalJSON(data []byte) error {
	var text string
	if err := json.Unmarshal(data, &text); err != nil {
		return fmt.Errorf("want a duration string such as \"10s\", got %s", data)
	}
	parsed, err := time.ParseDuration(text)
	if err != nil {
		return err
	}
	*d = jsonDuration(parsed)
	return nil
}
