// Package testbin builds the fifoq binary for tests that run it as a
// process of its own (the crash test, the cluster tests), and makes go
// test's result cache see the sources it was built from.
//
// go test caches a package's result until its test binary, or a file or
// environment variable the test read, changes. A test that builds fifoq
// with `go build` in a subprocess reads none of fifoq's sources itself,
// and does not import most of them, so without help a change to, say,
// internal/replog would leave `go test ./...` answering "(cached) ok" for
// the crash test without running it against the change. Track therefore
// opens every file the binary is built from, from within a test: go test
// records the files a test opens (only while tests run, not in TestMain)
// and reruns the package when any of them changes.
package testbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// mainPackage is what Build builds.
const mainPackage = "github.com/fifoq/fifoq/cmd/fifoq"

// Build builds fifoq into out, with the given build tags; its output goes
// to the standard error. A test's TestMain calls it; every test that runs
// the binary calls Track with the same tags.
func Build(out string, tags ...string) error {
	args := []string{"build", "-o", out}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	cmd := exec.Command("go", append(args, mainPackage)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	return cmd.Run()
}

var (
	trackMu sync.Mutex
	tracked = map[string]bool{} // build tags already tracked in this process
)

// Track opens every file fifoq is built from with the given tags (see
// inputs), once per test process and set of tags, so that go test reruns
// the calling test's package when any of them changes. It must be called
// from a test, not from TestMain.
func Track(tb testing.TB, tags ...string) {
	tb.Helper()
	key := strings.Join(tags, ",")
	trackMu.Lock()
	defer trackMu.Unlock()
	if tracked[key] {
		return
	}
	files, err := inputs(tags)
	if err == nil {
		err = openAll(files)
	}
	if err != nil {
		tb.Fatalf("open fifoq's sources for go test's cache: %v", err)
	}
	tracked[key] = true
}

// openAll opens and closes each file, which is all go test needs to see.
func openAll(files []string) error {
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return err
		}
		f.Close()
	}
	return nil
}

// listTemplate prints, for every package the binary is built from that
// is not in the read-only module cache (fifoq's own, the patched raft-wal
// under internal/third_party/raftwal among them, and any module replaced by a
// directory), its Go and embedded files, and the go.mod of its module.
const listTemplate = `{{if .Module}}{{if or .Module.Main .Module.Replace}}` +
	`{{range .GoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .CgoFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}` +
	`{{range .EmbedFiles}}{{$.Dir}}/{{.}}{{"\n"}}{{end}}` +
	`{{.Module.GoMod}}{{"\n"}}{{end}}{{end}}`

// inputs returns the files the binary is built from, as go list reports
// them, with go.sum beside each go.mod.
func inputs(tags []string) ([]string, error) {
	args := []string{"list", "-deps", "-f", listTemplate}
	if len(tags) > 0 {
		args = append(args, "-tags", strings.Join(tags, ","))
	}
	out, err := exec.Command("go", append(args, mainPackage)...).Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s: %w", mainPackage, err)
	}
	seen := map[string]bool{}
	var files []string
	add := func(name string) {
		if name != "" && !seen[name] {
			seen[name] = true
			files = append(files, name)
		}
	}
	for _, line := range strings.Split(string(out), "\n") {
		add(line)
		if filepath.Base(line) == "go.mod" {
			if sum := filepath.Join(filepath.Dir(line), "go.sum"); fileExists(sum) {
				add(sum)
			}
		}
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("go list %s: no files", mainPackage)
	}
	return files, nil
}

// fileExists reports whether name is an existing file.
func fileExists(name string) bool {
	_, err := os.Stat(name)
	return err == nil
}
