package main

import (
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The SBOM is CycloneDX 1.5 in JSON (cyclonedx.org/docs/1.5/json), one per
// binary: the platforms' binaries are linked from different sets of
// modules (golang.org/x/sys's Windows code, mattn/go-isatty's, ...), and
// an SBOM lists what is in the thing it describes. The modules come from
// the build information the go command writes into every binary (what
// `go version -m` prints), so they are exactly those linked in, at the
// versions linked.

type cdxBOM struct {
	BOMFormat    string          `json:"bomFormat"`
	SpecVersion  string          `json:"specVersion"`
	SerialNumber string          `json:"serialNumber"`
	Version      int             `json:"version"`
	Metadata     cdxMetadata     `json:"metadata"`
	Components   []cdxComponent  `json:"components"`
	Dependencies []cdxDependency `json:"dependencies"`
}

type cdxMetadata struct {
	Timestamp string       `json:"timestamp"`
	Tools     cdxTools     `json:"tools"`
	Component cdxComponent `json:"component"`
}

type cdxTools struct {
	Components []cdxComponent `json:"components"`
}

type cdxComponent struct {
	Type        string        `json:"type"`
	BOMRef      string        `json:"bom-ref,omitempty"`
	Name        string        `json:"name"`
	Version     string        `json:"version,omitempty"`
	Description string        `json:"description,omitempty"`
	Licenses    []cdxLicense  `json:"licenses,omitempty"`
	PURL        string        `json:"purl,omitempty"`
	Hashes      []cdxHash     `json:"hashes,omitempty"`
	Pedigree    *cdxPedigree  `json:"pedigree,omitempty"`
	Properties  []cdxProperty `json:"properties,omitempty"`
}

type cdxLicense struct {
	License struct {
		ID string `json:"id"`
	} `json:"license"`
}

type cdxHash struct {
	Alg     string `json:"alg"`
	Content string `json:"content"`
}

type cdxPedigree struct {
	Patches []cdxPatch `json:"patches"`
	Notes   string     `json:"notes"`
}

type cdxPatch struct {
	Type     string     `json:"type"`
	Resolves []cdxIssue `json:"resolves"`
}

type cdxIssue struct {
	Type   string `json:"type"`
	ID     string `json:"id"`
	Source struct {
		Name string `json:"name"`
		URL  string `json:"url"`
	} `json:"source"`
}

type cdxProperty struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

type cdxDependency struct {
	Ref       string   `json:"ref"`
	DependsOn []string `json:"dependsOn"`
}

func license(id string) []cdxLicense {
	l := cdxLicense{}
	l.License.ID = id
	return []cdxLicense{l}
}

// sboms writes each binary's SBOM beside its archive.
func (r *releaser) sboms() error {
	rw, err := raftWALVersion(r.repo.Root)
	if err != nil {
		return err
	}
	for _, p := range r.opts.platforms {
		bom, err := r.sbom(p, rw)
		if err != nil {
			return err
		}
		data, err := json.MarshalIndent(bom, "", "  ")
		if err != nil {
			return err
		}
		name := r.baseName(p) + ".cdx.json"
		if err := os.WriteFile(filepath.Join(r.opts.out, name), append(data, '\n'), 0o644); err != nil {
			return err
		}
		r.opts.log("wrote %s: %d components", name, len(bom.Components))
	}
	return nil
}

// sbom describes the binary built for p.
func (r *releaser) sbom(p platform, raftWAL string) (*cdxBOM, error) {
	bin := r.bins[p]
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		return nil, fmt.Errorf("build information of %s: %w", bin, err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	app := cdxComponent{
		Type: "application", Name: info.Main.Path, Version: r.opts.version,
		Description: "fifoq, a server that speaks the Amazon SQS API, built for " + p.String(),
		Licenses:    license("Apache-2.0"),
		PURL:        purl(info.Main.Path, r.opts.version),
		Hashes:      []cdxHash{{Alg: "SHA-256", Content: hex.EncodeToString(sum[:])}},
		Properties:  []cdxProperty{{"fifoq:commit", r.commit}, {"go:version", info.GoVersion}},
	}
	app.BOMRef = app.PURL
	for _, s := range info.Settings {
		app.Properties = append(app.Properties, cdxProperty{"go:build:" + s.Key, s.Value})
	}
	bom := &cdxBOM{
		BOMFormat: "CycloneDX", SpecVersion: "1.5", Version: 1,
		SerialNumber: serialNumber(r.opts.version, r.commit, p),
		Metadata: cdxMetadata{
			Timestamp: r.repo.Time.Format("2006-01-02T15:04:05Z"),
			Tools:     cdxTools{Components: []cdxComponent{{Type: "application", Name: "github.com/fifoq/fifoq/tools/release"}}},
			Component: app,
		},
	}
	add := func(c cdxComponent) {
		c.BOMRef = c.PURL
		bom.Components = append(bom.Components, c)
	}
	for _, d := range info.Deps {
		m := d
		if d.Replace != nil {
			m = d.Replace
		}
		c := cdxComponent{Type: "library", Name: m.Path, Version: m.Version, PURL: purl(m.Path, m.Version)}
		if m.Sum != "" {
			// The go.sum hash (h1: a SHA-256 over the module's files) is not
			// one of CycloneDX's hash algorithms, so it goes as a property.
			c.Properties = append(c.Properties, cdxProperty{"go:sum", m.Sum})
		}
		if d.Replace != nil {
			c.Properties = append(c.Properties, cdxProperty{"go:replaces", d.Path + "@" + d.Version})
		}
		add(c)
	}
	// raft-wal is not a module of the binary, it is part of fifoq's own;
	// listed as what it is (an upstream release, patched), so that a
	// scanner matching advisories by package finds it.
	rwc := cdxComponent{Type: "library", Name: "github.com/hashicorp/raft-wal", Version: raftWAL,
		Licenses: license("MPL-2.0"), PURL: purl("github.com/hashicorp/raft-wal", raftWAL),
		Pedigree: &cdxPedigree{
			Patches: []cdxPatch{{Type: "backport", Resolves: []cdxIssue{raftWALIssue()}}},
			Notes:   "Copied into " + info.Main.Path + " as internal/third_party/raftwal, with upstream's fix of its issue #31 applied (internal/third_party/raftwal/FIFOQ-PATCH.md).",
		}}
	add(rwc)
	// The Go standard library, as Syft names it, so that Go's own
	// advisories are matched against the release the binary was built with.
	add(cdxComponent{Type: "library", Name: "stdlib", Version: info.GoVersion,
		Licenses: license("BSD-3-Clause"), PURL: "pkg:golang/stdlib@" + strings.TrimPrefix(info.GoVersion, "go")})
	deps := cdxDependency{Ref: app.BOMRef, DependsOn: []string{}}
	for _, c := range bom.Components {
		deps.DependsOn = append(deps.DependsOn, c.BOMRef)
	}
	bom.Dependencies = []cdxDependency{deps}
	return bom, nil
}

func raftWALIssue() cdxIssue {
	i := cdxIssue{Type: "defect", ID: "31"}
	i.Source.Name = "GitHub"
	i.Source.URL = "https://github.com/hashicorp/raft-wal/issues/31"
	return i
}

// raftWALHeading is the first line of internal/third_party/raftwal/FIFOQ-PATCH.md,
// which names the upstream release the copy is of.
var raftWALHeading = regexp.MustCompile(`^# raft-wal (v[0-9]+\.[0-9]+\.[0-9]+\S*), patched`)

// raftWALVersion reads which raft-wal release internal/third_party/raftwal is.
func raftWALVersion(root string) (string, error) {
	name := filepath.Join(root, "internal", "third_party", "raftwal", "FIFOQ-PATCH.md")
	data, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	first, _, _ := strings.Cut(string(data), "\n")
	m := raftWALHeading.FindStringSubmatch(first)
	if m == nil {
		return "", fmt.Errorf("%s: the first line does not say which raft-wal release it is (%q)", name, first)
	}
	return m[1], nil
}

// purl is a Go module's package URL (github.com/package-url/purl-spec,
// type golang): the module path's segments and the version, each
// percent-encoded.
func purl(path, version string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		segs[i] = purlEscape(s)
	}
	return "pkg:golang/" + strings.Join(segs, "/") + "@" + purlEscape(version)
}

// purlEscape percent-encodes every byte but the unreserved characters of
// RFC 3986 (so a version's "+incompatible" becomes "%2Bincompatible").
func purlEscape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '-', c == '_', c == '~':
			b.WriteByte(c)
		default:
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// serialNumber is the SBOM's URN: a UUID made from what the SBOM
// describes rather than drawn at random, so that the same release gives
// the same file. It has the form of a version 5 (name-based) UUID.
func serialNumber(version, commit string, p platform) string {
	h := sha256.Sum256([]byte("fifoq release sbom\x00" + version + "\x00" + commit + "\x00" + p.String()))
	u := h[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	x := hex.EncodeToString(u)
	return "urn:uuid:" + x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}
