package main

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"io"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fifoq/fifoq/tools/internal/gitinfo"
)

// TestReleaseIsReproducible makes the release twice for this machine's
// linux platform (one binary, its archive, SBOM and a one-platform
// image), and checks that the two are the same bytes, that SHA256SUMS
// lists them, and what the files hold. CI runs the whole release twice
// and compares it too (.ci/check-release); this is the same at the scale
// of one platform.
func TestReleaseIsReproducible(t *testing.T) {
	if testing.Short() {
		t.Skip("builds fifoq twice")
	}
	if runtime.GOOS != "linux" {
		t.Skip("the image's binary is a linux one: run on linux")
	}
	repo, err := gitinfo.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	ca := testCABundle(t)
	p := platform{"linux", runtime.GOARCH}
	const version = "v0.0.0-test.1"
	var dirs []string
	for i := 0; i < 2; i++ {
		dir := filepath.Join(t.TempDir(), "out")
		opts := options{version: version, out: dir, platforms: []platform{p}, caCerts: ca, allowDirty: true, log: t.Logf}
		if err := release(repo, opts); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir)
	}
	a, b := readTree(t, dirs[0]), readTree(t, dirs[1])
	if len(a) != len(b) {
		t.Fatalf("the two releases have %d and %d files", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between the two releases", name)
		}
	}
	checkSums(t, a)
	base := "fifoq-" + version + "-" + p.OS + "-" + p.Arch
	bin := checkArchive(t, a[base+".tar.gz"], base)
	checkBinaryVersion(t, bin, version)
	checkSBOM(t, a[base+".cdx.json"], bin, version)
	checkLayout(t, a, p)
}

// testCABundle writes a PEM bundle of one self-signed CA certificate.
func testCABundle(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "release test CA"},
		NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(name, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// readTree reads every file under dir, by slash path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkSums checks that SHA256SUMS lists every other file with its digest.
func checkSums(t *testing.T, files map[string][]byte) {
	t.Helper()
	listed := 0
	for _, line := range strings.Split(strings.TrimSpace(string(files[sumsName])), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		data, found := files[name]
		if !ok || !found {
			t.Errorf("SHA256SUMS: %q names no file of the release", line)
			continue
		}
		if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
			t.Errorf("SHA256SUMS: wrong digest for %s", name)
		}
		listed++
	}
	if listed != len(files)-1 {
		t.Errorf("SHA256SUMS lists %d files of %d", listed, len(files)-1)
	}
}

// checkArchive checks the tar.gz's entries (names, owners, modes, times)
// and returns the path of its binary, extracted.
func checkArchive(t *testing.T, data []byte, base string) string {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !zr.ModTime.IsZero() || zr.Name != "" {
		t.Errorf("gzip header: time %v, name %q, want neither", zr.ModTime, zr.Name)
	}
	tr := tar.NewReader(zr)
	var names []string
	var bin string
	var mtime time.Time
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
		if hdr.Uid != 0 || hdr.Gid != 0 || hdr.Uname != "" || hdr.Gname != "" {
			t.Errorf("%s: owner %d:%d (%q:%q), want 0:0 unnamed", hdr.Name, hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname)
		}
		if mtime.IsZero() {
			mtime = hdr.ModTime
		} else if !hdr.ModTime.Equal(mtime) {
			t.Errorf("%s: time %v, others %v", hdr.Name, hdr.ModTime, mtime)
		}
		if hdr.Name == base+"/fifoq" {
			if hdr.Mode != 0o755 {
				t.Errorf("the binary's mode is %o", hdr.Mode)
			}
			bin = filepath.Join(t.TempDir(), "fifoq")
			b, _ := io.ReadAll(tr)
			if err := os.WriteFile(bin, b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := []string{base + "/", base + "/LICENSE", base + "/README.md", base + "/completions/", base + "/completions/_fifoq",
		base + "/completions/fifoq.bash", base + "/completions/fifoq.fish", base + "/fifoq", base + "/man/", base + "/man/fifoq.1"}
	if !slices.Equal(names, want) {
		t.Errorf("archive entries:\n%q\nwant\n%q", names, want)
	}
	if bin == "" {
		t.Fatal("no binary in the archive")
	}
	return bin
}

// checkBinaryVersion runs the binary's version command.
func checkBinaryVersion(t *testing.T, bin, version string) {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("fifoq version: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), "fifoq "+version+"\n") || !strings.Contains(string(out), "commit: ") {
		t.Errorf("fifoq version printed:\n%s", out)
	}
}

// checkSBOM checks that the SBOM lists every module of the binary's build
// information, and nothing else but the raft-wal copy and the standard
// library.
func checkSBOM(t *testing.T, data []byte, bin, version string) {
	t.Helper()
	var bom cdxBOM
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatal(err)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.5" || bom.Metadata.Component.PURL != "pkg:golang/github.com/fifoq/fifoq@"+version {
		t.Errorf("SBOM header: %s %s, component %s", bom.BOMFormat, bom.SpecVersion, bom.Metadata.Component.PURL)
	}
	purls := map[string]bool{}
	for _, c := range bom.Components {
		purls[c.PURL] = true
	}
	for _, d := range info.Deps {
		if !purls[purl(d.Path, d.Version)] {
			t.Errorf("the SBOM lacks %s %s", d.Path, d.Version)
		}
	}
	if len(bom.Components) != len(info.Deps)+2 {
		t.Errorf("the SBOM has %d components for the binary's %d modules (+ raft-wal and stdlib)", len(bom.Components), len(info.Deps))
	}
	if len(bom.Dependencies) != 1 || len(bom.Dependencies[0].DependsOn) != len(bom.Components) {
		t.Errorf("SBOM dependencies: %+v", bom.Dependencies)
	}
}

// checkLayout checks the OCI layout from index.json down: every blob has
// the digest and size its descriptor says, and the image is p's.
func checkLayout(t *testing.T, files map[string][]byte, p platform) {
	t.Helper()
	blob := func(d ociDescriptor) []byte {
		data, ok := files["oci/"+blobPath(d)]
		if !ok {
			t.Fatalf("no blob %s", d.Digest)
		}
		sum := sha256.Sum256(data)
		if "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || int64(len(data)) != d.Size {
			t.Fatalf("blob %s: digest or size wrong", d.Digest)
		}
		return data
	}
	var top, idx ociIndex
	mustJSON(t, files["oci/index.json"], &top)
	if len(top.Manifests) != 1 || top.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "v0.0.0-test.1" {
		t.Fatalf("index.json: %+v", top)
	}
	mustJSON(t, blob(top.Manifests[0]), &idx)
	if len(idx.Manifests) != 1 || *idx.Manifests[0].Platform != (ociPlatform{Architecture: p.Arch, OS: p.OS, Variant: idx.Manifests[0].Platform.Variant}) {
		t.Fatalf("image index: %+v", idx)
	}
	var m ociManifest
	mustJSON(t, blob(idx.Manifests[0]), &m)
	var cfg ociImageConfig
	mustJSON(t, blob(m.Config), &cfg)
	if len(m.Layers) != 2 || len(cfg.RootFS.DiffIDs) != 2 {
		t.Fatalf("manifest has %d layers, config %d diff ids", len(m.Layers), len(cfg.RootFS.DiffIDs))
	}
	owners := map[string]string{}
	for i, l := range m.Layers {
		zr, err := gzip.NewReader(bytes.NewReader(blob(l)))
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(zr)
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(raw); "sha256:"+hex.EncodeToString(sum[:]) != cfg.RootFS.DiffIDs[i] {
			t.Errorf("layer %d: diff id does not match", i)
		}
		tr := tar.NewReader(bytes.NewReader(raw))
		for {
			hdr, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			owners[hdr.Name] = strconv.Itoa(hdr.Uid) + ":" + strconv.Itoa(hdr.Gid) + ":" + strconv.FormatInt(hdr.Mode, 8)
		}
	}
	for name, want := range map[string]string{
		"etc/passwd": "0:0:644", "etc/group": "0:0:644", "etc/ssl/certs/ca-certificates.crt": "0:0:644",
		"data/": "65532:65532:755", "usr/local/bin/fifoq": "0:0:755",
	} {
		if owners[name] != want {
			t.Errorf("image file %s: %q, want uid:gid:mode %s", name, owners[name], want)
		}
	}
	if _, ok := files["fifoq-v0.0.0-test.1-oci.tar"]; !ok {
		t.Error("no OCI tar")
	}
}

func mustJSON(t *testing.T, data []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

// TestArchivesAreDeterministic writes the same files, given in two
// orders, as tar and zip, and checks that the bytes are the same, with
// parent directories added and the time fixed.
func TestArchivesAreDeterministic(t *testing.T) {
	mtime := time.Date(2026, 11, 1, 12, 0, 0, 0, time.FixedZone("X", 3600))
	files := []file{
		{name: "a/bin/tool", mode: 0o755, data: []byte("#!")},
		{name: "a/README", mode: 0o644, data: []byte("hello")},
		{name: "b", mode: fs.ModeDir | 0o755, uid: 7, gid: 8},
	}
	rev := []file{files[2], files[1], files[0]}
	for _, w := range []struct {
		name  string
		write func(io.Writer, []file, time.Time) error
	}{{"tar", writeTar}, {"zip", writeZip}} {
		var x, y bytes.Buffer
		if err := w.write(&x, files, mtime); err != nil {
			t.Fatal(err)
		}
		if err := w.write(&y, rev, mtime); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x.Bytes(), y.Bytes()) {
			t.Errorf("%s: the order of the files changed the bytes", w.name)
		}
	}
	var z bytes.Buffer
	if err := writeZip(&z, files, mtime); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(z.Bytes()), int64(z.Len()))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range zr.File {
		names = append(names, f.Name)
		if !f.Modified.Equal(mtime) {
			t.Errorf("zip %s: time %v, want %v", f.Name, f.Modified, mtime)
		}
	}
	if want := []string{"a/", "a/README", "a/bin/", "a/bin/tool", "b/"}; !slices.Equal(names, want) {
		t.Errorf("zip entries %q, want %q", names, want)
	}
}

// TestPURL pins package URLs of Go modules, escapes included.
func TestPURL(t *testing.T) {
	for _, c := range [][3]string{
		{"github.com/aws/aws-sdk-go-v2", "v1.47.7", "pkg:golang/github.com/aws/aws-sdk-go-v2@v1.47.7"},
		{"github.com/coreos/etcd", "v3.3.27+incompatible", "pkg:golang/github.com/coreos/etcd@v3.3.27%2Bincompatible"},
		{"go.yaml.in/yaml/v3", "v3.0.5", "pkg:golang/go.yaml.in/yaml/v3@v3.0.5"},
	} {
		if got := purl(c[0], c[1]); got != c[2] {
			t.Errorf("purl(%s, %s) = %s, want %s", c[0], c[1], got, c[2])
		}
	}
	if s := serialNumber("v1.0.0", "abc", platform{"linux", "amd64"}); len(s) != len("urn:uuid:")+36 || s[len("urn:uuid:")+14] != '5' {
		t.Errorf("serial number %s is not a version-5 UUID URN", s)
	}
}

// TestDockerfileDescribesTheImage checks that the Dockerfile's final stage
// puts in the files the release's image has, owned as the release owns
// them, with the same labels, so that docker build and the release make
// the same image.
func TestDockerfileDescribesTheImage(t *testing.T) {
	spec, err := readDockerfile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	if spec.User != "65532:65532" || !slices.Equal(spec.Volumes, []string{"/data"}) || !slices.Equal(spec.Expose, []string{"9324/tcp"}) {
		t.Errorf("USER %q, VOLUME %q, EXPOSE %q", spec.User, spec.Volumes, spec.Expose)
	}
	if !slices.Equal(spec.Entrypoint, []string{"/usr/local/bin/fifoq"}) || !slices.Equal(spec.Cmd, []string{"serve", "--listen", "0.0.0.0:9324", "--data-dir", "/data"}) {
		t.Errorf("ENTRYPOINT %q CMD %q", spec.Entrypoint, spec.Cmd)
	}
	if spec.Healthcheck == nil || spec.Healthcheck.Retries != 3 || spec.Healthcheck.Interval != 10*time.Second || spec.Healthcheck.Test[1] != spec.Entrypoint[0] {
		t.Errorf("HEALTHCHECK %+v", spec.Healthcheck)
	}
	for _, want := range []string{
		"packaging/image/passwd packaging/image/group /etc/",
		"--from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt",
		"--from=build /out/fifoq " + spec.Entrypoint[0],
		"--from=build --chown=" + spec.User + " /out/data " + spec.Volumes[0],
	} {
		if !slices.Contains(spec.Copies, want) {
			t.Errorf("the Dockerfile's final stage does not COPY %s (it has %q)", want, spec.Copies)
		}
	}
	if len(spec.Copies) != 4 {
		t.Errorf("the Dockerfile's final stage has %d COPY instructions, the release's image 4 kinds of file: %q", len(spec.Copies), spec.Copies)
	}
	r := &releaser{opts: options{version: "${VERSION}"}, commit: "${COMMIT}", repo: &gitinfo.Repo{}}
	labels := r.labels()
	delete(labels, "org.opencontainers.image.created") // the release's only: the commit's time
	if len(spec.Labels) != len(labels) {
		t.Errorf("the Dockerfile has %d labels, the release %d", len(spec.Labels), len(labels))
	}
	for k, v := range labels {
		if spec.Labels[k] != v {
			t.Errorf("label %s: Dockerfile %q, release %q", k, spec.Labels[k], v)
		}
	}
}

// TestCheckVersion pins which versions a release may have.
func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{"v1.2.3": true, "v0.0.0-ci": true, "v1.3.0-rc.1": true,
		"1.2.3": false, "v1.2": false, "v1.2.3+meta": false, "latest": false} {
		if err := checkVersion(v); (err == nil) != ok {
			t.Errorf("checkVersion(%q) = %v", v, err)
		}
	}
}
