package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Build-time values the test binary of fifoq is stamped with, as the
// Dockerfile stamps the image's.
const (
	testVersion = "v0.0.0-test"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
	buildOut  []byte
)

// TestMain removes the binaries the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

// builtBinaries builds fifoq as the Dockerfile does (static, version and
// commit from -ldflags) and the example app of examples/compose, once per
// test run, and returns their paths.
func builtBinaries(t *testing.T) (fifoq, app string) {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "fifoq-build-")
		if buildErr != nil {
			return
		}
		// Not static nor -trimpath as in the image: those would rebuild
		// every package, and change nothing the tests look at.
		cmd := exec.Command("go", "build", "-buildvcs=false",
			"-ldflags", "-X main.version="+testVersion+" -X main.commit="+testCommit,
			"-o", filepath.Join(buildDir, "fifoq"), ".")
		if buildOut, buildErr = cmd.CombinedOutput(); buildErr != nil {
			return
		}
		cmd = exec.Command("go", "build", "-o", filepath.Join(buildDir, "app"), "../../examples/compose/app")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("build: %v\n%s", buildErr, buildOut)
	}
	return filepath.Join(buildDir, "fifoq"), filepath.Join(buildDir, "app")
}
