package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and commit are set at build time with -ldflags
// "-X main.version=... -X main.commit=...", as the Dockerfile does: a build
// without VCS stamping (-buildvcs=false, a tree without .git) has no
// commit in its build information. Otherwise the build information gives
// both: the module version of "go install ...@v1.2.3", and the commit of
// a build in a checkout.
var (
	version = "dev"
	commit  = ""
)

// versionCmd runs "fifoq version".
func versionCmd(args []string, stdout, stderr io.Writer) int {
	const help = "Usage: fifoq version\n\nPrints the version, the commit and the Go release of this build.\n"
	switch {
	case len(args) == 0:
		fmt.Fprintln(stdout, versionString())
		return 0
	case len(args) == 1 && isHelpFlag(args[0]):
		fmt.Fprint(stdout, help)
		return 0
	}
	fmt.Fprintf(stderr, "fifoq version: unexpected argument %q\n\n%s", args[0], help)
	return 2
}

// buildInfo is what "fifoq version" reports about this build.
type buildInfo struct {
	version   string // the release, or "dev"
	module    string // the module path and its version, e.g. "github.com/fifoq/fifoq v1.2.3"
	commit    string // the commit, "+dirty" if the tree had changes; "" if unknown
	goVersion string
	platform  string
}

// readBuildInfo gathers the build's version, module, commit and Go
// release from the linker flags and runtime/debug.ReadBuildInfo.
func readBuildInfo() buildInfo {
	b := buildInfo{version: version, commit: commit, goVersion: runtime.Version(), platform: runtime.GOOS + "/" + runtime.GOARCH}
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return b
	}
	b.goVersion = info.GoVersion
	modVersion := info.Main.Version
	if modVersion == "" {
		modVersion = "(devel)"
	}
	b.module = info.Main.Path + " " + modVersion
	if b.version == "dev" && modVersion != "(devel)" {
		b.version = modVersion
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
	if b.commit == "" && revision != "" {
		b.commit = revision + modified
	}
	return b
}

// versionString says which build this is, one fact a line.
func versionString() string {
	b := readBuildInfo()
	c := b.commit
	if c == "" {
		c = "unknown (built without VCS information)"
	}
	m := b.module
	if m == "" {
		m = "unknown"
	}
	return fmt.Sprintf("fifoq %s\nmodule: %s\ncommit: %s\ngo:     %s %s", b.version, m, c, b.goVersion, b.platform)
}
