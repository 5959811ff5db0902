// Package web holds the dashboard's browser assets. They are plain files
// (no build step, no CDN) compiled into the binary, so the dashboard works
// offline and ships as one file.
package web

import "embed"

// Static is the static/ directory: the dashboard's script, styles and icon.
//
//go:embed static
var Static embed.FS
