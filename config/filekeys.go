package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// The configuration file is decoded here key by key, not by
// encoding/json into Config: encoding/json takes a key given twice (the
// last value wins, two objects of a section are merged), matches keys
// under case folding, stops at the first problem and words its errors in
// Go's terms (`Go struct field httpJSON.max_connections`). Every problem
// of the file is named instead at its key, in the file's terms, all at
// once (docs/operations.md#configuration).

// fileProblemsMax bounds the problems of one file that are listed; the
// rest are counted (a 1 MiB file can hold a hundred thousand).
const fileProblemsMax = 50

// fileNestingMax bounds the nesting of the file's objects and arrays:
// the configuration is three levels deep, and the decoder's own bound
// (10,000) would otherwise be met after the scan passed.
const fileNestingMax = 64

// internalStorageKeys are storage settings of the reference that are
// internal there and here (segment_bytes excepted, see the package doc).
var internalStorageKeys = map[string]bool{
	"fsync": true, "flush_bytes": true, "flush_records": true, "flush_interval_ms": true,
	"sync_interval_ms": true, "sync_bytes": true, "high_watermark_sync_interval_ms": true,
	"ingress_wal_sync_interval_ms": true, "retention_check_interval_ms": true,
}

// envOnlyKeys are the settings read only from their variable, by the
// key a file would give them.
var envOnlyKeys = map[string]string{
	"security.admin_password": "NARAD_ADMIN_PASSWORD",
	"security.cluster_secret": "NARAD_CLUSTER_SECRET",
}

// fileProblem is one problem of a configuration file. Its message names
// the key (its path from the top of the file) unless the problem is the
// file's as a whole (not JSON, not an object).
type fileProblem struct {
	// file is the path of the file; "" for bytes given to Parse.
	file    string
	message string
}

func (p fileProblem) Error() string {
	if p.file == "" {
		return p.message
	}
	return p.file + ": " + p.message
}

// Is makes every fileProblem match ErrFile.
func (p fileProblem) Is(target error) bool { return target == ErrFile }

// fileProblems collects the problems of one file: the keys given twice
// first (the scan), then the others in the file's order.
type fileProblems struct {
	file string
	list []error
	// more counts the problems past fileProblemsMax.
	more int
}

// add records "key: text"; a problem of the whole file has key "".
func (f *fileProblems) add(key, format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	if key != "" {
		text = key + ": " + text
	}
	f.addMessage(text)
}

func (f *fileProblems) addMessage(message string) {
	if len(f.list) == fileProblemsMax {
		f.more++
		return
	}
	f.list = append(f.list, fileProblem{file: f.file, message: message})
}

// err joins the problems, one a line, or nil.
func (f *fileProblems) err() error {
	list := f.list
	if f.more > 0 {
		list = append(list, fileProblem{file: f.file, message: fmt.Sprintf("and %d more problems", f.more)})
	}
	return errors.Join(list...)
}

// scanFrame is one object or array open in the walk of scanFile.
type scanFrame struct {
	path  string
	array bool
	// index is the index of an array's next value.
	index int
	// keys are the keys of an object so far; valuePath is the path of
	// the value the last key announced, when valueNext.
	keys      map[string]bool
	valuePath string
	valueNext bool
}

// takeKey records the key token of an object, adding a problem when the
// object already has the key.
func (f *scanFrame) takeKey(token json.Token, found *fileProblems) {
	key, _ := token.(string) // the decoder gives a key or the closing brace here
	path := joinPath(f.path, key)
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	if f.keys[key] {
		found.add(path, "duplicate key")
	}
	f.keys[key] = true
	f.valuePath, f.valueNext = path, true
}

// nextValuePath is the path of the value that comes next in f ("" when
// f is nil: the value at the top).
func (f *scanFrame) nextValuePath() string {
	switch {
	case f == nil:
		return ""
	case f.array:
		f.index++
		return f.path + "[" + strconv.Itoa(f.index-1) + "]"
	default:
		f.valueNext = false
		return f.valuePath
	}
}

// scanFile checks that data, the value at the path root ("" for the
// whole file), is one JSON value, nested at most fileNestingMax deep, and
// adds a problem for every key given twice in one object, at its path.
// What makes data no JSON value (a syntax error, an empty file, trailing
// data) is returned, to be reported alone.
func scanFile(data []byte, root string, found *fileProblems) error {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber() // a number too large for a float64 is a value, not a syntax error
	var stack []*scanFrame
	for started := false; ; started = true {
		if started && len(stack) == 0 {
			if _, err := decoder.Token(); err != io.EOF {
				return errors.New("trailing data after the configuration object")
			}
			return nil
		}
		token, err := decoder.Token()
		switch {
		case err == io.EOF && !started:
			return errors.New("empty: want a JSON object")
		case err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF):
			return errors.New("not JSON: unexpected end of file")
		case err != nil:
			return syntaxProblem(data, err)
		}
		var top *scanFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch {
		case token == json.Delim('}') || token == json.Delim(']'):
			stack = stack[:len(stack)-1]
		case top != nil && !top.array && !top.valueNext:
			top.takeKey(token, found)
		case token == json.Delim('{') || token == json.Delim('['):
			path := top.nextValuePath()
			if top == nil {
				path = root
			}
			if len(stack) == fileNestingMax {
				return fmt.Errorf("%s: nested deeper than %d levels", path, fileNestingMax)
			}
			stack = append(stack, &scanFrame{path: path, array: token == json.Delim('[')})
		default:
			top.nextValuePath()
		}
	}
}

// syntaxProblem words a syntax error of the file with its line.
func syntaxProblem(data []byte, err error) error {
	var syntax *json.SyntaxError
	if !errors.As(err, &syntax) {
		return fmt.Errorf("not JSON: %w", err)
	}
	offset := min(max(syntax.Offset, 0), int64(len(data)))
	return fmt.Errorf("not JSON: %s (line %d)", syntax.Error(), bytes.Count(data[:offset], []byte("\n"))+1)
}

// member is one key of an object and its value, as the file gives them.
type member struct {
	key   string
	value json.RawMessage
}

// objectMembers lists the members of the JSON object data in its order;
// false when data is not an object. data passed scanFile.
func objectMembers(data []byte) ([]member, bool) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	if token, err := decoder.Token(); err != nil || token != json.Delim('{') {
		return nil, false
	}
	var members []member
	for decoder.More() {
		token, err := decoder.Token()
		if err != nil {
			return nil, false
		}
		key, _ := token.(string)
		var value json.RawMessage
		if err := decoder.Decode(&value); err != nil {
			return nil, false
		}
		members = append(members, member{key: key, value: value})
	}
	return members, true
}

// decodeFile decodes the configuration object data (it passed scanFile)
// over cfg, section by section, adding a problem for every key or value
// it cannot take.
func decodeFile(data []byte, cfg *Config, found *fileProblems) {
	members, ok := objectMembers(data)
	if !ok {
		found.add("", "want a JSON object, got %s", clipValue(data))
		return
	}
	root := reflect.ValueOf(cfg).Elem()
	for _, member := range members {
		path := joinPath("", member.key)
		field, known := fieldByKey(root.Type(), member.key)
		if !known {
			found.unknownKey("", member.key)
			continue
		}
		if field.Type == reflect.TypeFor[HTTP]() {
			// The file form of http holds its durations as strings.
			wire := cfg.HTTP.wire()
			decodeSection(path, member.value, reflect.ValueOf(&wire).Elem(), found)
			cfg.HTTP = wire.http()
			continue
		}
		decodeSection(path, member.value, root.FieldByIndex(field.Index), found)
	}
}

// decodeSection decodes the object data, the section at path, into the
// struct target, key by key.
func decodeSection(path string, data []byte, target reflect.Value, found *fileProblems) {
	members, ok := objectMembers(data)
	if !ok {
		found.add(path, "want an object, got %s", clipValue(data))
		return
	}
	for _, member := range members {
		field, known := fieldByKey(target.Type(), member.key)
		if !known {
			found.unknownKey(path, member.key)
			continue
		}
		decodeValue(joinPath(path, member.key), member.value, target.FieldByIndex(field.Index), found)
	}
}

// decodeValue decodes data into field, the setting at key, or says what
// the setting wants. A null is an empty list, as json.Marshal writes one
// (TestJSONRoundTrip); for any other setting it is refused, as it would
// keep the value below without a word.
func decodeValue(key string, data json.RawMessage, field reflect.Value, found *fileProblems) {
	want := wantOf(field.Type())
	if string(bytes.TrimSpace(data)) == "null" {
		if field.Kind() == reflect.Slice {
			field.SetZero()
			return
		}
		found.add(key, "want %s, got null", want)
		return
	}
	fresh := reflect.New(field.Type())
	if json.Unmarshal(data, fresh.Interface()) != nil {
		found.add(key, "want %s, got %s", want, clipValue(data))
		return
	}
	field.Set(fresh.Elem())
}

// wantOf says, in the file's terms, what a setting of type t must be.
func wantOf(t reflect.Type) string {
	if t == reflect.TypeFor[jsonDuration]() {
		return durationWanted
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "a list of strings"
		}
	}
	return "another value" // no setting is of another type (TestEverySettingHasAWant)
}

// unknownKey adds the problem of key, which no setting of the section
// (the top of the file when section is "") takes: an internal or an
// environment-only setting says so, a near miss names what it likely
// meant.
func (f *fileProblems) unknownKey(section, key string) {
	if len(f.list) == fileProblemsMax {
		f.more++ // past the listed ones: no need to look for a suggestion
		return
	}
	path := joinPath(section, key)
	if section == "storage" && internalStorageKeys[key] {
		f.addMessage(path + " is an internal setting and cannot be configured")
		return
	}
	if variable, ok := envOnlyKeys[path]; ok {
		f.addMessage(path + " is read only from " + variable + ", never from the file")
		return
	}
	f.add(path, "unknown key%s", suggestKey(section, key))
}

// suggestKey is " (did you mean …?)" naming the key of the section that
// key most likely meant (the same but for case, or a typo), or the same
// key of another section; "" when there is none.
func suggestKey(section, key string) string {
	if len(key) > 64 {
		return ""
	}
	root := reflect.TypeFor[Config]()
	here := root
	if section != "" {
		here = sectionType(section)
	}
	if candidate := closestName(strings.ToLower(key), jsonKeys(here)); candidate != "" {
		return fmt.Sprintf(" (did you mean %q?)", candidate)
	}
	if section == "" {
		return ""
	}
	for _, other := range jsonKeys(root) {
		if other != section && fieldExists(sectionType(other), strings.ToLower(key)) {
			return fmt.Sprintf(" (did you mean %s.%s?)", other, strings.ToLower(key))
		}
	}
	return ""
}

// sectionType is the struct the section's keys name (its file form for
// http).
func sectionType(section string) reflect.Type {
	field, _ := fieldByKey(reflect.TypeFor[Config](), section)
	if field.Type == reflect.TypeFor[HTTP]() {
		return reflect.TypeFor[httpJSON]()
	}
	return field.Type
}

// jsonKeys lists the keys of the struct type t, in its order.
func jsonKeys(t reflect.Type) []string {
	var keys []string
	for field := range t.Fields() {
		if name := jsonName(field); name != "" {
			keys = append(keys, name)
		}
	}
	return keys
}

func fieldExists(t reflect.Type, key string) bool {
	_, ok := fieldByKey(t, key)
	return ok
}

// fieldByKey finds the field of struct type t whose JSON name is key,
// exactly (encoding/json would also take it under case folding).
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for field := range t.Fields() {
		if name := jsonName(field); name != "" && name == key {
			return field, true
		}
	}
	return reflect.StructField{}, false
}

// jsonName is the key of a field in the file; "" for a field the file
// does not hold.
func jsonName(field reflect.StructField) string {
	name, _, _ := strings.Cut(field.Tag.Get("json"), ",")
	if !field.IsExported() || name == "-" {
		return ""
	}
	return name
}

// keyBytesMax and valueBytesMax bound a key and a value quoted in a
// problem.
const (
	keyBytesMax   = 64
	valueBytesMax = 64
)

// joinPath appends key to the path parent; a key that is not plain
// (empty, long, or of other characters than letters, digits, _ and -) is
// quoted, clipped, so that the path reads unambiguously on one line.
func joinPath(parent, key string) string {
	if !plainKey(key) {
		key = strconv.Quote(clip(key, keyBytesMax))
	}
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func plainKey(key string) bool {
	if key == "" || len(key) > keyBytesMax {
		return false
	}
	for _, c := range key {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// clipValue is a JSON value of the file as a problem quotes it: compact,
// on one line, at most about valueBytesMax bytes.
func clipValue(data []byte) string {
	var compact bytes.Buffer
	if json.Compact(&compact, data) != nil {
		compact.Reset()
		compact.Write(bytes.TrimSpace(data))
	}
	return clip(compact.String(), valueBytesMax)
}

// clip cuts text to at most limit bytes, marking the cut, in valid UTF-8.
func clip(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	return strings.ToValidUTF8(text[:limit], "") + "…"
}
