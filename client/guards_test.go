package client_test

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"

	_ "github.com/mattn/go-sqlite3"
	"github.com/redis/go-redis/v9"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/guard"
	"github.com/fenceview/fenceview/guard/httpguard"
	"github.com/fenceview/fenceview/guard/redisguard"
	"github.com/fenceview/fenceview/guard/redisguard/goredis"
	"github.com/fenceview/fenceview/guard/sqlguard"
	"github.com/fenceview/fenceview/internal/dbtest"
)

// forged is what a caller without the lock can present: the honest
// holder's resource, a high number, no signature or someone else's.
func forged(honest client.Token) []client.Token {
	return []client.Token{
		{Resource: honest.Resource, Number: 999999},
		{Resource: honest.Resource, Number: 999999, Signature: honest.Signature},
		{Resource: honest.Resource, Number: honest.Number + 1, Signature: honest.Signature},
	}
}

// relock gives m's lock back and takes it again: the honest holder's
// next token.
func relock(t *testing.T, m *client.Mutex) client.Token {
	t.Helper()
	if err := m.Unlock(context.Background()); err != nil {
		t.Fatal(err)
	}
	lock(t, m)
	return m.Token()
}

// inventoryConfig is the inventory table's, with products as resources
// "inventory:<id>".
var inventoryConfig = sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id", Resource: sqlguard.Prefixed("inventory:")}

// inventoryFrom is a SQLite inventory table (products 42 and 43, stock
// 10 each) fenced by a table built from c, which verifies the server's
// signatures. The database is closed when the test ends.
func inventoryFrom(t *testing.T, c *client.Client) (*sql.DB, *sqlguard.Table) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(t.TempDir(), "shop.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE inventory (product_id INTEGER PRIMARY KEY, stock INTEGER, fence_token BIGINT NOT NULL DEFAULT 0);
		INSERT INTO inventory (product_id, stock) VALUES (42, 10), (43, 10)`); err != nil {
		t.Fatal(err)
	}
	table, err := sqlguard.NewTableFrom(context.Background(), c, inventoryConfig)
	if err != nil {
		t.Fatal(err)
	}
	return db, table
}

// The README's Go pattern fenced a row with a bare int64: a forged 999999
// was accepted, and the honest holder's next token was then refused as
// stale. A table built from the client verifies the server's signatures:
// the forgeries are refused without touching the row, and the honest
// holder's next token is accepted.
func TestSQLTableFromClientRefusesForgedTokens(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	db, table := inventoryFrom(t, c)
	m := c.Mutex("inventory:42", "worker-7")
	lock(t, m)
	honest := m.Token()
	if d, err := table.UpdateToken(ctx, db, 42, honest, sqlguard.Set("stock", 9)); err != nil || !d.Accepted {
		t.Fatalf("the holder's signed token: %+v %v", d, err)
	}
	other := c.Mutex("inventory:43", "worker-8")
	lock(t, other)
	attempts := append(forged(honest), other.Token()) // another row's token, signed for it
	for _, tok := range attempts {
		if d, err := table.UpdateToken(ctx, db, 42, tok, sqlguard.Set("stock", 0)); err != nil || d.Accepted || d.Reason != guard.ReasonBadSignature {
			t.Errorf("%+v: %+v %v, want refused bad-signature", tok, d, err)
		}
	}
	if d, err := table.Update(ctx, db, 42, 999999, sqlguard.Set("stock", 0)); err != nil || d.Accepted {
		t.Errorf("a bare 999999 through Update: %+v %v, want refused", d, err)
	}
	var stock, mark int64
	if err := db.QueryRow(`SELECT stock, fence_token FROM inventory WHERE product_id = 42`).Scan(&stock, &mark); err != nil || stock != 9 || mark != honest.Number {
		t.Fatalf("row after the forgeries: stock %d mark %d (%v), want 9 and %d", stock, mark, err, honest.Number)
	}
	next := relock(t, m)
	if d, err := table.UpdateToken(ctx, db, 42, next, sqlguard.Set("stock", 8)); err != nil || !d.Accepted {
		t.Fatalf("the honest holder's next token %d: %+v %v", next.Number, d, err)
	}

	// Unsigned tokens take an option that says so.
	if _, err := sqlguard.NewTableFrom(ctx, c, sqlguard.TableConfig{Dialect: sqlguard.SQLite, Table: "inventory", IDColumn: "product_id"}); !errors.Is(err, sqlguard.ErrInvalid) {
		t.Errorf("a verifying table without Resource: %v, want ErrInvalid", err)
	}
	cfg := inventoryConfig
	cfg.AcceptUnsignedTokens = true
	loose, err := sqlguard.NewTableFrom(ctx, c, cfg)
	if err != nil || loose.Verifier() != nil {
		t.Fatalf("AcceptUnsignedTokens: %v, verifier %v", err, loose.Verifier())
	}
	if d, err := loose.UpdateToken(ctx, db, 43, client.Token{Resource: "inventory:43", Number: 999999}); err != nil || !d.Accepted {
		t.Errorf("an unsigned token with AcceptUnsignedTokens: %+v %v", d, err)
	}
}

// Redis, the same: a guard built from the client writes with the lock's
// token, refuses forgeries, and the honest holder's next token writes.
func TestRedisGuardFromClientRefusesForgedTokens(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	srv := dbtest.Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	g, err := redisguard.NewFrom(ctx, c, redisguard.Config{Scripter: goredis.New(rdb)})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Mutex("inventory:42", "worker-7")
	lock(t, m)
	honest := m.Token()
	if d, err := g.WriteToken(ctx, honest, redisguard.Set("stock", "9")); err != nil || !d.Accepted {
		t.Fatalf("the holder's signed token: %+v %v", d, err)
	}
	for _, tok := range forged(honest) {
		if d, err := g.WriteToken(ctx, tok, redisguard.Set("stock", "0")); err != nil || d.Accepted || d.Reason != guard.ReasonBadSignature {
			t.Errorf("%+v: %+v %v, want refused bad-signature", tok, d, err)
		}
	}
	if d, err := g.Write(ctx, "inventory:42", 999999, redisguard.Set("stock", "0")); err != nil || d.Accepted {
		t.Errorf("a bare 999999 through Write: %+v %v, want refused", d, err)
	}
	next := relock(t, m)
	if d, err := g.WriteToken(ctx, next, redisguard.Set("stock", "8")); err != nil || !d.Accepted {
		t.Fatalf("the honest holder's next token %d: %+v %v", next.Number, d, err)
	}
	mark, values, err := g.Read(ctx, "inventory:42", "stock")
	if err != nil || mark != next.Number || values["stock"] != "8" {
		t.Fatalf("after the writes: mark %d %v %v", mark, values, err)
	}
	loose, err := redisguard.NewFrom(ctx, c, redisguard.Config{Scripter: goredis.New(rdb), Prefix: "loose:", AcceptUnsignedTokens: true})
	if err != nil || loose.Verifier() != nil {
		t.Fatalf("AcceptUnsignedTokens: %v", err)
	}
}

// postWith POSTs to svc with tok in the request's headers and returns the
// answer's status.
func postWith(t *testing.T, svc *httptest.Server, tok client.Token) int {
	t.Helper()
	req, _ := http.NewRequest("POST", svc.URL, nil)
	tok.SetHeader(req.Header)
	res, err := svc.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// A fenced HTTP service built from the client: its middleware refuses
// forgeries (409 bad-signature, the handler never runs) and serves the
// honest holder's tokens, in memory or over a checker of its own.
func TestHTTPMiddlewareFromClientRefusesForgedTokens(t *testing.T) {
	ctx := context.Background()
	_, c := start(t, fenceviewtest.Config{})
	m := c.Mutex("inventory:42", "worker-7")
	lock(t, m)
	honest := m.Token()
	for name, checker := range map[string]guard.Checker{"in memory": nil, "a checker of its own": guard.New()} {
		t.Run(name, func(t *testing.T) {
			fence, err := httpguard.MiddlewareFrom(ctx, c, httpguard.Config{Checker: checker})
			if err != nil {
				t.Fatal(err)
			}
			served := 0
			svc := httptest.NewServer(fence(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served++ })))
			defer svc.Close()
			send := func(tok client.Token) int { return postWith(t, svc, tok) }
			if code := send(honest); code != 200 {
				t.Fatalf("the holder's signed token: %d", code)
			}
			for _, tok := range forged(honest) {
				if code := send(tok); code != http.StatusConflict {
					t.Errorf("%+v: %d, want 409", tok, code)
				}
			}
			if served != 1 {
				t.Fatalf("the handler ran %d times, want once (the honest write)", served)
			}
			if code := send(client.Token{Resource: honest.Resource, Number: honest.Number}); code != http.StatusConflict {
				t.Errorf("the honest number without its signature: %d, want 409", code)
			}
		})
	}
	next := relock(t, m)
	fence, err := httpguard.MiddlewareFrom(ctx, c, httpguard.Config{})
	if err != nil {
		t.Fatal(err)
	}
	svc := httptest.NewServer(fence(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})))
	defer svc.Close()
	for _, tok := range append(forged(honest), next) {
		if want, code := map[bool]int{true: 200, false: 409}[tok == next], postWith(t, svc, tok); code != want {
			t.Errorf("token %s: %d, want %d", strconv.FormatInt(tok.Number, 10), code, want)
		}
	}
}
