package httpapi

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/fenceview/fenceview"
	"github.com/fenceview/fenceview/internal/auth"
	"github.com/fenceview/fenceview/internal/httpapi/request"
	"github.com/fenceview/fenceview/internal/wire"
)

// The RPC stream (GET /v1/rpc, a websocket) carries the lock operations and
// fenced writes of many callers over one connection. An HTTP/1.1 request
// costs a round trip of parsing and syscalls per call; here requests and
// answers are batched per message, so a busy connection spends its time on
// the work itself. Answers are exactly what the JSON API answers.
//
// A message holds one or more requests, one JSON object per line:
//
//	{"id":7,"op":"acquire","resource":"r","holder":"a","leaseMs":30000,"waitMs":0}
//	{"id":8,"op":"fence","resource":"r","token":12}
//
// op is one of the operations table's (ops.go): acquire, renew, release,
// fence or lock, or one of the primitives' (semaphore-acquire,
// acquire-all, campaign...), whose fields are the JSON API's ({name} of
// the route included). Answers come
// back as they are ready, in any order, batched the same way:
//
//	{"id":7,"status":200,"body":{...the JSON API's answer...}}
//
// A connection costs a fixed budget, whatever its client does: a reader, a
// writer, at most rpcWorkers lock changes and fences in flight with no
// goroutine of their own (serveThen), rpcWorkers workers for the other
// operations and rpcMaxWaiting waiting acquires,
// one message buffered at a time (see readWhole), and at most
// rpcAnswerQueue answers waiting for the writer. A client that sends faster than it is served is
// not read until a request is done (TCP pushes back). Nor is one that is
// slow to read its answers: while rpcAnswerRoom of them wait for the
// writer, the reader takes no request, so a client busy sending a burst
// is not cut off for answers it has not had the time to read. One that
// stops reading is closed when a write has waited writeWait, or, should
// its queue still fill (its waiting acquires all served at once), once
// rpcAnswerQueue answers wait, as gorilla's chat example drops a client
// whose send buffer is full: nothing more is buffered on its behalf.
const (
	rpcMaxMessage  = 1 << 20         // bytes in one message from a client
	rpcMaxLine     = request.MaxBody // bytes in one request line, as in one JSON body
	rpcWorkers     = 64              // requests of one connection served at once, waiting acquires aside
	rpcAnswerQueue = 256             // answers of one connection waiting for its writer
	rpcAnswerRoom  = 128             // answers waiting for the writer at which the reader pauses: with 2*rpcWorkers in flight, under rpcAnswerQueue
	// rpcKeyInFlight bounds the requests of one key served at once over
	// all its RPC connections (waiting acquires aside): a key cannot
	// multiply its share of the server by opening more connections.
	rpcKeyInFlight = 128
)

var rpcUpgrader = websocket.Upgrader{
	ReadBufferSize:  16 << 10,
	WriteBufferSize: 16 << 10,
	Error:           upgrader.Error,
}

// handleRPC upgrades the request and runs the connection until its client
// leaves, within the server's websocket budget.
func (s *Server) handleRPC(w http.ResponseWriter, r *http.Request) {
	release, ok := s.acceptWebsocket(w, r)
	if !ok {
		return
	}
	defer release()
	conn, err := rpcUpgrader.Upgrade(w, r, nil)
	untrack, ok := s.track(conn, err)
	if !ok {
		return
	}
	defer untrack()
	c := s.newRPCConn(conn, r)
	defer c.close()
	c.run()
}

// rpcConn is one RPC connection: its reader (read, the handler's own
// goroutine), its writer, and the workers the reader starts, at most
// rpcWorkers, which live as long as the connection.
type rpcConn struct {
	s      *Server
	conn   *websocket.Conn
	p      *auth.Principal
	source string
	addr   string // the client's address: its flow with auth off
	// flow and fclass are its flow in admission control (flowOf), made
	// once: the connection's key and address never change.
	flow, fclass string
	ctx          context.Context
	cancel       context.CancelCauseFunc // with errKeyGone at a revocation: its refusals are 401s
	out          rpcOut
	work         chan wire.Request // to an idle worker; unbuffered
	req          wire.Request      // the reader's decoding target (take)
	msg          []byte            // the reader's message buffer (readWhole)
	ts           thenService       // the service, when it answers changes once durable (serveThen)
	thenSlots    chan struct{}     // requests served by serveThen, at most rpcWorkers
	inline       []byte            // the reader's answer buffer (serveInline)

	// Answers waiting for the writer, encoded straight into one buffer
	// (reply): no buffer and no channel send per answer. The writer takes
	// the buffer whole and leaves its last one in its place.
	qmu      sync.Mutex
	pending  []byte        // answers, one per line
	npending atomic.Int64  // answers in pending, at most rpcAnswerQueue; changed under qmu, read without it by waitRoom
	closing  bool          // no answer comes after pending: the writer ends
	wake     chan struct{} // to the writer: pending is not empty (or closing)
	room     chan struct{} // to the reader: the writer took the pending answers
	workers  atomic.Int64  // running: started by the reader, at most rpcWorkers
	slots    chan struct{} // the key's requests in flight (rpcKeyInFlight); nil with auth off

	inflight sync.WaitGroup
	busy     atomic.Int64 // requests handed to workers or waiting, not yet answered
	waiting  atomic.Int64 // acquires with waitMs > 0
	dropped  atomic.Bool  // closed for not reading its answers

	// Ending (end): for a revoked key or an ended session, or because the
	// service it reaches has ended (a cluster leader's term): the reader
	// takes no more messages, and once every request taken is answered
	// and sent the connection closes, saying why. rmu orders the reader's
	// extensions of its deadline after end's last one.
	rmu    sync.Mutex
	ending atomic.Pointer[rpcEnd]
	// serviceEnded is closed when the server's service closes (nil when
	// it does not say).
	serviceEnded <-chan struct{}
}

// rpcEnd is why the server ends a connection: the close frame it sends
// once every request the connection took is answered.
type rpcEnd struct {
	code int
	text string
}

var (
	// endRevoked: the credential is gone; reconnecting needs another.
	endRevoked = &rpcEnd{websocket.ClosePolicyViolation, errKeyGone.Message}
	// endService: the service the connection reached ended, as a cluster
	// leader's ends with its term; the node serves on (forwarding to the
	// next leader), so a new connection reaches the service of now.
	// Requests this connection did not answer were not taken.
	endService = &rpcEnd{websocket.CloseServiceRestart, wire.ServiceEnded}
)

// closingService is a service that says when it closes (issuer.Service).
type closingService interface {
	Closing() <-chan struct{}
}

// newRPCConn is the connection of the upgraded request r, with its
// caller's share of the key's requests in flight; close releases it.
func (s *Server) newRPCConn(conn *websocket.Conn, r *http.Request) *rpcConn {
	c := &rpcConn{
		s: s, conn: conn, p: auth.FromContext(r.Context()), source: "rpc:" + clientHost(r), addr: s.clientAddr(r),
		wake: make(chan struct{}, 1), room: make(chan struct{}, 1), work: make(chan wire.Request),
	}
	c.out.conn = conn
	if c.ts, _ = s.Service.(thenService); c.ts != nil {
		c.thenSlots = make(chan struct{}, rpcWorkers)
	}
	if cs, ok := s.Service.(closingService); ok {
		c.serviceEnded = cs.Closing()
	}
	c.flow, c.fclass = flowOf(c.p, c.addr)
	if c.p.KeyID != "" { // auth on: the key's share (with auth off, everyone is one caller)
		c.slots = s.keySlots.open(c.p.KeyID)
	}
	c.ctx, c.cancel = context.WithCancelCause(context.WithoutCancel(r.Context()))
	return c
}

func (c *rpcConn) close() {
	c.cancel(nil)
	if c.slots != nil {
		c.s.keySlots.close(c.p.KeyID)
	}
}

// run serves the connection: the writer in its own goroutine, the reader
// in this one, until the client leaves.
func (c *rpcConn) run() {
	writerDone := make(chan struct{})
	go c.writer(writerDone)
	c.read()
	c.shutdown(writerDone)
}

// shutdown ends a connection whose reader has stopped: waiting acquires
// give up, the rest finish (their changes are committed whether or not
// anyone reads the answer), and the writer sends what is pending, then
// ends. A connection the server ended (end) then says why: 1008 for its
// credential, 1012 for its service. Every request it took has had its
// answer first.
func (c *rpcConn) shutdown(writerDone <-chan struct{}) {
	c.cancel(nil)
	close(c.work)
	c.inflight.Wait()
	c.qmu.Lock()
	c.closing = true
	c.qmu.Unlock()
	c.wakeWriter()
	<-writerDone
	if why := c.ending.Load(); why != nil {
		c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(why.code, why.text), time.Now().Add(writeWait))
		lingerClose(c.conn.UnderlyingConn())
	}
}

// read takes requests until the client leaves or the connection is
// closed. Each message is read whole before any of its requests is
// applied, so a message over rpcMaxMessage changes nothing: gorilla ends
// the read at the limit and closes the connection (1009).
func (c *rpcConn) read() {
	conn := c.conn
	conn.SetReadLimit(rpcMaxMessage)
	c.extendRead()
	conn.SetPongHandler(func(string) error { return c.extendRead() })
	for {
		_, mr, err := conn.NextReader()
		if err != nil {
			return
		}
		c.extendRead()
		msg, big, err := c.readWhole(mr)
		if err != nil {
			c.s.rpcBig.put(big)
			return
		}
		c.readMessage(msg)
		c.s.rpcBig.put(big)
		if cap(msg) <= rpcKeptMessage {
			c.msg = msg[:0]
		} else {
			c.msg = nil // a large message's buffer is not kept
		}
	}
}

// extendRead gives the client another pongWait to send, unless the
// connection is ending (end has cut the reads short).
func (c *rpcConn) extendRead() error {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	if c.ending.Load() != nil {
		return nil
	}
	return c.conn.SetReadDeadline(time.Now().Add(pongWait))
}

// Message buffers: a connection keeps one of up to rpcKeptMessage bytes;
// a message growing past rpcBigMessage takes one of the server's
// rpcBigMessages places first (the reader waits for one, and TCP pushes
// the client back), so large messages cost at most rpcBigMessages *
// rpcMaxMessage bytes at once, however many connections send them.
const (
	rpcKeptMessage = 16 << 10
	rpcBigMessage  = 64 << 10
	rpcBigMessages = 64
)

// bigMessages holds the places of messages over rpcBigMessage being read
// or served.
type bigMessages struct {
	once  sync.Once
	slots chan struct{}
}

func (b *bigMessages) take() {
	b.once.Do(func() { b.slots = make(chan struct{}, rpcBigMessages) })
	b.slots <- struct{}{}
}

// put gives back a place taken (big), if any.
func (b *bigMessages) put(big bool) {
	if big {
		<-b.slots
	}
}

// readWhole reads one message into the connection's buffer, reporting
// whether it took a place for a big message (put it back when done).
func (c *rpcConn) readWhole(r io.Reader) (msg []byte, big bool, err error) {
	buf := c.msg[:0]
	if cap(buf) == 0 {
		buf = make([]byte, 0, 4<<10)
	}
	for {
		if len(buf) == cap(buf) {
			if !big && len(buf) >= rpcBigMessage {
				c.s.rpcBig.take()
				big = true
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, big, nil
		}
		if err != nil {
			return nil, big, err // over the limit, or the connection failed
		}
	}
}

// readMessage takes the request lines of one message.
func (c *rpcConn) readMessage(msg []byte) {
	first := true
	for len(msg) > 0 {
		c.waitRoom()
		line, rest, found := bytes.Cut(msg, []byte{'\n'})
		msg = rest
		if len(line) >= rpcMaxLine {
			status, body := c.s.errorBody(c.ctx, fenceview.Errorf(fenceview.ETOOLARGE, "a request line is at most %d bytes", rpcMaxLine))
			c.reply(0, status, body)
			first = false
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			// A lone request: the message's only line, with no newline.
			c.take(line, first && !found)
			first = false
		}
	}
}

// waitRoom holds the reader while rpcAnswerRoom answers wait for the
// writer, until the writer takes them. So the answers waiting are at most
// rpcAnswerRoom and those of the requests in flight. The writer lives
// until the reader is done, and each flush takes every answer (a write
// waits writeWait at most), so the room always comes; a connection
// ending for its credential keeps waiting for it too, as the rest of the
// message it serves is answered.
func (c *rpcConn) waitRoom() {
	for c.npending.Load() >= rpcAnswerRoom {
		if c.s.rpcReaderWaits != nil {
			c.s.rpcReaderWaits()
		}
		<-c.room
	}
}

// take decodes one request line and hands it on: a request that may wait
// to its own goroutine, the message's only request served here, any other
// to a worker.
func (c *rpcConn) take(line []byte, single bool) {
	// Decoded into the reader's own request, then copied: a request
	// decoded in a local would escape to the heap, one per request.
	present, unknown, err := wire.DecodeRequestFields(line, &c.req)
	// Authorized before its fields are looked at, as the JSON API checks a
	// route's role and resource before it reads the body: one request, one
	// answer on both transports.
	o := opsByName[c.req.Op]
	resource := c.req.Resource
	if err != nil && o == nil {
		var env wire.Envelope // a field past the bad one may have gone unread
		env.Scan(line)
		o, resource = opsByName[env.Op], env.Resource
	}
	switch {
	case o == nil && err == nil:
		err = fenceview.Errorf(fenceview.EINVALID, "op must be %s", strings.Join(rpcOpNames, ", "))
	case o != nil:
		if aerr := authorize(c.p, o, resource); aerr != nil {
			err = aerr
		} else if ferr := checkFields(o.op, rpcOpFields[o.op], present, unknown); ferr != nil {
			err = ferr
		}
	}
	if err != nil {
		if fenceview.ErrorCode(err) == fenceview.EINTERNAL { // encoding/json's, not ours
			err = requestError("invalid request", err)
		}
		status, body := c.s.errorBody(c.ctx, err)
		c.reply(c.req.ID, status, body)
		return
	}
	req := c.req
	if req.Waits() {
		c.serveWaiting(req)
		return
	}
	c.takeSlot()
	if single && c.busy.Load() == 0 {
		c.serveInline(req)
		return
	}
	if c.serveThen(req) {
		return
	}
	c.busy.Add(1)
	c.handOff(req)
}

// serveThen serves a request that never waits through its operation's
// then, when the service answers so: no goroutine waits for its seat or
// its commit, and the goroutine that delivers the commit queues its
// answer for the writer. At most rpcWorkers such requests of a
// connection are served at once, as many as its workers: beyond, the
// reader waits, and so does the client. It reports false for any other
// request.
func (c *rpcConn) serveThen(req wire.Request) bool {
	o := opsByName[req.Op]
	if c.ts == nil || o == nil || o.then == nil || !o.admitted() {
		return false
	}
	if !c.s.ops.enter(c.p) {
		status, body := c.s.errorBody(c.ctx, errKeyGone)
		c.freeSlot()
		c.reply(req.ID, status, body)
		return true
	}
	c.thenSlots <- struct{}{}
	c.busy.Add(1)
	c.inflight.Add(1)
	t := &rpcThen{c: c, op: o, id: req.ID, call: opCall{opBody: opBody{req: req}, origin: c.source}}
	t.thenAdmission = thenAdmission{s: c.s, ctx: c.ctx, fclass: c.fclass, class: o.class, req: t}
	t.admit(c.flow)
	return true
}

// rpcThen is a request served by serveThen: the request, its admission
// and its connection in one allocation, told its seat and its answer
// through its methods rather than through closures of its own.
type rpcThen struct {
	thenAdmission
	c    *rpcConn
	op   *operation
	id   uint64
	call opCall
}

// serve runs the operation once the request has a seat (admittedRequest).
func (t *rpcThen) serve(done answerer) {
	t.op.then(t.c.s, t.c.ts, t.c.ctx, &t.call, done)
}

// finish queues the answer and frees what the request held
// (admittedRequest).
func (t *rpcThen) finish(status int, body any) {
	c := t.c
	c.s.ops.leave(c.p)
	c.busy.Add(-1)
	<-c.thenSlots
	c.freeSlot()
	c.reply(t.id, status, body)
	c.inflight.Done()
}

// serveWaiting serves an acquire that may wait in a goroutine of its own
// (bounded by rpcMaxWaiting, by the key's --max-waiters-per-key and by the
// server's --max-waiters), so a wait never takes a worker. Until it starts
// waiting it holds one of the key's in-flight slots, as any request does.
func (c *rpcConn) serveWaiting(req wire.Request) {
	if c.waiting.Add(1) > rpcMaxWaiting {
		c.waiting.Add(-1)
		status, body := c.s.errorBody(c.ctx, fenceview.Errorf(fenceview.ELIMIT,
			"%d acquires of this connection are already waiting; use waitMs 0 or another connection", rpcMaxWaiting))
		c.reply(req.ID, status, body)
		return
	}
	c.takeSlot()
	c.busy.Add(1)
	c.inflight.Add(1)
	go func() {
		defer c.inflight.Done()
		defer c.waiting.Add(-1)
		entered := sync.OnceFunc(c.freeSlot)
		defer entered()
		c.serveEntered(req, entered)
	}()
}

// serveInline serves the connection's only request, one that cannot wait
// long, on the reader's goroutine, and answers it here unless the writer
// is busy. One client calling one request at a time (Redis's usual
// caller) saves two goroutine hand-offs per call.
func (c *rpcConn) serveInline(req wire.Request) {
	status, body := c.answer(req, nil)
	c.freeSlot()
	if c.npending.Load() != 0 || !c.out.mu.TryLock() {
		c.reply(req.ID, status, body)
		return
	}
	c.inline = wire.AppendAnswer(c.inline[:0], req.ID, status, body)
	c.out.send(c.inline)
	c.out.mu.Unlock()
	if cap(c.inline) > wire.MaxBatch {
		c.inline = nil // a rare huge answer's buffer is not kept
	}
}

// handOff gives req to an idle worker, else to a new one while fewer than
// rpcWorkers run, else waits for one: the reader waits, and so does the
// client.
func (c *rpcConn) handOff(req wire.Request) {
	select {
	case c.work <- req:
		return
	default:
	}
	if c.workers.Load() < rpcWorkers { // only the reader starts workers
		c.workers.Add(1)
		c.inflight.Add(1)
		go c.worker(req)
		return
	}
	c.work <- req
}

// worker serves req, then the next requests, until the connection ends.
// Workers outlive their requests, and a connection keeps every worker it
// started (at most rpcWorkers, which it may have all at once anyway): a
// goroutine per request, or a worker retired once a burst is served,
// starts the next request on a small stack and grows it, copying it each
// time (a grant's path is deep). Keeping 8 idle workers instead of all of
// them cost about a fifth of the server's CPU per RPC grant cycle at 64
// clients. An idle worker's stack is shrunk by the garbage collector.
func (c *rpcConn) worker(req wire.Request) {
	defer c.inflight.Done()
	defer c.workers.Add(-1)
	for {
		c.serve(req)
		next, ok := <-c.work
		if !ok {
			return
		}
		req = next
	}
}

func (c *rpcConn) serve(req wire.Request) {
	status, body := c.answer(req, nil)
	c.busy.Add(-1)
	c.freeSlot()
	c.reply(req.ID, status, body)
}

// serveEntered serves a waiting acquire, whose slot entered frees.
func (c *rpcConn) serveEntered(req wire.Request, entered func()) {
	status, body := c.answer(req, entered)
	c.busy.Add(-1)
	c.reply(req.ID, status, body)
}

// takeSlot takes one of the key's in-flight slots: while the key is at its
// share, this connection is not read until a request of the key is done.
func (c *rpcConn) takeSlot() {
	if c.slots != nil && c.s.slotFull != nil {
		select {
		case c.slots <- struct{}{}:
			return
		default:
			c.s.slotFull()
		}
	}
	if c.slots != nil {
		c.slots <- struct{}{}
	}
}

func (c *rpcConn) freeSlot() {
	if c.slots != nil {
		<-c.slots
	}
}

// keySlots holds, per key with an RPC connection open, the semaphore of
// its requests in flight, shared by all its connections.
type keySlots struct {
	mu   sync.Mutex
	keys map[string]*keySlot
}

type keySlot struct {
	sem   chan struct{}
	conns int
}

// open returns key id's semaphore for one more connection; close when it
// ends.
func (k *keySlots) open(id string) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.keys == nil {
		k.keys = map[string]*keySlot{}
	}
	ks := k.keys[id]
	if ks == nil {
		ks = &keySlot{sem: make(chan struct{}, rpcKeyInFlight)}
		k.keys[id] = ks
	}
	ks.conns++
	return ks.sem
}

func (k *keySlots) close(id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if ks := k.keys[id]; ks != nil {
		if ks.conns--; ks.conns == 0 {
			delete(k.keys, id)
		}
	}
}

// answer applies one request once admitted (admission.go), unless the
// caller's key was revoked or its session ended since the connection
// opened: a message already read stops being applied at the revocation.
// entered, for a waiting acquire, is called when it starts or is refused.
func (c *rpcConn) answer(req wire.Request, entered func()) (status int, body any) {
	if !c.s.ops.enter(c.p) {
		if entered != nil {
			entered()
		}
		return c.s.errorBody(c.ctx, errKeyGone)
	}
	dispatch := func() (int, any) { return c.s.dispatchRPC(c.ctx, req, c.source) }
	if o := opsByName[req.Op]; o != nil && o.admitted() {
		var wait time.Duration
		if req.Waits() {
			wait = min(millis(req.WaitMs), fenceview.MaxWait)
		}
		status, body = c.s.admitted(c.ctx, c.flow, c.fclass, o.class, wait, entered, dispatch)
	} else {
		status, body = dispatch()
	}
	c.s.ops.leave(c.p)
	return status, body
}

// reply hands the answer to request id to the writer without waiting,
// encoding it straight into the pending answers. When rpcAnswerQueue
// answers already wait (past rpcAnswerRoom, the reader took no more
// requests), the client has stopped reading: it is closed, and its reader
// stops.
func (c *rpcConn) reply(id uint64, status int, body any) {
	c.qmu.Lock()
	// Ending, the reader takes nothing more: what may still come is the
	// answers of the requests in flight, bounded, each one owed.
	if c.npending.Load() >= rpcAnswerQueue && c.ending.Load() == nil {
		c.qmu.Unlock()
		c.drop()
		return
	}
	if len(c.pending) > 0 {
		c.pending = append(c.pending, '\n')
	}
	c.pending = wire.AppendAnswer(c.pending, id, status, body)
	c.npending.Add(1)
	c.qmu.Unlock()
	c.wakeWriter()
}

func (c *rpcConn) wakeWriter() {
	select {
	case c.wake <- struct{}{}:
	default: // already woken: it will take this answer too
	}
}

// drop closes a connection whose client does not read its answers.
func (c *rpcConn) drop() {
	if c.dropped.CompareAndSwap(false, true) {
		c.conn.Close()
	}
}

// rpcOut is a connection's write side. The writer goroutine sends the
// answers of requests served by workers; a request served inline
// (handleRPC) may send its own. After a failed write nothing more is sent.
type rpcOut struct {
	conn   *websocket.Conn
	mu     sync.Mutex // one writer at a time, as websocket.Conn requires
	broken bool
}

// send writes msg as one message. o.mu must be held.
func (o *rpcOut) send(msg []byte) {
	if o.broken {
		return
	}
	o.conn.SetWriteDeadline(time.Now().Add(writeWait))
	if o.conn.WriteMessage(websocket.TextMessage, msg) != nil {
		o.broken = true
		o.conn.Close() // a client that does not read is gone: stop reading its requests too
	}
}

// sendLines writes answers, one per line, in messages of at most
// wire.MaxBatch bytes (a single longer answer goes alone). o.mu must be
// held.
func (o *rpcOut) sendLines(lines []byte) {
	for msg, rest := lines, []byte(nil); len(msg) > 0; msg = rest {
		msg, rest = wire.SplitBatch(msg)
		o.send(msg)
	}
}

// writer sends the answers of requests served by workers, every answer
// ready at the time as one message, keeps the connection alive with pings,
// and ends the connection when the caller's key is revoked or its session
// ends, or when the service closes (end): the reader then stops taking
// requests, waiting acquires give up, and the writer goes on sending until
// every answer is sent.
func (c *rpcConn) writer(done chan<- struct{}) {
	defer close(done)
	ping := time.NewTicker(pingPeriod)
	defer ping.Stop()
	revoked, ended, serviceEnded := c.p.Revoked(), c.p.Ended(), c.serviceEnded
	var batch []byte
	for {
		select {
		case <-c.wake:
			var closing bool
			if batch, closing = c.flush(batch); closing {
				return
			}
		case <-ping.C:
			c.out.ping()
		case <-revoked:
			c.revoke()
			revoked, ended = nil, nil
		case <-ended:
			c.revoke()
			revoked, ended = nil, nil
		case <-serviceEnded:
			// The closed service answers what is in flight (its waiters
			// 503, the change it refuses 503): nothing to cancel here.
			c.end(endService)
			serviceEnded = nil
		}
	}
}

// flush sends every pending answer, taking them in exchange for batch (the
// buffer of the last flush), and reports whether the connection is
// closing: nothing comes after these.
func (c *rpcConn) flush(batch []byte) ([]byte, bool) {
	// The answers of one commit come back together: let their goroutines
	// queue them, and send them as one message.
	runtime.Gosched()
	if c.s.rpcBeforeFlush != nil {
		c.s.rpcBeforeFlush()
	}
	c.qmu.Lock()
	batch, c.pending = c.pending, batch[:0]
	c.npending.Store(0)
	closing := c.closing
	c.qmu.Unlock()
	select {
	case c.room <- struct{}{}:
	default: // the reader has yet to look
	}
	if len(batch) > 0 {
		c.out.mu.Lock()
		c.out.sendLines(batch)
		c.out.mu.Unlock()
	}
	if cap(batch) > 4*wire.MaxBatch {
		batch = nil // a burst's buffer is not kept
	}
	return batch, closing
}

// ping keeps the connection alive (and finds a dead one).
func (o *rpcOut) ping() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.broken {
		o.broken = o.conn.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeWait)) != nil
	}
}

// revoke ends a connection whose credential is gone. Its waiting
// acquires give up, answered 401 (a grant committed before they could is
// answered as the grant it is: its holder must hear of it), the rest of
// the message being served is answered 401 request by request (answer),
// and the connection ends (end).
func (c *rpcConn) revoke() {
	c.cancel(errKeyGone)
	c.end(endRevoked)
}

// end stops the reader: it takes no other message (the rest of the one
// being served is taken). shutdown then closes the connection, saying
// why (the first reason given), once every answer is sent: closing it
// now would drop the answers still on their way, grants included,
// leaving locks held by holders who were never told.
func (c *rpcConn) end(why *rpcEnd) {
	c.rmu.Lock()
	c.ending.CompareAndSwap(nil, why)
	c.conn.SetReadDeadline(time.Now()) // wakes a reader waiting for the next message
	c.rmu.Unlock()
	if c.s.rpcEnding != nil {
		c.s.rpcEnding()
	}
}

// lingerClose lets the client read what was sent before the connection
// closes: closing with the client's bytes unread makes the kernel reset
// the connection, and a reset may discard answers the client has yet to
// read. The write side is shut first, and what the client still sends
// (its close frame) is read and dropped until it closes, for closeLinger
// at most.
func lingerClose(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	nc.SetReadDeadline(time.Now().Add(closeLinger))
	io.Copy(io.Discard, io.LimitReader(nc, rpcMaxMessage))
}

// closeLinger bounds lingerClose's wait for the client to close.
const closeLinger = time.Second
