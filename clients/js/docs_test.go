package js_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/docblocks"
	"github.com/fenceview/fenceview/internal/servertest"
)

// docFiles are the Markdown files whose JavaScript blocks run here.
var docFiles = []string{"clients/js/README.md", "README.md", "docs/signed-tokens.md", "docs/wasm-abi.md"}

// jsBlocks are the ```js (or ts, javascript, typescript) blocks of
// docFiles; one after a docblocks.NotRun line does not run.
func jsBlocks(t *testing.T, root string) []docblocks.Block {
	t.Helper()
	blocks, err := docblocks.Read(root, docFiles, "js", "ts", "javascript", "typescript")
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// The addresses the docs name, and where they point here: the server of
// this tree, and a downstream service that answers every request 204.
const (
	docsServer     = "http://127.0.0.1:8080"
	docsDownstream = "https://inventory.internal"
)

// prelude gives an ES module block the names its prose leaves to the
// reader: a client of the real server, a held lock of it, the key, a
// PostgreSQL pool (the block's `new pg.Pool()` reads the same PG*
// variables), a downstream url, a logger, a payment gateway that records
// its calls, and an already aborted signal (a loop "until signal aborts"
// then ends at once). It is one line, so a block's lines keep their
// Markdown line numbers; the block itself runs in a nested scope, so its
// own declarations shadow these.
const prelude = `import * as __fv from 'fenceview'; import __pg from 'pg'; import __http from 'node:http'; ` +
	`const __down = __http.createServer((q, s) => { q.resume(); q.on('end', () => { s.statusCode = 204; s.end(); }); }); ` +
	`await new Promise((r) => __down.listen(0, '127.0.0.1', r)); ` +
	`const __downstream = 'http://127.0.0.1:' + __down.address().port; const url = __downstream + '/apply'; ` +
	`const key = process.env.FENCEVIEW_KEY; const log = console; const signal = AbortSignal.abort(); ` +
	`const client = new __fv.Client(process.env.FENCEVIEW_URL, { key }); ` +
	`const lock = client.lock('inventory:42', { holder: 'worker-7' }); await lock.acquire(); ` +
	`const pool = new __pg.Pool(); await pool.query('CREATE TABLE IF NOT EXISTS inventory (product_id TEXT PRIMARY KEY, stock INT NOT NULL DEFAULT 0, reserved INT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0); INSERT INTO inventory (product_id) VALUES (\'42\') ON CONFLICT DO NOTHING'); ` +
	`const order = { id: 1042, amount: 7 }; const gateway = { calls: [], async charge(o, opts) { this.calls.push(opts.idempotencyKey); return { charged: o.amount }; } }; `

// epilogue ends the module once its block has run: the block's client,
// guards and pools are left open as a program's would be, but the
// prelude's lock is released, so the next block need not wait out its
// lease (the prelude's holder is the docs' worker-7, so a block that takes
// the same lock as worker-7 re-enters it instead of waiting).
const epilogue = "\ntry { await lock.release(); } catch {}\nconsole.log('block ran'); process.exit(0);\n"

// blockOutput is what a block must print, by a line of its code: the body
// of a loop the docs show (an election's observe) would otherwise pass
// unseen if it never ran.
var blockOutput = map[string]string{
	"for await (const leader of election.observe())": "http://node-a:9001\n", // the leader the block proclaimed
}

// TestDocBlocksRun runs every JavaScript block of the READMEs and of
// docs/signed-tokens.md and docs/wasm-abi.md against a real server, a
// PostgreSQL and a Redis server: a block that requires its modules is a
// whole CommonJS program and runs as it is (its arguments, for the one
// that takes them, from a real grant); any other is an ES module fragment
// and runs after the prelude, importing the built package as 'fenceview'.
// The docs' addresses point at the real servers. A failure names the
// block's file and line; the module's own lines are the Markdown's.
func TestDocBlocksRun(t *testing.T) {
	node, dir := built(t, "the docs' blocks need PostgreSQL and Redis: skipped in -short mode")
	root := filepath.Join(dir, "..", "..")
	blocks := jsBlocks(t, root)
	if len(blocks) < 15 {
		t.Fatalf("found %d JavaScript blocks in the docs: the extraction is broken", len(blocks))
	}
	srv := fenceviewtest.New(t, fenceviewtest.Config{})
	pg := dbtest.PostgreSQL(t)
	rd := dbtest.Redis(t)
	host, port, _ := strings.Cut(pg.Addr, ":")
	env := []string{
		"FENCEVIEW_URL=" + srv.URL,
		"FENCEVIEW_REDIS_URL=redis://" + rd.Addr,
		"PGHOST=" + host, "PGPORT=" + port, "PGUSER=postgres", "PGDATABASE=postgres", "PGSSLMODE=disable",
	}

	// The blocks' project: 'fenceview' is this package, its dev
	// dependencies (pg, ioredis, express) are the reader's, and the Extism
	// SDK comes from wasm/testdata/extism-node when it is installed.
	work := t.TempDir()
	modules := filepath.Join(work, "node_modules")
	os.Mkdir(modules, 0o755)
	link := func(from, name string) {
		if err := os.Symlink(from, filepath.Join(modules, name)); err != nil {
			t.Fatal(err)
		}
	}
	link(dir, "fenceview")
	entries, err := os.ReadDir(filepath.Join(dir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && e.Name() != "@extism" {
			link(filepath.Join(dir, "node_modules", e.Name()), e.Name())
		}
	}
	extism := filepath.Join(root, "wasm", "testdata", "extism-node", "node_modules", "@extism")
	haveExtism := false
	if _, err := os.Stat(extism); err == nil {
		link(extism, "@extism")
		haveExtism = true
	}
	// guard.wasm beside the blocks, for the host that reads it from a file.
	wasm := servertest.Do(t, nil, servertest.NewRequest(t, http.MethodGet, srv.URL+"/guard.wasm", nil))
	if wasm.Status != http.StatusOK {
		t.Fatalf("GET /guard.wasm: %d", wasm.Status)
	}
	docblocks.WriteFile(t, filepath.Join(work, "guard.wasm"), string(wasm.Raw))
	verifyArgs := grantArgs(t, srv)

	ran := 0
	printed := map[string]bool{}
	for i, b := range blocks {
		at := fmt.Sprintf("%s:%d", b.File, b.Line)
		if !b.Run {
			t.Logf("%s: marked not run", at)
			continue
		}
		code := strings.ReplaceAll(b.Code, docsServer, srv.URL)
		code = strings.ReplaceAll(code, "new Redis()", "new Redis(process.env.FENCEVIEW_REDIS_URL)")
		var name string
		var args []string
		if strings.Contains(code, "require(") {
			if strings.Contains(code, "@extism/extism") && !haveExtism {
				if os.Getenv("CI") != "" {
					t.Errorf("%s: CI must install the Extism JS SDK (npm ci --prefix wasm/testdata/extism-node)", at)
				}
				t.Logf("%s: skipped, the Extism JS SDK is not installed (npm ci --prefix wasm/testdata/extism-node)", at)
				continue
			}
			name = fmt.Sprintf("block%d.cjs", i)
			if strings.Contains(code, "process.argv") {
				args = verifyArgs
			}
			code = strings.Repeat("\n", b.Line-1) + code
		} else {
			name = fmt.Sprintf("block%d.mjs", i)
			code = strings.ReplaceAll(code, "'"+docsDownstream, "__downstream + '")
			var imports, body strings.Builder
			for _, line := range strings.Split(code, "\n") {
				if strings.HasPrefix(line, "import ") {
					imports.WriteString(line + " ")
					body.WriteString("\n")
				} else {
					body.WriteString(line + "\n")
				}
			}
			code = prelude + imports.String() + "{" + strings.Repeat("\n", b.Line-1) + body.String() + "}" + epilogue
		}
		docblocks.WriteFile(t, filepath.Join(work, name), code)
		out, err := docblocks.Run(work, 2*time.Minute, env, node, append([]string{name}, args...)...)
		if err != nil {
			t.Errorf("%s: the block does not run (%v):\n%s", at, err, strings.ReplaceAll(string(out), filepath.Join(work, name), b.File))
			continue
		}
		if strings.HasSuffix(name, ".mjs") && !strings.Contains(string(out), "block ran") {
			t.Errorf("%s: the block ended its program before its last line:\n%s", at, out)
			continue
		}
		for line, want := range blockOutput {
			if strings.Contains(b.Code, line) {
				printed[line] = true
				if !strings.Contains(string(out), want) {
					t.Errorf("%s: the block ran without printing %q (from %s):\n%s", at, want, line, out)
				}
			}
		}
		ran++
	}
	for line := range blockOutput {
		if !printed[line] {
			t.Errorf("no block that ran has %q: blockOutput names a block the docs no longer have", line)
		}
	}
	t.Logf("ran %d of %d JavaScript blocks", ran, len(blocks))
}

// grantArgs are docs/signed-tokens.md's verify.js arguments for a real
// grant: the signing key, the resource, the token and its signature.
func grantArgs(t *testing.T, srv *fenceviewtest.Server) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := srv.Client(t)
	m := c.Mutex("docs:verify", "docs")
	if _, err := m.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	tok := m.Token()
	_, keys, err := c.SigningKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if k.KeyID == tok.KeyID {
			return []string{base64.RawURLEncoding.EncodeToString(k.PublicKey), "docs:verify", fmt.Sprint(tok.Number), tok.Signature}
		}
	}
	t.Fatal("the grant's signing key is not published")
	return nil
}
