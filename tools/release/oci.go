package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The image is written as an OCI image layout (github.com/opencontainers/
// image-spec, image-layout.md): oci-layout, index.json and blobs/sha256/.
// index.json names, by the tag VERSION, one image index whose manifests
// are the linux images, so that `skopeo copy --all oci:DIR/oci:VERSION
// docker://...` pushes the multi-platform image and a runtime picks its
// own platform. Each image has two gzip'd layers: the base (users,
// groups, CA certificates, the volume's directory), the same bytes for
// every platform and so stored once, and the binary.

const (
	mediaIndex    = "application/vnd.oci.image.index.v1+json"
	mediaManifest = "application/vnd.oci.image.manifest.v1+json"
	mediaConfig   = "application/vnd.oci.image.config.v1+json"
	mediaLayer    = "application/vnd.oci.image.layer.v1.tar+gzip"

	// imageName is the local name docker and podman give the loaded image,
	// as `docker build -t fifoq` does.
	imageName = "fifoq"
	// imageFiles holds the image's /etc/passwd and /etc/group, which the
	// Dockerfile copies too.
	imageFiles = "packaging/image"
)

type ociDescriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Platform    *ociPlatform      `json:"platform,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type ociPlatform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type ociIndex struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Manifests     []ociDescriptor   `json:"manifests"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type ociManifest struct {
	SchemaVersion int               `json:"schemaVersion"`
	MediaType     string            `json:"mediaType"`
	Config        ociDescriptor     `json:"config"`
	Layers        []ociDescriptor   `json:"layers"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

type ociImageConfig struct {
	Created      string       `json:"created"`
	Architecture string       `json:"architecture"`
	OS           string       `json:"os"`
	Variant      string       `json:"variant,omitempty"`
	Config       ociRunConfig `json:"config"`
	RootFS       ociRootFS    `json:"rootfs"`
	History      []ociHistory `json:"history"`
}

// ociRunConfig is the image config's "config". Healthcheck is not in the
// OCI specification: it is Docker's extension, written as BuildKit writes
// it into OCI images; Docker honours it, and tools that do not know it
// ignore it, as the specification asks of unknown fields.
type ociRunConfig struct {
	User         string              `json:"User,omitempty"`
	ExposedPorts map[string]struct{} `json:"ExposedPorts,omitempty"`
	Env          []string            `json:"Env,omitempty"`
	Entrypoint   []string            `json:"Entrypoint,omitempty"`
	Cmd          []string            `json:"Cmd,omitempty"`
	Volumes      map[string]struct{} `json:"Volumes,omitempty"`
	WorkingDir   string              `json:"WorkingDir,omitempty"`
	Labels       map[string]string   `json:"Labels,omitempty"`
	StopSignal   string              `json:"StopSignal,omitempty"`
	Healthcheck  *healthcheck        `json:"Healthcheck,omitempty"`
}

type ociRootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

type ociHistory struct {
	Created   string `json:"created"`
	CreatedBy string `json:"created_by"`
	Comment   string `json:"comment,omitempty"`
}

// defaultPath is the PATH BuildKit gives an image that sets none.
const defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// layout is an OCI image layout being written.
type layout struct {
	dir   string
	blobs map[string][]byte // by digest, for the tar
}

// put stores data as a blob and describes it.
func (l *layout) put(mediaType string, data []byte) (ociDescriptor, error) {
	sum := sha256.Sum256(data)
	hexsum := hex.EncodeToString(sum[:])
	d := ociDescriptor{MediaType: mediaType, Digest: "sha256:" + hexsum, Size: int64(len(data))}
	if _, ok := l.blobs[d.Digest]; ok {
		return d, nil
	}
	l.blobs[d.Digest] = data
	return d, os.WriteFile(filepath.Join(l.dir, "blobs", "sha256", hexsum), data, 0o644)
}

// putJSON stores v, encoded, as a blob.
func (l *layout) putJSON(mediaType string, v any) (ociDescriptor, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return ociDescriptor{}, err
	}
	return l.put(mediaType, data)
}

// putLayer stores files as a gzip'd tar layer, and returns its descriptor
// and its diff id (the digest of the tar before compression).
func (l *layout) putLayer(r *releaser, files []file) (ociDescriptor, string, error) {
	t, err := tarBytes(files, r.repo.Time)
	if err != nil {
		return ociDescriptor{}, "", err
	}
	sum := sha256.Sum256(t)
	z, err := gzipBytes(t)
	if err != nil {
		return ociDescriptor{}, "", err
	}
	d, err := l.put(mediaLayer, z)
	return d, "sha256:" + hex.EncodeToString(sum[:]), err
}

// labels are the image's OCI annotations, also its config's labels.
func (r *releaser) labels() map[string]string {
	return map[string]string{
		"org.opencontainers.image.title":       "fifoq",
		"org.opencontainers.image.description": "A server that speaks the Amazon SQS API, FIFO queues first",
		"org.opencontainers.image.version":     r.opts.version,
		"org.opencontainers.image.revision":    r.commit,
		"org.opencontainers.image.created":     r.repo.Time.Format("2006-01-02T15:04:05Z"),
		"org.opencontainers.image.source":      "https://github.com/fifoq/fifoq",
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
}

// image writes the OCI layout and its tar.
func (r *releaser) image() error {
	var plats []platform
	for _, p := range r.opts.platforms {
		if p.OS == "linux" {
			plats = append(plats, p)
		}
	}
	if len(plats) == 0 {
		r.opts.log("no linux platform built: no image")
		return nil
	}
	spec, err := readDockerfile(filepath.Join(r.repo.Root, "Dockerfile"))
	if err != nil {
		return err
	}
	base, err := r.baseFiles(spec)
	if err != nil {
		return err
	}
	l := &layout{dir: filepath.Join(r.opts.out, "oci"), blobs: map[string][]byte{}}
	if err := os.MkdirAll(filepath.Join(l.dir, "blobs", "sha256"), 0o755); err != nil {
		return err
	}
	baseDesc, baseDiff, err := l.putLayer(r, base.files)
	if err != nil {
		return err
	}
	var manifests []ociDescriptor
	var docker []dockerArchiveItem
	for _, p := range plats {
		bin := file{name: strings.TrimPrefix(spec.Entrypoint[0], "/"), mode: 0o755, src: r.bins[p]}
		binDesc, binDiff, err := l.putLayer(r, []file{bin})
		if err != nil {
			return err
		}
		cfg := r.imageConfig(spec, p, []string{baseDiff, binDiff}, base.comment, spec.Entrypoint[0])
		cfgDesc, err := l.putJSON(mediaConfig, cfg)
		if err != nil {
			return err
		}
		m, err := l.putJSON(mediaManifest, ociManifest{SchemaVersion: 2, MediaType: mediaManifest,
			Config: cfgDesc, Layers: []ociDescriptor{baseDesc, binDesc}, Annotations: r.labels()})
		if err != nil {
			return err
		}
		m.Platform = &ociPlatform{Architecture: cfg.Architecture, OS: cfg.OS, Variant: cfg.Variant}
		manifests = append(manifests, m)
		docker = append(docker, dockerArchiveItem{Config: blobPath(cfgDesc), Layers: []string{blobPath(baseDesc), blobPath(binDesc)}})
	}
	idx, err := l.putJSON(mediaIndex, ociIndex{SchemaVersion: 2, MediaType: mediaIndex, Manifests: manifests, Annotations: r.labels()})
	if err != nil {
		return err
	}
	// ref.name is the tag skopeo's and umoci's oci:DIR:TAG name; Docker's
	// containerd image store and containerd name the loaded image by
	// io.containerd.image.name.
	idx.Annotations = map[string]string{
		"org.opencontainers.image.ref.name": r.opts.version,
		"io.containerd.image.name":          "docker.io/library/" + imageName + ":" + r.opts.version,
	}
	top, err := json.Marshal(ociIndex{SchemaVersion: 2, MediaType: mediaIndex, Manifests: []ociDescriptor{idx}})
	if err != nil {
		return err
	}
	layoutFile := []byte(`{"imageLayoutVersion":"1.0.0"}`)
	if err := os.WriteFile(filepath.Join(l.dir, "index.json"), top, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(l.dir, "oci-layout"), layoutFile, 0o644); err != nil {
		return err
	}
	r.opts.log("wrote oci/: %s tagged %s, %s", idx.Digest, r.opts.version, platformList(plats))
	return r.imageTar(l, top, layoutFile, docker[0])
}

// baseLayer is the image's files other than the binary.
type baseLayer struct {
	files   []file
	comment string // where the CA certificates came from
}

// baseFiles are the files of the image's first layer: /etc/passwd and
// /etc/group naming the user the image runs as, so that tools show a
// name, the CA certificates, and each volume's directory owned by that
// user, so that a fresh volume is writable by the server.
func (r *releaser) baseFiles(spec *imageSpec) (*baseLayer, error) {
	uid, gid, err := spec.owner()
	if err != nil {
		return nil, err
	}
	var files []file
	for _, name := range []string{"passwd", "group"} {
		data, err := os.ReadFile(filepath.Join(r.repo.Root, imageFiles, name))
		if err != nil {
			return nil, err
		}
		id := uid
		if name == "group" {
			id = gid
		}
		if !namesID(data, id) {
			return nil, fmt.Errorf("%s/%s has no entry for the id %d of the Dockerfile's USER", imageFiles, name, id)
		}
		files = append(files, file{name: "etc/" + name, mode: 0o644, data: data})
	}
	ca, err := readCABundle(r.opts.caCerts)
	if err != nil {
		return nil, err
	}
	files = append(files, file{name: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, data: ca.pem})
	for _, v := range spec.Volumes {
		files = append(files, file{name: strings.Trim(v, "/"), mode: fs.ModeDir | 0o755, uid: uid, gid: gid})
	}
	return &baseLayer{files: files, comment: ca.source}, nil
}

// namesID reports whether a passwd or group file has an entry whose
// third field is id.
func namesID(data []byte, id int) bool {
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, ":")
		if len(f) >= 3 && f[2] == fmt.Sprint(id) {
			return true
		}
	}
	return false
}

// imageConfig is the image config for p: the Dockerfile's final stage's
// settings, the layers' diff ids and a history that says what each layer
// holds.
func (r *releaser) imageConfig(spec *imageSpec, p platform, diffIDs []string, caComment, binPath string) ociImageConfig {
	created := r.repo.Time.Format("2006-01-02T15:04:05Z")
	env := spec.Env
	hasPath := false
	for _, kv := range env {
		hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
	}
	if !hasPath {
		env = append([]string{defaultPath}, env...)
	}
	run := ociRunConfig{User: spec.User, Env: env, Entrypoint: spec.Entrypoint, Cmd: spec.Cmd,
		WorkingDir: spec.WorkingDir, Labels: r.labels(), StopSignal: spec.StopSignal, Healthcheck: spec.Healthcheck}
	if len(spec.Expose) > 0 {
		run.ExposedPorts = map[string]struct{}{}
		for _, port := range spec.Expose {
			run.ExposedPorts[port] = struct{}{}
		}
	}
	if len(spec.Volumes) > 0 {
		run.Volumes = map[string]struct{}{}
		for _, v := range spec.Volumes {
			run.Volumes[v] = struct{}{}
		}
	}
	cfg := ociImageConfig{Created: created, Architecture: p.Arch, OS: p.OS, Config: run,
		RootFS: ociRootFS{Type: "layers", DiffIDs: diffIDs},
		History: []ociHistory{
			{Created: created, CreatedBy: "fifoq release: /etc/passwd, /etc/group, /etc/ssl/certs/ca-certificates.crt, " + strings.Join(spec.Volumes, ", "), Comment: caComment},
			{Created: created, CreatedBy: "fifoq release: " + binPath + " " + r.opts.version + " (" + r.commit + ")"},
		}}
	if p.Arch == "arm64" {
		cfg.Variant = "v8" // as Docker and the OCI image index conventionally name 64-bit ARM
	}
	return cfg
}

// dockerArchiveItem is an entry of a docker-archive's manifest.json, the
// format Docker's classic image store loads (it reads no index.json).
type dockerArchiveItem struct {
	Config   string
	RepoTags []string
	Layers   []string
}

func blobPath(d ociDescriptor) string {
	return "blobs/sha256/" + strings.TrimPrefix(d.Digest, "sha256:")
}

// imageTar writes fifoq-VERSION-oci.tar: the OCI layout as one tar, which
// `docker load` (Docker 25 and later with the containerd image store),
// `podman load` and skopeo's oci-archive: transport read, with a
// manifest.json for Docker's classic image store beside it, as
// `docker save` writes since Docker 25. A docker-archive cannot hold more
// than one platform under one tag, so manifest.json names the first
// platform's image (linux/amd64).
func (r *releaser) imageTar(l *layout, index, layoutFile []byte, item dockerArchiveItem) error {
	item.RepoTags = []string{imageName + ":" + r.opts.version}
	dm, err := json.Marshal([]dockerArchiveItem{item})
	if err != nil {
		return err
	}
	files := []file{
		{name: "index.json", mode: 0o644, data: index},
		{name: "oci-layout", mode: 0o644, data: layoutFile},
		{name: "manifest.json", mode: 0o644, data: dm},
	}
	digests := make([]string, 0, len(l.blobs))
	for d := range l.blobs {
		digests = append(digests, d)
	}
	sort.Strings(digests)
	for _, d := range digests {
		files = append(files, file{name: "blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), mode: 0o644, data: l.blobs[d]})
	}
	name := "fifoq-" + r.opts.version + "-oci.tar"
	if err := writeFile(filepath.Join(r.opts.out, name), func(w io.Writer) error { return writeTar(w, files, r.repo.Time) }); err != nil {
		return err
	}
	r.opts.log("wrote %s", name)
	return nil
}

func platformList(ps []platform) string {
	var b bytes.Buffer
	for i, p := range ps {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}
