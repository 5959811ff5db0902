package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/fenceview/fenceview/internal/api"
)

// The HTTP test suite checks every answer it gets (doRequest) and every
// event it reads (stream.next) against internal/api/openapi.yaml, so the document
// and the server cannot drift apart: a field added, renamed or retyped on
// one side and not the other fails the test that saw it.

type specRoute struct {
	path      string
	method    string
	pathItem  *openapi3.PathItem
	operation *openapi3.Operation
}

var spec struct {
	once   sync.Once
	doc    *openapi3.T
	err    error
	mux    *http.ServeMux // patterns from the document's paths, to find a request's operation
	routes map[string]specRoute
}

func loadSpec() error {
	spec.once.Do(func() {
		spec.doc, spec.err = openapi3.NewLoader().LoadFromData(api.JSON())
		if spec.err != nil {
			return
		}
		if spec.err = spec.doc.Validate(context.Background()); spec.err != nil {
			return
		}
		openapi3filter.RegisterBodyDecoder("application/wasm", openapi3filter.FileBodyDecoder)
		openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder)
		spec.mux = http.NewServeMux()
		spec.routes = map[string]specRoute{}
		for path, item := range spec.doc.Paths.Map() {
			for method, op := range item.Operations() {
				pattern := method + " " + path
				if path == "/" {
					pattern = method + " /{$}"
				}
				spec.routes[pattern] = specRoute{path, method, item, op}
				spec.mux.Handle(pattern, http.NotFoundHandler())
			}
		}
	})
	if spec.err != nil {
		return fmt.Errorf("internal/api/openapi.json: %v", spec.err)
	}
	return nil
}

// checkAgainstSpec validates one answer against the operation its request
// matches; a request no operation matches must have been answered 404 or
// 405 with a JSON error.
func checkAgainstSpec(t testing.TB, req *http.Request, res *http.Response, raw []byte) {
	t.Helper()
	if err := specError(req, res, raw); err != nil {
		t.Errorf("OpenAPI: %v", err)
	}
}

func specError(req *http.Request, res *http.Response, raw []byte) error {
	if err := loadSpec(); err != nil {
		return err
	}
	probe := req.Clone(context.Background())
	if probe.Method == http.MethodHead {
		probe.Method = http.MethodGet
	}
	_, pattern := spec.mux.Handler(probe)
	route, ok := spec.routes[pattern]
	if !ok {
		var body struct{ Error string }
		if (res.StatusCode != 404 && res.StatusCode != 405) || json.Unmarshal(raw, &body) != nil || body.Error == "" {
			return fmt.Errorf("%s %s is in no operation of internal/api/openapi.yaml, and was answered %d %q",
				req.Method, req.URL.Path, res.StatusCode, raw)
		}
		return nil
	}
	params := map[string]string{}
	for _, p := range route.operation.Parameters {
		if p.Value != nil && p.Value.In == "path" {
			params[p.Value.Name] = probe.PathValue(p.Value.Name)
		}
	}
	for _, p := range route.pathItem.Parameters {
		if p.Value != nil && p.Value.In == "path" {
			params[p.Value.Name] = probe.PathValue(p.Value.Name)
		}
	}
	// The probe went through no handler, so PathValue is empty: match again.
	matchPathParams(route.path, req.URL.EscapedPath(), params)
	body := raw
	if req.Method == http.MethodHead {
		body = nil
	}
	err := openapi3filter.ValidateResponse(context.Background(), &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request:    req,
			PathParams: params,
			Route:      &routers.Route{Spec: spec.doc, Path: route.path, PathItem: route.pathItem, Method: route.method, Operation: route.operation},
			Options:    &openapi3filter.Options{IncludeResponseStatus: true},
		},
		Status:  res.StatusCode,
		Header:  res.Header,
		Body:    io.NopCloser(bytes.NewReader(body)),
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: req.Method == http.MethodHead},
	})
	if err != nil {
		return fmt.Errorf("%s %s answered %d %s\ndoes not match internal/api/openapi.yaml: %v", req.Method, req.URL.Path, res.StatusCode, raw, err)
	}
	return nil
}

// matchPathParams fills params from a path matched against a template of
// the same number of segments.
func matchPathParams(template, path string, params map[string]string) {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return
	}
	for i, seg := range ts {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			params[strings.Trim(seg, "{}")] = ps[i]
		}
	}
}

// checkMessageAgainstSpec validates a websocket message against one of the
// document's schemas (Event, RpcAnswer).
func checkMessageAgainstSpec(t testing.TB, schema string, raw []byte) {
	t.Helper()
	if err := messageSpecError(schema, raw); err != nil {
		t.Errorf("OpenAPI: %v", err)
	}
}

func messageSpecError(schema string, raw []byte) error {
	if err := loadSpec(); err != nil {
		return err
	}
	ref := spec.doc.Components.Schemas[schema]
	if ref == nil {
		return fmt.Errorf("no schema %s", schema)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return fmt.Errorf("message %q: %v", raw, err)
	}
	if err := ref.Value.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("message %s does not match schema %s: %v", raw, schema, err)
	}
	return nil
}

// TestOpenAPIServed: the server publishes the document it is checked against.
func TestOpenAPIServed(t *testing.T) {
	s := startServer(t)
	r := s.do("GET", "/openapi.json", nil)
	if r.Status != 200 || !bytes.Equal(r.Raw, api.JSON()) {
		t.Fatalf("GET /openapi.json: %d, %d bytes, want the embedded document", r.Status, len(r.Raw))
	}
}

// TestOpenAPICheckCatchesDrift feeds the checker answers that break the
// document, so a checker that accepts everything cannot pass for one.
func TestOpenAPICheckCatchesDrift(t *testing.T) {
	s := startServer(t)
	cases := []struct {
		name, method, path, body string
		status                   int
	}{
		{"renamed field", "GET", "/v1/resources/x", `{"resourceID":"x"}`, 200},
		{"wrong type", "GET", "/v1/locks/x", `{"resourceId":"x","locked":"no","holder":null,"holdCount":0,"token":0,"expiresAt":null,"remainingMs":0,"leaseMs":0,"waiters":0}`, 200},
		{"undocumented field", "GET", "/healthz", `{"status":"ok","extra":1}`, 200},
		{"undocumented status", "GET", "/metrics", `x`, 418},
		{"undocumented route", "GET", "/v1/nothing", `{"ok":true}`, 200},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, s.URL()+c.path, nil)
		res := &http.Response{StatusCode: c.status, Header: http.Header{"Content-Type": {"application/json"}}}
		if specError(req, res, []byte(c.body)) == nil {
			t.Errorf("%s: the checker accepted %s", c.name, c.body)
		}
	}
	if messageSpecError("Event", []byte(`{"seq":1,"type":"grant","resourceId":"x","at":"yesterday"}`)) == nil {
		t.Error("the checker accepted an event with a bad time")
	}
	if messageSpecError("Event", []byte(`{"seq":1,"type":"grant","resourceId":"x","token":3,"at":"2026-09-24T06:14:22.000Z"}`)) != nil {
		t.Error("the checker refused a good event")
	}
}
