// Package gitinfo reads what the release tools need from the checkout
// they run in: the repository's root, the commit, its time and whether
// the work tree differs from it.
//
// The tools run as `go -C tools run ./NAME`, so their working directory
// is tools/, not the root; every path a user gives them is resolved
// against the root (Abs), so that `--out dist` means the same directory
// whichever way the tool was started.
package gitinfo

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Repo is a checkout and the commit its HEAD names.
type Repo struct {
	Root   string    // absolute path of the work tree's top directory
	Commit string    // the full hash of HEAD
	Time   time.Time // the commit's committer time, in UTC
	Dirty  bool      // tracked files differ from the commit (untracked ones are not counted)
}

// Open reads the repository that contains dir.
func Open(dir string) (*Repo, error) {
	root, err := git(dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	r := &Repo{Root: root}
	if r.Commit, err = git(root, "rev-parse", "HEAD"); err != nil {
		return nil, err
	}
	// The committer time, not the author time: it is what changes when a
	// commit is amended or rebased, and what `git log -1 --format=%ct`
	// prints, which reproducible-build tools conventionally use.
	ct, err := git(root, "log", "-1", "--format=%ct", "HEAD")
	if err != nil {
		return nil, err
	}
	secs, err := strconv.ParseInt(ct, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("git log -1 --format=%%ct: %q: %w", ct, err)
	}
	r.Time = time.Unix(secs, 0).UTC()
	status, err := git(root, "status", "--porcelain", "--untracked-files=no")
	if err != nil {
		return nil, err
	}
	r.Dirty = status != ""
	return r, nil
}

// Abs resolves p against the repository's root unless it is absolute.
func (r *Repo) Abs(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(r.Root, p)
}

// Files lists the files of the work tree that git would put in a commit:
// tracked files that still exist and untracked files that are not
// ignored, as slash-separated paths relative to the root, sorted. It
// reads the work tree rather than HEAD so that a change can be tried
// before it is committed; in CI's fresh clone the two are the same.
func (r *Repo) Files() ([]string, error) {
	out, err := gitBytes(r.Root, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var files []string
	for _, name := range strings.Split(string(out), "\x00") {
		if name == "" || seen[name] {
			continue
		}
		seen[name] = true
		// A tracked file deleted from the work tree is still in the index.
		if _, err := os.Lstat(filepath.Join(r.Root, filepath.FromSlash(name))); errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	sort.Strings(files)
	return files, nil
}

// git runs git in dir and returns its output without the final newline.
func git(dir string, args ...string) (string, error) {
	out, err := gitBytes(dir, args...)
	return strings.TrimSpace(string(out)), err
}

func gitBytes(dir string, args ...string) ([]byte, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return out, nil
}
