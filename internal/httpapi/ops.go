package httpapi

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/wire"
	"github.com/fenceview/fenceview/internal/wire/op"
)

// The operations of the API. Each is declared once, in package op (its
// route, RPC op and fields); a row here adds who may use it (the action
// the caller's role must allow), how admission sees it (its level and
// cost), and the one function that validates and serves it. The mux's
// routes, the RPC dispatch, the access map, the strict field sets,
// admission's classes and the escape hints of a 404 are all read from
// this table; a test holds it equal to internal/api/openapi.yaml.
//
// Adding an operation is its Spec in package op, one row here, its serve
// function (which calls the service), and its client methods.
var operations = []operation{
	// Locks.
	{spec: &op.Acquire, action: auth.Lock, class: classNew, serve: lockOp((*Server).acquire), then: lockThen((*Server).acquireThen)},
	{spec: &op.Renew, action: auth.Lock, class: classLease, serve: lockOp((*Server).renew), then: lockThen((*Server).renewThen)},
	{spec: &op.Release, action: auth.Lock, class: classLease, serve: lockOp((*Server).release), then: lockThen((*Server).releaseThen)},
	{spec: &op.Lock, action: auth.Read, class: classRead, serve: resourceOp((*Server).lockState)},
	{spec: &op.Expire, action: auth.Manage, handle: (*Server).handleExpire},
	{spec: &op.Reset, action: auth.Manage, handle: (*Server).handleReset},
	{spec: &op.Recover, action: auth.Manage, handle: (*Server).handleRecover},

	// Fenced writes and the guards' reports.
	{spec: &op.Fence, action: auth.Fence, class: classFence, serve: (*Server).fenceOp, then: (*Server).fenceThen},
	{spec: &op.Decisions, action: auth.Report, class: classReport, handle: (*Server).handleDecisions},

	// Semaphores.
	{spec: &op.SemaphoreAcquire, action: auth.Lock, class: classNew, serve: bodyOp((*Server).semaphoreAcquire, (*wire.Request).SemaphoreBody)},
	{spec: &op.SemaphoreRelease, action: auth.Lock, class: classLease, serve: bodyOp((*Server).semaphoreRelease, (*wire.Request).SemaphoreBody)},
	{spec: &op.SemaphorePermits, action: auth.Manage, class: classNew, serve: bodyOp((*Server).semaphorePermits, (*wire.Request).PermitsBody)},
	{spec: &op.Semaphore, action: auth.Read, class: classRead, serve: nameOp((*Server).semaphoreState)},

	// Multi-locks.
	{spec: &op.AcquireAll, action: auth.Lock, class: classNew, serve: bodyOp((*Server).acquireAll, (*wire.Request).LockAllBody)},
	{spec: &op.ReleaseAll, action: auth.Lock, class: classLease, serve: bodyOp((*Server).releaseAll, (*wire.Request).LockAllBody)},

	// Elections.
	{spec: &op.Campaign, action: auth.Lock, class: classNew, serve: bodyOp((*Server).campaign, (*wire.Request).ElectionBody)},
	{spec: &op.Proclaim, action: auth.Lock, class: classNew, serve: bodyOp((*Server).proclaim, (*wire.Request).ElectionBody)},
	{spec: &op.Resign, action: auth.Lock, class: classLease, serve: bodyOp((*Server).resign, (*wire.Request).ElectionBody)},
	{spec: &op.ElectionRenew, action: auth.Lock, class: classLease, serve: bodyOp((*Server).renewLeadership, (*wire.Request).ElectionBody)},
	{spec: &op.Election, action: auth.Read, class: classRead, serve: nameOp((*Server).electionState)},

	// Resources and history.
	{spec: &op.Resources, action: auth.Read, handle: (*Server).handleResources},
	{spec: &op.Resource, action: auth.Read, class: classRead, serve: resourceOp((*Server).resourceState)},
	{spec: &op.Rejections, action: auth.Read, handle: (*Server).handleRejections},

	// Streams: long-lived, so not admitted (a seat held for hours would be
	// a seat lost); bounded by --max-websockets instead. A guard's key
	// may open the RPC stream to fence over it; each op is then checked
	// by its own action.
	{spec: &op.Events, action: auth.Read, stream: (*Server).handleEvents},
	{spec: &op.RPC, action: auth.Fence, stream: (*Server).handleRPC},

	// Keys: the signing keys guards verify with (public), and API keys.
	{spec: &op.SigningKeys, public: true, handle: (*Server).handleSigningKeys},
	{spec: &op.RotateSigningKey, action: auth.Manage, handle: (*Server).handleRotateSigningKey},
	{spec: &op.RemoveSigningKey, action: auth.Manage, handle: (*Server).handleRemoveSigningKey},
	{spec: &op.CreateKey, action: auth.Manage, handle: (*Server).handleCreateKey},
	{spec: &op.Keys, action: auth.Manage, handle: (*Server).handleKeys},
	{spec: &op.RevokeKey, action: auth.Manage, handle: (*Server).handleRevokeKey},
}

// operation is one row of the table.
type operation struct {
	spec   *op.Spec
	action auth.Action
	public bool    // anyone may use it, auth on or off (action unused)
	class  opClass // admission's view; the zero class is not admitted

	// Read from spec when the table is indexed.
	op        string // the RPC stream's op; "" when only the JSON API has it
	route     string // the JSON API's pattern, "METHOD /path"
	target    target // what the route's path names
	fields    wire.Fields
	emptyBody bool

	// serve validates and serves one call, the same over the JSON API and
	// the RPC stream; handle serves a route only the JSON API has, one
	// whose body or answer is not a wire.Request's (listings, reports,
	// keys), decoding its own body; both return what the answer stage
	// (answerOf) writes. stream serves a long-lived route that writes its
	// own answers (events, the RPC stream). A row has one of the three.
	serve  func(s *Server, ctx context.Context, c *opCall) (any, error)
	handle func(s *Server, w http.ResponseWriter, r *http.Request) (any, error)
	stream func(s *Server, w http.ResponseWriter, r *http.Request)
	// then, when set, is serve answered through done once durable, for a
	// service that can (thenService): the RPC stream serves a request that
	// never waits so, without a goroutine parked until its commit.
	then func(s *Server, ts thenService, ctx context.Context, c *opCall, done answerer)
}

// answerer is told what an operation's then served, as serve returns it
// (operation.then). An interface rather than a func: the RPC stream's
// request (rpcThen) is told directly, where a method value would cost an
// allocation a request.
type answerer interface {
	answer(out any, err error)
}

// thenService is a service that answers a change once it is durable
// without a goroutine waiting for it (the issuer's changeThen).
type thenService interface {
	AcquireThen(ctx context.Context, req fenceview.AcquireRequest, then func(fenceview.Grant, error))
	RenewThen(ctx context.Context, resourceID, holder string, lease time.Duration, then func(fenceview.Grant, error))
	ReleaseThen(ctx context.Context, resourceID, holder string, then func(int, error))
	FenceThen(ctx context.Context, f fenceview.Fence, then func(guard.Decision, error))
}

// target is what an operation's route path names.
type target uint8

const (
	targetNone     target = iota
	targetResource        // {resource}: a lock's id, validated and held to the caller's prefixes before serve runs (a handle does it itself)
	targetName            // {name}: a primitive's name, validated by serve (semaphores and elections differ)
)

// opCall is one request of an operation however it came: its wire fields
// (the route's {resource} or {name} in Resource or Name), and over the
// JSON API the HTTP request (for its headers and client), over the RPC
// stream the connection's origin.
type opCall struct {
	opBody               // req: the wire fields; decoded in place over the JSON API
	http   *http.Request // nil over the RPC stream
	origin string        // rpc:<host>, the source of a fence with auth off
}

// admitted reports whether admission gives the operation a seat.
func (o *operation) admitted() bool { return o.class.cost > 0 }

// The table, indexed.
var (
	opsByName  = map[string]*operation{} // by RPC op
	opsByRoute = map[string]*operation{} // by route pattern
	// rpcOpFields are the fields of each op's line on the RPC stream.
	rpcOpFields = map[string]wire.Fields{}
	// rpcOpNames lists the RPC ops, in the table's order, for refusals.
	rpcOpNames []string
	// idRoutes are the routes whose path names a resource or a primitive,
	// for the escape hint of a 404 (escapeHint).
	idRoutes []idRoute
)

func init() {
	for i := range operations {
		o := &operations[i]
		if n := btoi(o.serve != nil) + btoi(o.handle != nil) + btoi(o.stream != nil); n != 1 {
			panic("httpapi: operation " + o.spec.Route() + " needs one of serve, handle and stream")
		}
		o.op, o.route, o.fields, o.emptyBody = o.spec.Op, o.spec.Route(), o.spec.Fields, o.spec.EmptyBody
		switch o.spec.Target() {
		case "resource":
			o.target = targetResource
		case "name":
			o.target = targetName
		}
		opsByRoute[o.route] = o
		if o.target != targetNone {
			addIDRoute(o.route)
		}
		if o.op == "" {
			continue
		}
		if o.serve == nil {
			panic("httpapi: RPC op " + o.op + " without serve")
		}
		opsByName[o.op] = o
		rpcOpNames = append(rpcOpNames, o.op)
		rpcOpFields[o.op] = o.spec.LineFields()
	}
	for _, spec := range op.All {
		if opsByRoute[spec.Route()] == nil {
			panic("httpapi: operation " + spec.Route() + " has no row")
		}
	}
}

// registerOperations adds every operation's route to the mux.
func (s *Server) registerOperations() {
	for i := range operations {
		o := &operations[i]
		switch {
		case o.stream != nil:
			stream := o.stream
			s.route(o.route, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { stream(s, w, r) }))
		case o.handle != nil:
			s.route(o.route, s.handlerOf(o))
		default:
			s.route(o.route, s.operationHandler(o))
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// lockOp serves acquire, renew or release: the one validation of a lock
// request, then op.
func lockOp(op func(*Server, context.Context, string, lockRequest) (any, error)) func(*Server, context.Context, *opCall) (any, error) {
	return func(s *Server, ctx context.Context, c *opCall) (any, error) {
		lr := lockRequestOf(&c.req)
		if err := lr.validate(); err != nil {
			return nil, err
		}
		return op(s, ctx, c.req.Resource, lr)
	}
}

// lockThen is lockOp answered through done (operation.then).
func lockThen(op func(*Server, thenService, context.Context, string, lockRequest, answerer)) func(*Server, thenService, context.Context, *opCall, answerer) {
	return func(s *Server, ts thenService, ctx context.Context, c *opCall, done answerer) {
		lr := lockRequestOf(&c.req)
		if err := lr.validate(); err != nil {
			done.answer(nil, err)
			return
		}
		op(s, ts, ctx, c.req.Resource, lr, done)
	}
}

// resourceOp serves a read of one resource (validated by then).
func resourceOp(op func(*Server, context.Context, string) (any, error)) func(*Server, context.Context, *opCall) (any, error) {
	return func(s *Server, ctx context.Context, c *opCall) (any, error) { return op(s, ctx, c.req.Resource) }
}

// bodyOp serves a primitive's op: its name (empty for the multi-locks,
// which have none) and the body its fields make.
func bodyOp[T any](op func(*Server, context.Context, string, T) (any, error), body func(*wire.Request) T) func(*Server, context.Context, *opCall) (any, error) {
	return func(s *Server, ctx context.Context, c *opCall) (any, error) {
		return op(s, ctx, c.req.Name, body(&c.req))
	}
}

// nameOp serves a primitive's state: its name alone.
func nameOp(op func(*Server, context.Context, string) (any, error)) func(*Server, context.Context, *opCall) (any, error) {
	return func(s *Server, ctx context.Context, c *opCall) (any, error) { return op(s, ctx, c.req.Name) }
}

// idRoute is the shape of the routes whose path names an id: the path
// before it, and the verbs that may follow it ("" for none).
type idRoute struct {
	method, prefix string
	verbs          []string
}

func addIDRoute(route string) {
	method, path, _ := strings.Cut(route, " ")
	open := strings.IndexByte(path, '{')
	closing := strings.IndexByte(path, '}')
	prefix, verb := path[:open], strings.TrimPrefix(path[closing+1:], "/")
	for i := range idRoutes {
		if idRoutes[i].method == method && idRoutes[i].prefix == prefix {
			idRoutes[i].verbs = append(idRoutes[i].verbs, verb)
			return
		}
	}
	idRoutes = append(idRoutes, idRoute{method, prefix, []string{verb}})
}

// escapeHint is the path a request most likely meant when it put a
// resource id with a slash into the path unescaped (/v1/locks/orders/2/acquire
// for /v1/locks/orders%2F2/acquire), or "" when it does not look like one.
// Ids are not read from the rest of the path instead: a route's shape would
// then depend on the id (is "orders/acquire" an id, or an id and a verb?).
func escapeHint(method, path string) string {
	for _, route := range idRoutes {
		rest, ok := strings.CutPrefix(path, route.prefix)
		if !ok || method != route.method {
			continue
		}
		id, suffix := rest, ""
		if i := strings.LastIndexByte(rest, '/'); i >= 0 && rest[i+1:] != "" && slices.Contains(route.verbs, rest[i+1:]) {
			id, suffix = rest[:i], rest[i:]
		} else if !slices.Contains(route.verbs, "") {
			return "" // not one of the verbs that follow an id here
		}
		if !strings.Contains(id, "/") || guard.ValidateResourceID(id) != nil {
			return ""
		}
		return route.prefix + url.PathEscape(id) + suffix
	}
	return ""
}
