package main

import (
	"errors"
	"runtime/debug"
)

// errVersion tells main that --version was answered.
var errVersion = errors.New("version printed")

// version is set at link time by release builds:
// go build -ldflags "-X main.version=v1.2.3" ./cmd/fenceview
var version string

// buildVersion is the link-time version, else the module version go install
// records ("(devel)" for a build from a work tree), with the VCS revision
// when the build recorded one, and the Go version.
func buildVersion() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	if ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		v += " " + info.GoVersion
	}
	return v
}
