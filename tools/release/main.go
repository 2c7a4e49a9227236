// Command release makes a release of fifoq from the checkout it runs in,
// in one command and without Docker:
//
//	go -C tools run ./release --version v1.2.3 --out dist
//
// It writes into the output directory (relative paths are relative to the
// repository's root, not to tools/):
//
//   - fifoq-VERSION-OS-ARCH.tar.gz (linux and darwin, amd64 and arm64) and
//     fifoq-VERSION-windows-amd64.zip: a static binary stamped with the
//     version and commit, LICENSE, README.md, the man page and the bash,
//     zsh and fish completions;
//   - fifoq-VERSION-OS-ARCH.cdx.json: a CycloneDX SBOM of each binary,
//     listing the modules the binary was linked from (its build
//     information), each with its version and package URL;
//   - oci/: an OCI image layout holding a multi-platform image
//     (linux/amd64 and linux/arm64) built from nothing but the binary, CA
//     certificates, a non-root user and the data volume, configured as the
//     Dockerfile's final stage says (ENTRYPOINT, CMD, USER, VOLUME, EXPOSE,
//     HEALTHCHECK), tagged VERSION;
//   - fifoq-VERSION-oci.tar: the same layout as one tar file, with a
//     docker-archive manifest.json beside it, for `docker load` and
//     `podman load`;
//   - SHA256SUMS: every file above, in sha256sum's format.
//
// The output is reproducible: the same commit and version give the same
// bytes. Every timestamp is the commit's time, archive entries are sorted
// with fixed owners and modes, and compression is Go's, with fixed
// settings. docs/releasing.md says how to check and publish a release.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"golang.org/x/mod/semver"

	"github.com/fifoq/fifoq/tools/internal/gitinfo"
)

// platform is a GOOS/GOARCH pair.
type platform struct{ OS, Arch string }

func (p platform) String() string { return p.OS + "/" + p.Arch }

// allPlatforms are those a release is built for. The image is made of the
// linux ones.
var allPlatforms = []platform{
	{"linux", "amd64"}, {"linux", "arm64"},
	{"darwin", "amd64"}, {"darwin", "arm64"},
	{"windows", "amd64"},
}

// options is what a release is made from.
type options struct {
	version    string     // the release's version, vX.Y.Z[-pre]
	out        string     // absolute output directory; must not exist or be empty
	platforms  []platform // what to build
	caCerts    string     // the image's CA certificates: debianCACerts or a PEM file
	allowDirty bool       // build a tree that differs from its commit
	log        func(format string, args ...any)
}

func main() {
	version := flag.String("version", "", "the release's version: a semantic version such as v1.2.3 or v1.3.0-rc.1 (no +build part: it is also the image's tag)")
	out := flag.String("out", "", "directory to write the release into; it must be new or empty (relative paths are relative to the repository's root)")
	platforms := flag.String("platforms", "", "comma-separated GOOS/GOARCH list to build (default: all five; the image has the linux ones)")
	caCerts := flag.String("ca-certs", debianCACerts, `the image's CA certificates: "debian" for those of the build machine's ca-certificates package (without CAs added locally), or a PEM bundle file`)
	allowDirty := flag.Bool("allow-dirty", false, "build even if tracked files differ from HEAD; the commit is then stamped COMMIT+dirty")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "Usage: go -C tools run ./release --version VERSION --out DIR\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if *version == "" || *out == "" || flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	repo, err := gitinfo.Open(".")
	if err == nil {
		opts := options{version: *version, out: repo.Abs(*out), caCerts: *caCerts, allowDirty: *allowDirty,
			log: func(format string, args ...any) { fmt.Fprintf(os.Stderr, "release: "+format+"\n", args...) }}
		if opts.platforms, err = parsePlatforms(*platforms); err == nil {
			err = release(repo, opts)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

// parsePlatforms parses the --platforms list ("" is all of them).
func parsePlatforms(s string) ([]platform, error) {
	if s == "" {
		return allPlatforms, nil
	}
	var out []platform
	for _, f := range strings.Split(s, ",") {
		os, arch, ok := strings.Cut(strings.TrimSpace(f), "/")
		p := platform{os, arch}
		known := false
		for _, q := range allPlatforms {
			known = known || q == p
		}
		if !ok || !known {
			return nil, fmt.Errorf("--platforms: %q is not one of the release's platforms", f)
		}
		out = append(out, p)
	}
	return out, nil
}

// checkVersion refuses what cannot be a version and an image tag.
func checkVersion(v string) error {
	if !semver.IsValid(v) || semver.Canonical(v) != v {
		return fmt.Errorf("version %q: want a full semantic version with its v, such as v1.2.3 or v1.3.0-rc.1", v)
	}
	if strings.Contains(v, "+") {
		return fmt.Errorf("version %q: build metadata (+...) cannot be part of an image tag", v)
	}
	return nil
}

// release makes the release of repo described by opts.
func release(repo *gitinfo.Repo, opts options) error {
	start := time.Now()
	if err := checkVersion(opts.version); err != nil {
		return err
	}
	commit := repo.Commit
	if repo.Dirty {
		if !opts.allowDirty {
			return errors.New("tracked files differ from HEAD: commit them, or give --allow-dirty to build the work tree anyway (stamped " + commit + "+dirty)")
		}
		commit += "+dirty"
	}
	if err := emptyDir(opts.out); err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "fifoq-release-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)

	b := &builder{root: repo.Root, work: work, version: opts.version, commit: commit, log: opts.log}
	bins := map[platform]string{}
	for _, p := range opts.platforms {
		if bins[p], err = b.build(p); err != nil {
			return err
		}
	}
	host := platform{runtime.GOOS, runtime.GOARCH}
	hostBin, ok := bins[host]
	if !ok {
		if hostBin, err = b.build(host); err != nil {
			return err
		}
	}
	docs, err := generateDocs(hostBin)
	if err != nil {
		return err
	}
	r := &releaser{repo: repo, opts: opts, commit: commit, bins: bins, docs: docs}
	if err := r.archives(); err != nil {
		return err
	}
	if err := r.sboms(); err != nil {
		return err
	}
	if err := r.image(); err != nil {
		return err
	}
	if err := writeSums(opts.out); err != nil {
		return err
	}
	opts.log("%s of %s (commit time %s) written to %s in %s", opts.version, commit, repo.Time.Format(time.RFC3339), opts.out, time.Since(start).Round(time.Second))
	return nil
}

// emptyDir makes dir, or checks that it is empty: a release directory
// holds one release, and a stale file in it would be listed in SHA256SUMS.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o755)
	case err != nil:
		return err
	case len(entries) > 0:
		return fmt.Errorf("%s is not empty: give a new directory", dir)
	}
	return nil
}

// releaser writes the release's files from the built binaries.
type releaser struct {
	repo   *gitinfo.Repo
	opts   options
	commit string              // as stamped: the hash, +dirty if so
	bins   map[platform]string // the built binaries
	docs   []file              // man page and completions, as archived
}

// baseName is the name of the release's files for platform p.
func (r *releaser) baseName(p platform) string {
	return "fifoq-" + r.opts.version + "-" + p.OS + "-" + p.Arch
}
