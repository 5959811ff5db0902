package server_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/fenceview/fenceview/client"
	"github.com/fenceview/fenceview/server"
)

// A fenceview server inside the program, on a free loopback port, with its
// record in a SQLite file; a client takes a lock from it.
func Example() {
	dir, err := os.MkdirTemp("", "fenceview-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	ctx := context.Background()
	srv, err := server.Start(ctx, server.Config{Addr: "127.0.0.1:0", DBPath: filepath.Join(dir, "fenceview.db")})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	c, err := client.New(client.Config{URL: srv.URL()})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	m := c.Mutex("orders", "worker-1")
	token, err := m.Lock(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer m.Unlock(ctx)
	fmt.Println("fencing token:", token)
	// Output: fencing token: 1
}
