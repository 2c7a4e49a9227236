package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// ClientEnv is the environment of the AWS CLI and boto3 in a test: test
// credentials and region us-east-1, configuration files that do not
// exist, so that the machine's ~/.aws and AWS_* variables cannot point
// them elsewhere, and no proxy for loopback.
func ClientEnv(tb testing.TB) []string {
	tb.Helper()
	dir := tb.TempDir()
	env := []string{
		"AWS_ACCESS_KEY_ID=test",
		"AWS_SECRET_ACCESS_KEY=test",
		"AWS_DEFAULT_REGION=us-east-1",
		"AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials"),
		"AWS_PAGER=",
		"NO_PROXY=127.0.0.1,localhost",
		"no_proxy=127.0.0.1,localhost",
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") && !strings.HasPrefix(strings.ToUpper(kv), "NO_PROXY=") {
			env = append(env, kv)
		}
	}
	return env
}

// Boto3Python returns the python3 that has boto3; a test without it fails
// in CI and skips elsewhere (ClientMissing).
func Boto3Python(tb testing.TB) string {
	tb.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		ClientMissing(tb, "python3 is not installed")
	}
	if err := exec.Command(python, "-c", "import boto3").Run(); err != nil {
		ClientMissing(tb, "boto3 is not installed")
	}
	return python
}
