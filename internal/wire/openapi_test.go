package wire

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/internal/api"
)

// jsonFields returns the JSON names of t's fields, an embedded struct's
// among them, and, of those, the ones always written (no omitempty or
// omitzero).
func jsonFields(t reflect.Type) (names, always []string) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct {
			n, a := jsonFields(f.Type)
			names, always = append(names, n...), append(always, a...)
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

// Every body of the wire is the schema internal/api/openapi.yaml gives it: the same
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
	// union is one schema of the properties of all of schemas.
	union := func(schemas ...*openapi3.Schema) *openapi3.Schema {
		u := openapi3.NewObjectSchema()
		for _, s := range schemas {
			for p, ref := range s.Properties {
				u.WithPropertyRef(p, ref)
			}
		}
		return u
	}
	operation := func(id string) *openapi3.Operation {
		for _, item := range doc.Paths.Map() {
			for _, op := range item.Operations() {
				if op.OperationID == id {
					return op
				}
			}
		}
		t.Fatalf("no operation %s", id)
		return nil
	}
	// answer is the schema of operation id's answer with status.
	answer := func(id string, status int) *openapi3.Schema {
		return operation(id).Responses.Status(status).Value.Content.Get("application/json").Schema.Value
	}
	// requests is the request bodies of the operations ids, which share one
	// body type, as one schema: the union of their properties (a field the
	// server reads for none of them, or a property it does not read, is a
	// disagreement).
	requests := func(ids ...string) *openapi3.Schema {
		var bodies []*openapi3.Schema
		for _, id := range ids {
			bodies = append(bodies, operation(id).RequestBody.Value.Content.Get("application/json").Schema.Value)
		}
		return union(bodies...)
	}
	item := func(s *openapi3.Schema, array string) *openapi3.Schema { return s.Properties[array].Value.Items.Value }
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
		// Semaphores, multi-locks and elections.
		{SemaphoreRequest{}, "semaphore acquire and release requests", requests("semaphoreAcquire", "semaphoreRelease"), false},
		{PermitsRequest{}, "setPermits request", requests("setPermits"), false},
		{PermitGrant{}, "PermitGrant", schema("PermitGrant"), true},
		{SlotReleased{}, "semaphoreRelease's answer", answer("semaphoreRelease", 200), true},
		{Semaphore{}, "Semaphore", schema("Semaphore"), true},
		{Slot{}, "Semaphore's held", item(schema("Semaphore"), "held"), true},
		{LockAllRequest{}, "acquire-all and release-all requests", requests("acquireAll", "releaseAll"), false},
		{Grants{}, "acquireAll's answer", answer("acquireAll", 200), true},
		{ReleasedAll{}, "releaseAll's answer", answer("releaseAll", 200), true},
		{ElectionRequest{}, "election requests", requests("campaign", "proclaim", "resign", "renewLeadership"), false},
		{Leader{}, "Leader", schema("Leader"), true},
		{Elected{}, "campaign's answer", answer("campaign", 200), true},
		{Elected{}, "renewLeadership's answer", answer("renewLeadership", 200), true},
		{Election{}, "getElection's answer", answer("getElection", 200), true},
		{Election{}, "proclaim's answer", answer("proclaim", 200), true},
		{Resigned{}, "resign's answer", answer("resign", 200), true},
		// What a client reads of a 409 (the server writes each refusal's
		// own fields).
		{Conflict{}, "the lock routes' refusals", union(schema("LockDelay"), schema("LocksHeld"), schema("LeaderHeld"), schema("PermitsRefusal"), schema("LockHeld")), false},
		{HeldLock{}, "LocksHeld's held", item(schema("LocksHeld"), "held"), false},
		{ErrorBody{}, "Error", schema("Error"), false},
		// Keys.
		{KeyRequest{}, "createKey request", requests("createKey"), false},
		{Key{}, "Key", schema("Key"), true},
		{Keys{}, "listKeys' answer", answer("listKeys", 200), true},
		{KeyRevoked{}, "revokeKey's answer", answer("revokeKey", 200), true},
		{SigningKey{}, "SigningKey", schema("SigningKey"), true},
		{SigningKeys{}, "listSigningKeys' answer", answer("listSigningKeys", 200), true},
		{SigningKeyRemoved{}, "removeSigningKey's answer", answer("removeSigningKey", 200), true},
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
