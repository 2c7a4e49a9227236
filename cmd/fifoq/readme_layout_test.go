package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeLayoutMatchesTree keeps the README's Layout section true: it
// lists every directory of Go code (outside testdata and third_party), and
// no directory that is not in the tree.
func TestReadmeLayoutMatchesTree(t *testing.T) {
	const root = "../.."
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "## Layout\n\n```\n")
	if !ok {
		t.Fatal("README.md has no Layout section")
	}
	section, _, _ = strings.Cut(section, "```")
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(section), "\n") {
		if dir, _, _ := strings.Cut(line, " "); dir != "" {
			listed[dir] = true
		}
	}
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == "testdata" || name == "third_party" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".go") {
			return nil
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		// A program inside an example (its app) belongs to the example.
		if strings.HasPrefix(dir, "examples/") {
			parts := strings.Split(dir, "/")
			dir = parts[0] + "/" + parts[1]
		}
		if dir != "." {
			found[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for dir := range found {
		if !listed[dir] {
			t.Errorf("README.md's Layout does not list %s", dir)
		}
	}
	for dir := range listed {
		if st, err := os.Stat(filepath.Join(root, dir)); err != nil || !st.IsDir() {
			t.Errorf("README.md's Layout lists %s, which is not a directory of the tree", dir)
		}
	}
}
