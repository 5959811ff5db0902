package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"strings"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/wire"
)

// Strict input: a body field an operation does not define is refused
// (400 unknown-field, naming it and the nearest field the operation
// has), never ignored: a "lease" meant as leaseMs must not become a
// silent 30 s lease.

// checkFields refuses a request of op that names a field outside allowed:
// unknown, the first key that is none of the wire's, or present, the keys
// it named.
func checkFields(op string, allowed, present wire.Fields, unknown string) error {
	if unknown == "" {
		extra := (present &^ allowed).Names()
		if len(extra) == 0 {
			return nil
		}
		unknown = extra[0]
	}
	return unknownField(op, unknown, allowed.Names())
}

// unknownField is the refusal of key, a field that what (an operation)
// does not define among known: it names the nearest known one.
func unknownField(what, key string, known []string) error {
	e := fenceview.FieldErrorf(fenceview.EUNKNOWNFIELD, key, "unknown field %q", truncate(key, 64))
	switch {
	case len(known) == 0:
		e.Message += "; " + what + " takes no body fields"
	default:
		e.Message += "; did you mean " + `"` + nearest(key, known) + `"? ` + what + " takes " + strings.Join(known, ", ")
	}
	return e
}

// nearest is the known name closest to key: one key begins (lease,
// leaseMs), else the least edit distance, case aside; ties go to the
// first listed.
func nearest(key string, known []string) string {
	lk := strings.ToLower(key)
	best, bestD := known[0], -1
	for _, k := range known {
		lc := strings.ToLower(k)
		d := editDistance(lk, lc)
		if lk != "" && strings.HasPrefix(lc, lk) {
			d = 0
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// editDistance is Levenshtein's distance between a and b, bytes apart; a
// hostile key is cut to 64 bytes first, so this stays cheap.
func editDistance(a, b string) int {
	a, b = truncate(a, 64), truncate(b, 64)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// decodeOp reads b, the JSON body of op's route, into req: fields op does
// not define (outside fields) are refused before anything else is looked at.
func decodeOp(b []byte, op string, fields wire.Fields, req *wire.Request) error {
	present, unknown, err := wire.DecodeRequestFields(b, req)
	if err := checkFields(op, fields, present, unknown); err != nil {
		return err
	}
	if err != nil {
		return requestError("invalid JSON body", err)
	}
	return nil
}

// decodeStrict is encoding/json's decoding of b into v refusing fields v
// does not define (what names the route in the refusal), strings that are
// not UTF-8 (encoding/json would read U+FFFD in their place), and naming
// an integer field that is not one.
func decodeStrict(b []byte, v any, what string) error {
	// encoding/json matches keys case-insensitively and lets a later
	// spelling overwrite an earlier one ({"resources":["a/"],"Resources":[]}
	// would be an unrestricted key): every key must be one of v's names,
	// spelled exactly, before encoding/json sees the body.
	if err := exactKeys(b, reflect.TypeOf(v), what); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			key = strings.Trim(key, `"`)
			return unknownField(what, key, jsonNames(reflect.TypeOf(v)))
		}
		if errors.Is(err, wire.ErrNotInteger) {
			if ferr := wire.CheckText(b, intPaths(reflect.TypeOf(v))); ferr != nil {
				err = ferr
			}
		}
		return requestError("invalid JSON body", err)
	}
	if dec.More() {
		return fenceview.Errorf(fenceview.EINVALID, "invalid JSON body: data after the object")
	}
	if err := wire.CheckText(b, nil); err != nil {
		return requestError("invalid JSON body", err)
	}
	return nil
}

// intPaths reports whether a path names a wire.Int field in the struct t
// points to (or in the structs of its fields: a report's decisions).
func intPaths(t reflect.Type) func(path string) bool {
	paths := map[string]bool{}
	intType := reflect.TypeFor[wire.Int]()
	jsonFields(t, func(f reflect.StructField, _, path string) bool {
		if f.Type == intType {
			paths[path] = true
			return false
		}
		return true
	})
	return func(path string) bool { return paths[path] }
}

// jsonNames lists the JSON field names of the struct t points to, and of
// the structs in its fields (a report's decisions), each once.
func jsonNames(t reflect.Type) []string {
	var names []string
	seen := map[string]bool{}
	jsonFields(t, func(_ reflect.StructField, name, _ string) bool {
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
		return true
	})
	return names
}

// jsonFields calls visit with each JSON-named field of the struct t points
// to (through pointers and slices), its JSON name and its dotted path from
// t, and walks into the fields' own structs, three levels deep, where visit
// says to.
func jsonFields(t reflect.Type, visit func(f reflect.StructField, name, path string) (walkIn bool)) {
	var walk func(t reflect.Type, prefix string, depth int)
	walk = func(t reflect.Type, prefix string, depth int) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || depth > 3 {
			return
		}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "-" || name == "" {
				continue
			}
			if visit(f, name, prefix+name) {
				walk(f.Type, prefix+name+".", depth+1)
			}
		}
	}
	walk(t, "", 0)
}

// exactKeys refuses a key of any object in b that is not, byte for byte,
// the JSON name of a field of the struct t describes at that place (its
// structs' fields, its slices' elements); a map's keys are its own. What
// is not JSON is left to the decoder to refuse.
func exactKeys(b []byte, t reflect.Type, what string) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var walk func(t reflect.Type) error
	walk = func(t reflect.Type) error {
		for t != nil && t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t != nil && reflect.PointerTo(t).Implements(unmarshalerType) {
			t = nil // its own decoding decides what it takes
		}
		tok, err := dec.Token()
		if err != nil {
			return errStopWalk
		}
		switch tok {
		case json.Delim('{'):
			var names map[string]reflect.StructField
			if t != nil && t.Kind() == reflect.Struct {
				names = structFields(t)
			}
			for dec.More() {
				k, err := dec.Token()
				key, ok := k.(string)
				if err != nil || !ok {
					return errStopWalk
				}
				var elem reflect.Type
				switch {
				case t != nil && t.Kind() == reflect.Map:
					elem = t.Elem()
				case names != nil:
					f, ok := names[key]
					if !ok {
						return unknownField(what, key, jsonNames(t))
					}
					elem = f.Type
				}
				if err := walk(elem); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return errStopWalk
			}
		case json.Delim('['):
			var elem reflect.Type
			if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
				elem = t.Elem()
			}
			for dec.More() {
				if err := walk(elem); err != nil {
					return err
				}
			}
			if _, err := dec.Token(); err != nil {
				return errStopWalk
			}
		}
		return nil
	}
	if err := walk(t); err != nil && err != errStopWalk {
		return err
	}
	return nil
}

// errStopWalk ends exactKeys' walk at what is not JSON: the decoder says why.
var errStopWalk = errors.New("not JSON")

// structFields are t's exported fields by their JSON names.
func structFields(t reflect.Type) map[string]reflect.StructField {
	names := map[string]reflect.StructField{}
	for f := range t.Fields() {
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			maps.Copy(names, structFields(f.Type)) // encoding/json's embedded fields
			continue
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names[name] = f
	}
	return names
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
