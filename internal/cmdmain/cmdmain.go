// Package cmdmain is the main function of fenceview's small commands (the
// load generator, the benchmark driver, the examples): each is a run
// function tests call directly, and Main runs it for the command line.
package cmdmain

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Main runs run with the command line and standard output, under a
// context cancelled by SIGINT or SIGTERM (so deferred clean-ups run).
// It exits 0 after -h, 2 on a UsageError and 1 on any other error, which
// it prints after the command's name.
func Main(name string, run func(ctx context.Context, args []string, stdout io.Writer) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	fmt.Fprintln(os.Stderr, name+":", err)
	if errors.As(err, new(UsageError)) {
		os.Exit(2)
	}
	os.Exit(1)
}

// UsageError is a command line that makes no sense: Main exits 2.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usage marks err as a UsageError.
func Usage(err error) error { return UsageError{Err: err} }

// Parse parses args with fs, which must return its errors
// (flag.ContinueOnError): a bad flag or a stray argument is a UsageError,
// and -h stays flag.ErrHelp inside it, so that Main exits 0.
func Parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return Usage(err)
	}
	if fs.NArg() > 0 {
		return Usage(fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	return nil
}
