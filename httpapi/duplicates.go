package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// jsonFrame is one object or array open in the walk of findDuplicateKey.
type jsonFrame struct {
	// array: an array, whose values need no key; elem is the type its
	// values decode into (nil: no struct below).
	array bool
	elem  reflect.Type
	// fields maps the folded names of the fields of the struct an object
	// decodes into to the fields; nil for an object that decodes into no
	// struct (a map, a schema, a payload), whose keys match exactly.
	fields map[string]jsonField
	// keys holds the keys seen so far (folded when fields is set);
	// allocated at the first key.
	keys map[string]bool
	// expectKey is true when the next token is a key (or the closing
	// brace), false when it is the value of the last key, whose type is
	// value and whose field (in an object that decodes into a struct; ""
	// for a key that names none) is field.
	expectKey bool
	value     reflect.Type
	field     string
}

// findDuplicateKey reports the first key that appears twice in one object
// of a JSON document that decodes into a value of type into, at any depth;
// "" when there is none, or the document is malformed or nested deeper
// than jsonNestingDepthMax (the strict decoder reports those). In an
// object that decodes into a struct, keys are compared as encoding/json
// matches them to fields, under Unicode case folding ("ſ" is "s"), so two
// keys that would fill one field are a duplicate; in any other object (a
// map, a schema, a payload) keys match exactly.
func findDuplicateKey(data []byte, into reflect.Type) string {
	key, _ := locateDuplicateKey(data, into)
	return key
}

// locateDuplicateKey is findDuplicateKey that also names the field of
// the top-level struct whose value holds the duplicate ("schema" for a
// key given twice inside a topic's schema); "" when the duplicate is at
// the top level or under a key that names no field.
func locateDuplicateKey(data []byte, into reflect.Type) (key, within string) {
	decoder := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonFrame
	for {
		token, err := decoder.Token()
		if err != nil || len(stack) > jsonNestingDepthMax {
			return "", ""
		}
		var top *jsonFrame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && !top.array && top.expectKey {
			if key, isKey := token.(string); isKey {
				if duplicate := top.sawKey(key); duplicate != "" {
					if len(stack) > 1 && !stack[0].array {
						within = stack[0].field
					}
					return duplicate, within
				}
				continue
			}
		}
		switch token {
		case json.Delim('{'):
			stack = append(stack, &jsonFrame{fields: structFields(valueType(top, into)), expectKey: true})
			continue
		case json.Delim('['):
			stack = append(stack, &jsonFrame{array: true, elem: elemType(valueType(top, into))})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A complete value ended: the enclosing object expects a key.
		if len(stack) > 0 && !stack[len(stack)-1].array {
			stack[len(stack)-1].expectKey = true
		}
	}
}

// jsonField is a struct field as a JSON object's key fills it.
type jsonField struct {
	name string // its JSON name, as the struct's tag gives it
	typ  reflect.Type
}

// sawKey records key in the object; when it was there already, it
// returns the name to report (the field's JSON name in a struct, else the
// key), else "".
func (f *jsonFrame) sawKey(key string) string {
	f.expectKey, f.value, f.field = false, nil, ""
	if f.fields != nil {
		folded := foldKey(key)
		if field, known := f.fields[folded]; known {
			f.value, f.field = field.typ, field.name
			key = field.name
		} else {
			key = folded
		}
	}
	if f.keys[key] {
		return key
	}
	if f.keys == nil {
		f.keys = map[string]bool{}
	}
	f.keys[key] = true
	return ""
}

// valueType is the type of the value that starts now: the current key's
// in an object, the element type in an array, into at the top.
func valueType(top *jsonFrame, into reflect.Type) reflect.Type {
	switch {
	case top == nil:
		return into
	case top.array:
		return top.elem
	default:
		return top.value
	}
}

// elemType is the type of the values of an array that decodes into t.
func elemType(t reflect.Type) reflect.Type {
	t = indirect(t)
	if t == nil || t.Kind() != reflect.Slice && t.Kind() != reflect.Array {
		return nil
	}
	return t.Elem()
}

func indirect(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// fieldsByType caches structFields.
var fieldsByType sync.Map // reflect.Type -> map[string]jsonField

// structFields maps the folded JSON names of the fields of struct t (those
// of embedded structs included) to the fields; nil when t is no struct.
func structFields(t reflect.Type) map[string]jsonField {
	t = indirect(t)
	if t == nil || t.Kind() != reflect.Struct {
		return nil
	}
	if fields, ok := fieldsByType.Load(t); ok {
		return fields.(map[string]jsonField)
	}
	fields := map[string]jsonField{}
	addFields(fields, t)
	fieldsByType.Store(t, fields)
	return fields
}

func addFields(fields map[string]jsonField, t reflect.Type) {
	for i := range t.NumField() {
		field := t.Field(i)
		tag := field.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if field.Anonymous && name == "" && indirect(field.Type).Kind() == reflect.Struct {
			addFields(fields, indirect(field.Type))
			continue
		}
		if !field.IsExported() {
			continue
		}
		if name == "" {
			name = field.Name
		}
		fields[foldKey(name)] = jsonField{name: name, typ: field.Type}
	}
}

// foldKey maps every rune of key to the least rune of its Unicode simple
// case folding orbit, so two keys encoding/json would match to the same
// field fold to the same string.
func foldKey(key string) string {
	var folded strings.Builder
	folded.Grow(len(key))
	for _, r := range key {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		folded.WriteRune(least)
	}
	return folded.String()
}

// errDuplicateKey is the decode error of a key given twice, inside the
// value of the top-level field within when it is set ("schema: duplicate
// field ...": the key is the schema's, not the request's).
func errDuplicateKey(key, within string) error {
	if within != "" {
		return fmt.Errorf("%s: duplicate field %s", within, quoteClipped(key))
	}
	return fmt.Errorf("duplicate field %s", quoteClipped(key))
}
