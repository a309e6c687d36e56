package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// jsonObject is one object being walked by findDuplicateKey.
type jsonObject struct {
	// keys holds the keys seen so far (folded to lower case in the
	// request object, whose keys decode into struct fields, which match
	// without regard to case).
	keys map[string]bool
	// expectKey is true when the next token is a key (or the closing
	// brace), false when it is the value of the last key.
	expectKey bool
	folded    bool
}

// findDuplicateKey reports the first key that appears twice in one object
// of a JSON document, at any depth; "" when there is none or the document
// is malformed (the strict decoder reports that). Keys of the top-level
// object match regardless of case, as encoding/json matches them to
// struct fields; deeper keys (a schema, a payload) match exactly.
func findDuplicateKey(data []byte) string {
	decoder := json.NewDecoder(bytes.NewReader(data))
	var stack []*jsonObject
	for {
		token, err := decoder.Token()
		if err != nil {
			return ""
		}
		var top *jsonObject
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.expectKey {
			if key, isKey := token.(string); isKey {
				if top.folded {
					key = strings.ToLower(key)
				}
				if top.keys[key] {
					return key
				}
				top.keys[key] = true
				top.expectKey = false
				continue
			}
		}
		switch token {
		case json.Delim('{'):
			stack = append(stack, &jsonObject{keys: map[string]bool{}, expectKey: true, folded: len(stack) == 0})
			continue
		case json.Delim('}'):
			stack = stack[:len(stack)-1]
		case json.Delim('['):
			stack = append(stack, nil) // an array: its values need no key
			continue
		case json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A complete value ended: the enclosing object expects a key.
		if len(stack) > 0 && stack[len(stack)-1] != nil {
			stack[len(stack)-1].expectKey = true
		}
	}
}

// errDuplicateKey is the decode error of a key given twice.
func errDuplicateKey(key string) error {
	return fmt.Errorf("duplicate field %q", key)
}
