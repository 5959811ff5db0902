package load

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrBusy is returned by Client.Acquire when another holder has the lock.
// It is an outcome, not a failure.
var ErrBusy = errors.New("lock held by another holder")

// StatusError is an unexpected response status. 5xx ones fail a run.
type StatusError struct {
	Op   string
	Code int
	Body string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: status %d: %s", e.Op, e.Code, e.Body)
}

// Setup is what a driver learns before the run.
type Setup struct {
	Resources []string      // resource ids; operations name them by index
	Clients   int           // concurrent clients that will call NewClient
	Lease     time.Duration // lease of every grant
	Wait      time.Duration // server-side wait of acquire, where supported
}

// Driver is one backend.
type Driver interface {
	// Name labels the backend in reports.
	Name() string
	// Prepare readies the backend for these resources (tables, rows,
	// connection pools).
	Prepare(ctx context.Context, s Setup) error
	// NewClient returns the connection of client id, used by one goroutine
	// only, holding locks as holder.
	NewClient(id int, holder string) (Client, error)
	Close() error
}

// CloseOpened closes conn unless it is nil: the Close of a driver whose
// connection its first Prepare opens, so that a driver never prepared
// closes too.
func CloseOpened[C interface {
	comparable
	Close() error
}](conn C) error {
	var none C
	if conn == none {
		return nil
	}
	return conn.Close()
}

// Client is one simulated client of a backend.
type Client interface {
	// Acquire takes the lock of resource r and returns its fencing token,
	// or ErrBusy.
	Acquire(ctx context.Context, r int) (int64, error)
	// Release gives the lock of resource r back; refusal is an error.
	Release(ctx context.Context, r int) error
	// Fence writes to resource r with token: accepted or refused by the
	// resource's high-water mark.
	Fence(ctx context.Context, r int, token int64) (accepted bool, err error)
}
