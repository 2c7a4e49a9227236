package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"
)

// TestProxyServesTheCheckout writes the proxy for this checkout and checks
// the zip as the go command would, and what it holds: the module's own
// files, the raft-wal copy among them, and neither tools/ (a module of
// its own) nor anything git ignores.
func TestProxyServesTheCheckout(t *testing.T) {
	out := t.TempDir()
	const v = "v0.0.0-test"
	got, err := run(".", v, out)
	if err != nil {
		t.Fatal(err)
	}
	if got != v {
		t.Fatalf("run returned %s", got)
	}
	dir := filepath.Join(out, "github.com", "fifoq", "fifoq", "@v")
	for _, name := range []string{"list", v + ".info", v + ".mod", v + ".zip"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
	cf, err := modzip.CheckZip(module.Version{Path: "github.com/fifoq/fifoq", Version: v}, filepath.Join(dir, v+".zip"))
	if err != nil {
		t.Fatalf("the go command would refuse the zip: %v", err)
	}
	has := map[string]bool{}
	for _, f := range cf.Valid {
		f = strings.TrimPrefix(f, "github.com/fifoq/fifoq@"+v+"/")
		has[f] = true
		if strings.HasPrefix(f, "tools/") || strings.Contains(f, "node_modules/") || strings.HasPrefix(f, "examples/gotest/") {
			t.Errorf("the zip holds %s", f)
		}
	}
	for _, want := range []string{"go.mod", "go.sum", "LICENSE", "cmd/fifoq/main.go", "internal/third_party/raftwal/wal.go", "internal/third_party/raftwal/LICENSE"} {
		if !has[want] {
			t.Errorf("the zip lacks %s", want)
		}
	}
}

// TestInstallableRefusesReplace: go install refuses a module with a
// replace directive, and so does modproxy, saying why.
func TestInstallableRefusesReplace(t *testing.T) {
	if p, err := installable([]byte("module example.com/m\n\ngo 1.26\n")); err != nil || p != "example.com/m" {
		t.Errorf("installable = %q, %v", p, err)
	}
	_, err := installable([]byte("module example.com/m\n\ngo 1.26\n\nreplace example.com/x => ./x\n"))
	if err == nil || !strings.Contains(err.Error(), "replace") {
		t.Errorf("a go.mod with a replace: %v", err)
	}
}
