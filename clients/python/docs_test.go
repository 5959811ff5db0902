package python_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fenceview/fenceview/client/fenceviewtest"
	"github.com/fenceview/fenceview/internal/dbtest"
	"github.com/fenceview/fenceview/internal/docblocks"
)

// docFiles are the Markdown files whose Python blocks run here
// (docs/signed-tokens.md's verify.py takes arguments: internal/server runs it).
var docFiles = []string{"clients/python/README.md", "README.md"}

// The addresses the README names, and where they point here.
const (
	docsServer    = "http://127.0.0.1:8080"
	docsTLSServer = "https://127.0.0.1:8443"
)

// TestDocBlocksRun runs every ```python block of the READMEs as a program
// of its own, in a directory of its own, with Debian's Python and this
// package on PYTHONPATH, against a real server (the README's address
// points at it), a TLS server whose CA and client certificate lie beside
// the program, and a real PostgreSQL (libpq's PG* variables). A block
// fails when it exits non-zero; a failure names its file and line.
func TestDocBlocksRun(t *testing.T) {
	py := python(t, "cryptography", "psycopg2")
	if testing.Short() {
		t.Skip("the README's blocks need PostgreSQL and a TLS server: skipped in -short mode")
	}
	dir, _ := filepath.Abs(".")
	root := filepath.Join(dir, "..", "..")
	blocks, err := docblocks.Read(root, docFiles, "python")
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 8 {
		t.Fatalf("found %d Python blocks in the README: the extraction is broken", len(blocks))
	}
	srv := fenceviewtest.New(t, fenceviewtest.Config{})
	tlsURL, certs := startTLS(t)
	pg := dbtest.PostgreSQL(t)
	env := []string{
		"PYTHONPATH=" + filepath.Join(dir, "src"),
		"PYTHONDONTWRITEBYTECODE=1",
		"PGHOST=" + pg.Host(), "PGPORT=" + pg.Port(), "PGUSER=postgres", "PGDATABASE=postgres", "PGSSLMODE=disable",
	}
	ran := 0
	for i, b := range blocks {
		at := fmt.Sprintf("%s:%d", b.File, b.Line)
		if !b.Run {
			t.Errorf("%s: every Python block of the README must run", at)
			continue
		}
		work := t.TempDir()
		for _, f := range []string{"ca.pem", "client.pem", "client-key.pem"} {
			data, err := os.ReadFile(filepath.Join(certs, f))
			if err != nil {
				t.Fatal(err)
			}
			docblocks.WriteFile(t, filepath.Join(work, f), string(data))
		}
		code := strings.ReplaceAll(b.Code, docsServer, srv.URL)
		code = strings.ReplaceAll(code, docsTLSServer, tlsURL)
		// The block's lines keep their Markdown line numbers.
		name := fmt.Sprintf("block%d.py", i)
		docblocks.WriteFile(t, filepath.Join(work, name), strings.Repeat("\n", b.Line-1)+code)
		out, err := docblocks.Run(work, 2*time.Minute, env, py, name)
		if err != nil {
			t.Errorf("%s: the block does not run (%v):\n%s", at, err, strings.ReplaceAll(string(out), filepath.Join(work, name), b.File))
			continue
		}
		ran++
	}
	t.Logf("ran %d of %d Python blocks", ran, len(blocks))
}
