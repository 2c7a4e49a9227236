// Command modproxy writes a Go module proxy directory that serves this
// checkout of fifoq as one version of github.com/fifoq/fifoq, so that
// `go install github.com/fifoq/fifoq/cmd/fifoq@VERSION` can be tried
// against it exactly as a user runs it against proxy.golang.org:
//
//	go -C tools run ./modproxy --out /tmp/proxy            # prints the version it wrote
//	GOPROXY=file:///tmp/proxy,https://proxy.golang.org GONOSUMDB=github.com/fifoq/fifoq \
//	    go install github.com/fifoq/fifoq/cmd/fifoq@VERSION
//
// The directory has the proxy protocol's layout (go help goproxy):
// github.com/fifoq/fifoq/@v/list, VERSION.info, VERSION.mod and
// VERSION.zip. The zip is made by golang.org/x/mod/zip, the go command's
// own code, from the files git would commit (tracked and untracked, not
// ignored), so that it holds what a proxy would serve for that commit:
// nested modules (tools/, examples/gotest) and ignored files are left
// out. Without --version the version is the pseudo-version of HEAD
// (v0.0.0-TIME-HASH), as `go install ...@COMMIT` would resolve it.
//
// The go command refuses to install a module whose go.mod has replace or
// exclude directives; so does this tool, with a clearer message.
package main

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	modzip "golang.org/x/mod/zip"

	"github.com/fifoq/fifoq/tools/internal/gitinfo"
)

func main() {
	version := flag.String("version", "", "module version to serve (default: HEAD's pseudo-version, v0.0.0-TIME-HASH)")
	out := flag.String("out", "", "directory to write the proxy into (relative paths are relative to the repository's root)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go -C tools run ./modproxy [--version V] --out DIR\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	v, err := run(".", *version, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
	fmt.Println(v)
}

// run writes the proxy for the checkout containing dir and returns the
// version it serves.
func run(dir, version, out string) (string, error) {
	repo, err := gitinfo.Open(dir)
	if err != nil {
		return "", err
	}
	gomod, err := os.ReadFile(filepath.Join(repo.Root, "go.mod"))
	if err != nil {
		return "", err
	}
	modPath, err := installable(gomod)
	if err != nil {
		return "", err
	}
	if version == "" {
		version = module.PseudoVersion("v0", "", repo.Time, repo.Commit[:12])
	}
	m := module.Version{Path: modPath, Version: version}
	if err := module.Check(m.Path, m.Version); err != nil {
		return "", err
	}
	files, err := moduleFiles(repo)
	if err != nil {
		return "", err
	}
	var zbuf bytes.Buffer
	if err := modzip.Create(&zbuf, m, files); err != nil {
		return "", err
	}
	// The go command checks that the .mod it is served is the zip's go.mod.
	if err := sameGoMod(zbuf.Bytes(), m, gomod); err != nil {
		return "", err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    string
	}{m.Version, repo.Time.Format("2006-01-02T15:04:05Z")})
	if err != nil {
		return "", err
	}
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return "", err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return "", err
	}
	vdir := filepath.Join(repo.Abs(out), filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(vdir, 0o755); err != nil {
		return "", err
	}
	for name, data := range map[string][]byte{
		"list":           []byte(m.Version + "\n"),
		escVer + ".info": append(info, '\n'),
		escVer + ".mod":  gomod,
		escVer + ".zip":  zbuf.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
			return "", err
		}
	}
	fmt.Fprintf(os.Stderr, "modproxy: %s@%s: %d files offered, zip %d bytes, in %s\n", m.Path, m.Version, len(files), zbuf.Len(), vdir)
	return m.Version, nil
}

// installable returns the module path of gomod, or why `go install
// MODULE/...@VERSION` would refuse the module.
func installable(gomod []byte) (string, error) {
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		return "", err
	}
	if mf.Module == nil {
		return "", errors.New("go.mod has no module line")
	}
	if len(mf.Replace) > 0 || len(mf.Exclude) > 0 {
		return "", fmt.Errorf("go.mod has %d replace and %d exclude directives: go install refuses such a module", len(mf.Replace), len(mf.Exclude))
	}
	return mf.Module.Mod.Path, nil
}

// moduleFiles is the checkout's files as x/mod/zip takes them; it leaves
// out, itself, those of nested modules and vendor directories.
func moduleFiles(repo *gitinfo.Repo) ([]modzip.File, error) {
	names, err := repo.Files()
	if err != nil {
		return nil, err
	}
	files := make([]modzip.File, 0, len(names))
	for _, name := range names {
		p := filepath.Join(repo.Root, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		files = append(files, diskFile{name: name, path: p, info: fi})
	}
	return files, nil
}

// diskFile is a file of the work tree, named by its path in the module.
type diskFile struct {
	name, path string
	info       os.FileInfo
}

func (f diskFile) Path() string                 { return f.name }
func (f diskFile) Lstat() (os.FileInfo, error)  { return f.info, nil }
func (f diskFile) Open() (io.ReadCloser, error) { return os.Open(f.path) }

// sameGoMod checks that the zip's go.mod is gomod.
func sameGoMod(z []byte, m module.Version, gomod []byte) error {
	zr, err := zip.NewReader(bytes.NewReader(z), int64(len(z)))
	if err != nil {
		return err
	}
	want := m.Path + "@" + m.Version + "/go.mod"
	for _, f := range zr.File {
		if f.Name != want {
			continue
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		defer rc.Close()
		data, err := io.ReadAll(rc)
		if err != nil {
			return err
		}
		if !bytes.Equal(data, gomod) {
			return errors.New("the zip's go.mod differs from the work tree's")
		}
		return nil
	}
	names := make([]string, 0, 3)
	for i, f := range zr.File {
		if i == 3 {
			break
		}
		names = append(names, f.Name)
	}
	return fmt.Errorf("the zip has no %s (first entries: %s)", want, strings.Join(names, ", "))
}
