package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// builder builds fifoq's binary for one platform at a time.
type builder struct {
	root, work      string // the repository, and where binaries go
	version, commit string // stamped into the binary
	log             func(format string, args ...any)
}

// buildEnvOverrides are the variables of the environment that change what
// go build makes and that build sets itself, so that a developer's
// settings (GOFLAGS, GOAMD64, a go.work above the checkout, ...) cannot
// make a release differ from CI's.
var buildEnvOverrides = []string{"GOOS", "GOARCH", "CGO_ENABLED", "GOFLAGS", "GOWORK",
	"GOAMD64", "GOARM64", "GOARM", "GO386", "GOEXPERIMENT", "GOFIPS140"}

// build builds fifoq for p and returns the binary's path.
func (b *builder) build(p platform) (string, error) {
	name := "fifoq"
	if p.OS == "windows" {
		name += ".exe"
	}
	out := filepath.Join(b.work, p.OS+"-"+p.Arch, name)
	// -trimpath and -buildvcs=false keep the checkout's path and git
	// state out of the binary; -buildid= leaves the build id empty, as it
	// is a hash of the inputs' paths too. -s -w drop the symbol table and
	// DWARF: a third of the size, and nothing the build information
	// (`go version -m`, the SBOM) needs.
	ldflags := fmt.Sprintf("-s -w -buildid= -X main.version=%s -X main.commit=%s", b.version, b.commit)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, "./cmd/fifoq")
	cmd.Dir = b.root
	cmd.Env = buildEnv(p)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	b.log("building %s", p)
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build for %s: %v\n%s", p, err, stderr.Bytes())
	}
	return out, nil
}

// buildEnv is the environment go build runs in for p: the caller's,
// without the variables build sets, and with CGO off (a static binary that
// runs on any Linux and in an image with no libc) and the baseline
// instruction sets.
func buildEnv(p platform) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		override := false
		for _, o := range buildEnvOverrides {
			override = override || k == o
		}
		if !override {
			env = append(env, kv)
		}
	}
	env = append(env, "GOOS="+p.OS, "GOARCH="+p.Arch, "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off")
	switch p.Arch {
	case "amd64":
		env = append(env, "GOAMD64=v1")
	case "arm64":
		env = append(env, "GOARM64=v8.0")
	}
	return env
}

// generateDocs runs the binary built for this machine to make the man page
// and the completion scripts, which fifoq generates from its commands'
// flag definitions, as they are put in every archive.
func generateDocs(bin string) ([]file, error) {
	var docs []file
	for _, d := range []struct {
		name string
		args []string
	}{
		{"man/fifoq.1", []string{"man"}},
		{"completions/fifoq.bash", []string{"completion", "bash"}},
		{"completions/_fifoq", []string{"completion", "zsh"}},
		{"completions/fifoq.fish", []string{"completion", "fish"}},
	} {
		cmd := exec.Command(bin, d.args...)
		// A bare environment: a FIFOQ_ variable of the build machine must
		// not end up as a documented default.
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "LC_ALL=C"}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("fifoq %s: %v\n%s", strings.Join(d.args, " "), err, stderr.Bytes())
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("fifoq %s printed nothing", strings.Join(d.args, " "))
		}
		docs = append(docs, file{name: d.name, mode: 0o644, data: out})
	}
	return docs, nil
}
