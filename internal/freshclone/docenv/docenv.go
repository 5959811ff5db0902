// Package docenv is the world the Go snippets of README.md and docs/ run
// in (internal/freshclone's TestDocSnippetsRun): a real fenceview server,
// a SQLite database holding the tables the snippets write to, a
// downstream HTTP service, and a value for every name the prose around a
// snippet gives it (ctx, db, token, ...). A snippet runs as written but
// for its server address, which points at this server.
package docenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/mattn/go-sqlite3" // the snippets' database

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard/sqlguard"
)

// Env is a running world for the snippets. Close stops it.
type Env struct {
	URL        string // the fenceview server, in place of the docs' http://127.0.0.1:8080
	Downstream string // a service that answers every request 204
	DB         *sql.DB
	Client     *client.Client
	Marks      *sqlguard.Marks
	Token      int64  // a real grant's token, of the lock "docs:token"
	Signature  string // its signature, as X-Fencing-Signature carries it
	PublicKey  []byte // the key that signed it, 32 raw bytes

	dir        string
	server     *fenceviewtest.Server
	downstream *httptest.Server
}

// The tables the snippets write to, in the shape the prose describes
// (one fence_token column beside the data).
const schema = `
CREATE TABLE inventory (product_id INTEGER PRIMARY KEY, stock INTEGER NOT NULL DEFAULT 0,
	sold INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0);
INSERT INTO inventory (product_id) VALUES (42);
CREATE TABLE jobs (partition_id INTEGER PRIMARY KEY, state TEXT NOT NULL DEFAULT 'new',
	fence_token BIGINT NOT NULL DEFAULT 0);
INSERT INTO jobs (partition_id) VALUES (0), (1), (2), (3), (4), (5), (6), (7);
`

// Start starts the world; on error nothing is left running.
func Start(ctx context.Context) (_ *Env, err error) {
	e := &Env{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	if e.dir, err = os.MkdirTemp("", "fenceview-docs-"); err != nil {
		return nil, err
	}
	if e.server, err = fenceviewtest.Start(ctx, fenceviewtest.Config{}); err != nil {
		return nil, err
	}
	e.URL = e.server.URL
	e.downstream = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	e.Downstream = e.downstream.URL
	if e.DB, err = sql.Open("sqlite3", "file:"+filepath.Join(e.dir, "shop.db")+"?_busy_timeout=5000"); err != nil {
		return nil, err
	}
	if _, err = e.DB.ExecContext(ctx, schema); err != nil {
		return nil, fmt.Errorf("creating the snippets' tables: %w", err)
	}
	if e.Marks, err = sqlguard.NewMarks(e.DB, sqlguard.SQLite, "fence_marks"); err != nil {
		return nil, err
	}
	if e.Client, err = client.New(client.Config{URL: e.URL}); err != nil {
		return nil, err
	}
	return e, e.grant(ctx)
}

// grant takes a real, signed token for the snippets that are handed one.
func (e *Env) grant(ctx context.Context) error {
	m := e.Client.Mutex("docs:token", "docs")
	if _, err := m.Lock(ctx); err != nil {
		return err
	}
	tok := m.Token()
	e.Token, e.Signature = tok.Number, tok.Signature
	_, keys, err := e.Client.SigningKeys(ctx)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if k.KeyID == tok.KeyID {
			e.PublicKey = k.PublicKey
			return nil
		}
	}
	return errors.New("the grant's signing key is not published")
}

// Request is a request to the downstream service, as a handler would see it.
func (e *Env) Request(ctx context.Context) *http.Request {
	r, _ := http.NewRequestWithContext(ctx, http.MethodPut, e.Downstream+"/stock", strings.NewReader("7"))
	return r
}

// Send sends req to the downstream service.
func (e *Env) Send(ctx context.Context, req *http.Request) error {
	res, err := http.DefaultClient.Do(req.WithContext(ctx))
	if err != nil {
		return err
	}
	res.Body.Close()
	if res.StatusCode >= 300 {
		return fmt.Errorf("downstream answered %s", res.Status)
	}
	return nil
}

// Close stops everything Start started.
func (e *Env) Close() {
	if e.Client != nil {
		e.Client.Close()
	}
	if e.DB != nil {
		e.DB.Close()
	}
	if e.downstream != nil {
		e.downstream.Close()
	}
	if e.server != nil {
		e.server.Close()
	}
	if e.dir != "" {
		os.RemoveAll(e.dir)
	}
}
