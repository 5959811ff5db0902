package wire

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fenceview/fenceview/api"
	"github.com/fenceview/fenceview/guard/httpguard"
)

// jsonFields returns the JSON names of t's fields and, of those, the ones
// always written (no omitempty or omitzero).
func jsonFields(t reflect.Type) (names, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") {
			always = append(always, name)
		}
	}
	slices.Sort(names)
	slices.Sort(always)
	return names, always
}

// Every body of the wire is the schema api/openapi.yaml gives it: the same
// properties, and every property the schema requires always written (for
// what the server writes; a request's fields are the client's to leave
// out).
func TestBodiesMatchOpenAPI(t *testing.T) {
	doc, err := openapi3.NewLoader().LoadFromData(api.JSON())
	if err != nil {
		t.Fatal(err)
	}
	schema := func(name string) *openapi3.Schema {
		ref := doc.Components.Schemas[name]
		if ref == nil {
			t.Fatalf("no schema %s", name)
		}
		return ref.Value
	}
	// answer is the schema of operation id's answer with status.
	answer := func(id string, status int) *openapi3.Schema {
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				if op.OperationID == id {
					return op.Responses.Status(status).Value.Content.Get("application/json").Schema.Value
				}
			}
		}
		t.Fatalf("no operation %s", id)
		return nil
	}
	for _, c := range []struct {
		body    any
		name    string
		schema  *openapi3.Schema
		written bool // the server writes it: required means always there
	}{
		{Grant{}, "Grant", schema("Grant"), true},
		{Fencing{}, "Fencing", schema("Fencing"), true},
		{Lock{}, "Lock", schema("Lock"), true},
		{Resource{}, "Resource", schema("Resource"), true},
		{Times{}, "LockTimes", schema("LockTimes"), true},
		{Durations{}, "DurationWindow", schema("DurationWindow"), true},
		{Rejection{}, "Rejection", schema("Rejection"), true},
		{Event{}, "Event", schema("Event"), true},
		{Released{}, "release's answer", answer("release", 200), true},
		{FenceAccepted{}, "fence's answer", answer("fence", 200), true},
		// The refusal is guard/httpguard's: resources write it without
		// the server.
		{httpguard.Refusal{}, "fence's refusal", answer("fence", 409), true},
		{Request{}, "RpcRequest", schema("RpcRequest"), false},
		{Answer{}, "RpcAnswer", schema("RpcAnswer"), true},
	} {
		names, always := jsonFields(reflect.TypeOf(c.body))
		var props []string
		for p := range c.schema.Properties {
			props = append(props, p)
		}
		slices.Sort(props)
		if !slices.Equal(names, props) {
			t.Errorf("%T has fields %v, schema %s properties %v", c.body, names, c.name, props)
		}
		if !c.written {
			continue
		}
		for _, r := range c.schema.Required {
			if !slices.Contains(always, r) {
				t.Errorf("%T: %s is required by schema %s but not always written", c.body, r, c.name)
			}
		}
	}
}
