package clustertest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// artifactDir returns where a failed test leaves what explains it (the
// history it checked, its nodes' logs), for CI to keep:
// $FIFOQ_TEST_ARTIFACTS/clustertest/TEST, made if need be; "" where the
// variable is unset, or the directory cannot be made.
func artifactDir(t *testing.T) string {
	root := os.Getenv("FIFOQ_TEST_ARTIFACTS")
	if root == "" {
		return ""
	}
	dir := filepath.Join(root, "clustertest", strings.NewReplacer("/", "_", " ", "_").Replace(t.Name()))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Logf("keep the test's artifacts: %v", err)
		return ""
	}
	return dir
}

// saveNodeLogs copies every node's log whole into the test's artifact
// directory, if there is one: a failure's log tail seldom reaches back to
// its cause.
func saveNodeLogs(t *testing.T, c *cluster) {
	dir := artifactDir(t)
	if dir == "" {
		return
	}
	for _, nd := range c.nodes {
		b, err := os.ReadFile(nd.logPath)
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, nd.id+".log"), b, 0o644)
		}
		if err != nil {
			t.Logf("keep %s's log: %v", nd.id, err)
		}
	}
	t.Logf("the nodes' logs are in %s", dir)
}
