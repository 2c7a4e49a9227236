package main

import (
	"fmt"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

// versionString says which build this is: the version, and from the Go
// build information the commit it was built from (marked when the tree had
// uncommitted changes) and the Go release that built it.
func versionString() string {
	s := "fifoq " + version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return s
	}
	var revision, modified string
	for _, kv := range info.Settings {
		switch kv.Key {
		case "vcs.revision":
			revision = kv.Value
		case "vcs.modified":
			if kv.Value == "true" {
				modified = "+dirty"
			}
		}
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if revision != "" {
		s += fmt.Sprintf(" (commit %s%s)", revision, modified)
	}
	return s + " " + info.GoVersion
}
