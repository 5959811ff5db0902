package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
)

// newLogger builds the server's structured logger.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level %q: want debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// accessLogger is where request lines go: the server's own output and
// format, marked "log=access", so one pipeline carries both; at info
// whatever --log-level says, since asking for it is asking to see it. nil
// without --access-log.
func (m *Main) accessLogger() *slog.Logger {
	if !m.AccessLog {
		return nil
	}
	l := m.Logger
	if m.accessLog != nil {
		l = m.accessLog
	}
	return l.With("log", "access")
}
