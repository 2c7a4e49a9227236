package main

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/fifoq/fifoq/internal/config"
)

// The tests in this file keep the documentation true of the binary: every
// relative link resolves, every command, flag and environment variable
// the binary has is named in README.md or docs/, and every one they name
// exists. docs/metrics.md is checked against the registered metrics in
// internal/metrics, and fifoq.example.yaml against the config file's keys
// in internal/config.

// repoRoot is the repository's root, from this package's directory.
const repoRoot = "../.."

// mdDoc is one Markdown file, split into what a reader sees as prose and
// what is code.
type mdDoc struct {
	path  string   // relative to the repository's root, with slashes
	lines []string // every line
	// fenced[i] tells that lines[i] is inside a fenced code block (the
	// fences included).
	fenced []bool
}

// docFiles reads README.md, CHANGELOG.md and every Markdown file under
// docs/ and examples/.
func docFiles(t *testing.T) []*mdDoc {
	t.Helper()
	paths := []string{"README.md", "CHANGELOG.md"}
	for _, dir := range []string{"docs", "examples"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			if !d.IsDir() && strings.HasSuffix(path, ".md") {
				rel, _ := filepath.Rel(repoRoot, path)
				paths = append(paths, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	var docs []*mdDoc
	for _, p := range paths {
		docs = append(docs, readDoc(t, p))
	}
	return docs
}

// readDoc reads the Markdown file at path (relative to the root).
func readDoc(t *testing.T, path string) *mdDoc {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(path)))
	if err != nil {
		t.Fatal(err)
	}
	d := &mdDoc{path: path, lines: strings.Split(string(b), "\n")}
	fence := ""
	for _, line := range d.lines {
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			fence = trimmed[:3]
			d.fenced = append(d.fenced, true)
		case fence != "" && strings.HasPrefix(trimmed, fence):
			fence = ""
			d.fenced = append(d.fenced, true)
		default:
			d.fenced = append(d.fenced, fence != "")
		}
	}
	return d
}

// inlineCode matches a code span.
var inlineCode = regexp.MustCompile("(`+)(.+?)`+")

// prose returns line i without its code spans ("" inside a fence).
func (d *mdDoc) prose(i int) string {
	if d.fenced[i] {
		return ""
	}
	return inlineCode.ReplaceAllString(d.lines[i], "")
}

// code returns the code of the document: each fenced block's lines, with
// a shell line continued by a backslash joined to the next, and each code
// span.
func (d *mdDoc) code() []string {
	var out []string
	cont := ""
	for i, line := range d.lines {
		if !d.fenced[i] {
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				out = append(out, m[2])
			}
			continue
		}
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		out = append(out, cont+line)
		cont = ""
	}
	return out
}

// heading matches an ATX heading.
var heading = regexp.MustCompile(`^(#{1,6})\s+(.*?)\s*#*\s*$`)

// headings returns the document's headings: level and text, by line.
func (d *mdDoc) headings() map[int][2]string {
	out := map[int][2]string{}
	for i, line := range d.lines {
		if d.fenced[i] {
			continue
		}
		if m := heading.FindStringSubmatch(line); m != nil {
			out[i] = [2]string{m[1], m[2]}
		}
	}
	return out
}

var (
	mdLink     = regexp.MustCompile(`!?\[((?:[^\[\]]|\[[^\]]*\])*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)
	htmlTag    = regexp.MustCompile(`<[^>]+>`)
	htmlAnchor = regexp.MustCompile(`<a\s+(?:name|id)="([^"]+)"`)
	refDef     = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*(\S+)`)
)

// anchors returns the fragment ids GitHub gives the document's headings
// (and explicit <a name|id> anchors).
func (d *mdDoc) anchors() map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	lines := make([]int, 0)
	hs := d.headings()
	for i := range hs {
		lines = append(lines, i)
	}
	sort.Ints(lines)
	for _, i := range lines {
		s := slug(hs[i][1])
		id := s
		if n := seen[s]; n > 0 {
			id = s + "-" + strconv.Itoa(n)
		}
		seen[s]++
		out[id] = true
	}
	for i, line := range d.lines {
		if d.fenced[i] {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			out[m[1]] = true
		}
	}
	return out
}

// slug is the id GitHub gives a heading: the rendered text (code spans'
// content, links' text, no HTML), lowercased, every character but
// letters, digits, marks, '_', '-' and ' ' removed, spaces made '-'.
func slug(text string) string {
	text = inlineCode.ReplaceAllString(text, "$2")
	text = mdLink.ReplaceAllString(text, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '_' || r == '-' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.M, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TestDocsLinksResolve checks every relative link of the documentation:
// its file exists, and its #fragment is a heading (or anchor) of that
// file, by GitHub's rules.
func TestDocsLinksResolve(t *testing.T) {
	docs := docFiles(t)
	byPath := map[string]*mdDoc{}
	for _, d := range docs {
		byPath[d.path] = d
	}
	checked := 0
	for _, d := range docs {
		for i := range d.lines {
			var targets []string
			text := d.prose(i)
			for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
				targets = append(targets, m[2])
			}
			if m := refDef.FindStringSubmatch(text); m != nil {
				targets = append(targets, m[1])
			}
			for _, target := range targets {
				if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				if err := checkLink(d, target, byPath); err != "" {
					t.Errorf("%s:%d: link %q: %s", d.path, i+1, target, err)
				}
			}
		}
	}
	if checked < 50 {
		t.Fatalf("only %d relative links found: the scanner is broken", checked)
	}
}

// checkLink returns why target, a link in d, does not resolve ("" if it
// does).
func checkLink(d *mdDoc, target string, byPath map[string]*mdDoc) string {
	file, frag, _ := strings.Cut(target, "#")
	path := d.path
	if file != "" {
		path = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(d.path), file)))
		if strings.HasPrefix(path, "../") {
			return "points outside the repository"
		}
		if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(path))); err != nil {
			return "no such file"
		}
	}
	if frag == "" {
		return ""
	}
	doc, ok := byPath[path]
	if !ok {
		if !strings.HasSuffix(path, ".md") {
			return "a fragment of a file that is not Markdown"
		}
		return "a fragment of a Markdown file the test does not read"
	}
	if !doc.anchors()[frag] {
		return "no heading of " + path + " has the id " + frag
	}
	return ""
}

// TestSlugFollowsGitHub pins slug on headings whose ids GitHub gave.
func TestSlugFollowsGitHub(t *testing.T) {
	for text, want := range map[string]string{
		"The client's ceiling: `fifoq bench --ceiling`": "the-clients-ceiling-fifoq-bench---ceiling",
		"6. Where fifoq deliberately differs from SQS":  "6-where-fifoq-deliberately-differs-from-sqs",
		"Memory budget and refused writes":              "memory-budget-and-refused-writes",
		"Log entry format, version 1":                   "log-entry-format-version-1",
		"Past one leader's machine (design, not built)": "past-one-leaders-machine-design-not-built",
		"`fifoq serve` flags":                           "fifoq-serve-flags",
		"From [LocalStack](https://localstack.cloud)":   "from-localstack",
	} {
		if got := slug(text); got != want {
			t.Errorf("slug(%q) = %q, want %q", text, got, want)
		}
	}
}

// commandDocs is where each command is documented: its section holds a
// table whose first column names each of its flags. fifoq serve's flags
// are the README's table; every other command has a section of
// docs/commands.md headed by its name in code.
func commandSection(t *testing.T, name string) (path string, lines []string) {
	t.Helper()
	path, title := "docs/commands.md", "`fifoq "+name+"`"
	if name == "serve" {
		path, title = "README.md", "`fifoq serve` flags"
	}
	d := readDoc(t, path)
	hs := d.headings()
	start, level := -1, ""
	for i := range d.lines {
		h, ok := hs[i]
		switch {
		case !ok:
		case start < 0 && h[1] == title:
			start, level = i, h[0]
		case start >= 0 && len(h[0]) <= len(level):
			return path, d.lines[start:i]
		}
	}
	if start < 0 {
		t.Fatalf("%s has no section headed %s", path, title)
	}
	return path, d.lines[start:]
}

// flagName matches a flag as the docs write it: --name, in code.
var flagName = regexp.MustCompile("`--([a-z][a-z0-9-]*)")

// TestDocsNameEveryCommandAndFlag checks that every command has its
// section, that each section's table names exactly the command's flags
// (each row's first cell: `--flag VALUE`), and that the section names
// the command's fixed words (fifoq cluster status, ...).
func TestDocsNameEveryCommandAndFlag(t *testing.T) {
	for _, c := range commands {
		path, section := commandSection(t, c.name)
		documented := map[string]bool{}
		for _, line := range section {
			if !strings.HasPrefix(line, "|") {
				continue
			}
			cells := strings.Split(line, "|")
			for _, m := range flagName.FindAllStringSubmatch(cells[1], -1) {
				documented[m[1]] = true
			}
		}
		has := map[string]bool{}
		for _, f := range flagsOf(c) {
			has[f.name] = true
			if !documented[f.name] {
				t.Errorf("%s: the section of fifoq %s does not name its flag --%s in its table", path, c.name, f.name)
			}
		}
		for f := range documented {
			if !has[f] {
				t.Errorf("%s: the section of fifoq %s names --%s, which fifoq %s does not have", path, c.name, f, c.name)
			}
		}
		text := strings.Join(section, "\n")
		for _, w := range c.words {
			if !strings.Contains(text, "fifoq "+c.name+" "+w) {
				t.Errorf("%s: the section of fifoq %s does not name fifoq %s %s", path, c.name, c.name, w)
			}
		}
	}
}

// invocation matches a fifoq command line in code: the program ("fifoq",
// a path to it, or "go run ./cmd/fifoq") where a shell command starts,
// after any VAR=value assignments, then the command's name and the rest of
// the line.
var invocation = regexp.MustCompile(`(?:^|\|\s*|&&\s*|;\s*|\$\(\s*|\(\s*|&\s+|\bexec\s+|\bsudo\s+|\bdo\s+|\bthen\s+)` +
	`(?:[A-Z_][A-Z0-9_]*=\S*\s+)*` +
	`(?:go run (?:\./)?cmd/fifoq|(?:\.{1,2}|~)?/(?:\S*/)?fifoq|fifoq)\s+([a-z][a-z-]*)(.*)`)

// TestDocsNameOnlyRealCommands checks every fifoq command line in the
// documentation's code: its command exists, a cluster, config or
// completion word after it is one the command takes, and every flag on
// the line is one the command has.
func TestDocsNameOnlyRealCommands(t *testing.T) {
	byName := map[string]command{}
	for _, c := range commands {
		byName[c.name] = c
	}
	checked := 0
	for _, d := range docFiles(t) {
		if d.path == "CHANGELOG.md" {
			continue // history: names what was, not what is
		}
		for _, line := range d.code() {
			for _, m := range invocation.FindAllStringSubmatch(line, -1) {
				name, rest := m[1], shellWords(m[2])
				c, ok := byName[name]
				if !ok {
					t.Errorf("%s: %q: fifoq has no command %q", d.path, strings.TrimSpace(m[0]), name)
					continue
				}
				checked++
				has := map[string]bool{"help": true, "h": true}
				for _, f := range flagsOf(c) {
					has[f.name] = true
				}
				if name == "serve" {
					has[config.ConfigFlag] = true
				}
				for i, w := range rest {
					if i == 0 && len(c.words) > 0 && !strings.HasPrefix(w, "-") && w == strings.ToLower(w) {
						// A synopsis may give alternatives: bash|zsh|fish, add/remove.
						for _, alt := range strings.FieldsFunc(w, func(r rune) bool { return r == '|' || r == '/' }) {
							if !slices.Contains(c.words, alt) {
								t.Errorf("%s: %q: fifoq %s takes no word %q", d.path, strings.TrimSpace(m[0]), name, alt)
							}
						}
					}
					if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
						continue
					}
					f, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
					if !has[f] {
						t.Errorf("%s: %q: fifoq %s has no flag --%s", d.path, strings.TrimSpace(m[0]), name, f)
					}
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d fifoq command lines found: the scanner is broken", checked)
	}
}

// shellWords splits the rest of a command line into words, up to the end
// of the command: a pipe, a list operator, a redirection, a comment or a
// closing parenthesis.
func shellWords(s string) []string {
	var out []string
	for _, w := range strings.Fields(s) {
		if strings.ContainsAny(w[:1], "|;&<>#)`") || strings.HasPrefix(w, "2>") {
			break
		}
		w, closed := strings.CutSuffix(w, ")")
		out = append(out, strings.Trim(w, `"'`))
		if closed {
			break
		}
	}
	return out
}

// envName matches a fifoq environment variable.
var envName = regexp.MustCompile(`\bFIFOQ_[A-Z0-9_]*[A-Z0-9]\b`)

// TestDocsNameEveryEnvironmentVariable checks that every environment
// variable the binary reads is named in README.md or docs/, and that
// every FIFOQ_ variable they name is read by fifoq's code, its tests or
// CI. Variables of the tests (FIFOQ_TEST_*, FIFOQ_REQUIRE_*) and of the
// fault-injection build may go unnamed.
func TestDocsNameEveryEnvironmentVariable(t *testing.T) {
	binary, anywhere := codeEnvironment(t)
	named := map[string]string{}
	for _, d := range docFiles(t) {
		if d.path == "CHANGELOG.md" {
			continue
		}
		for _, line := range d.lines {
			for _, v := range envName.FindAllString(line, -1) {
				named[v] = d.path
			}
		}
	}
	for v := range binary {
		if _, ok := named[v]; !ok {
			t.Errorf("fifoq reads %s, which neither README.md nor docs/ names", v)
		}
	}
	for v, path := range named {
		if !anywhere[v] {
			t.Errorf("%s names %s, which nothing in fifoq reads", path, v)
		}
	}
	if len(binary) < 20 {
		t.Fatalf("only %d variables found in the code: the scanner is broken", len(binary))
	}
}

// codeEnvironment returns the FIFOQ_ variables named in Go source: those
// of the binary (non-test files outside test helpers and the fault build),
// and those of any file, CI's script included.
func codeEnvironment(t *testing.T) (binary, anywhere map[string]bool) {
	t.Helper()
	binary, anywhere = map[string]bool{}, map[string]bool{}
	quoted := regexp.MustCompile(`"(FIFOQ_[A-Z0-9_]*[A-Z0-9])"`)
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "third_party" || (strings.HasPrefix(d.Name(), ".") && d.Name() != ".ci" && path != repoRoot)) {
			return filepath.SkipDir
		}
		if d.IsDir() || !(strings.HasSuffix(path, ".go") || strings.HasSuffix(path, ".sh") || filepath.Base(filepath.Dir(path)) == ".ci") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		src := string(b)
		for _, v := range envName.FindAllString(src, -1) {
			anywhere[v] = true
		}
		rel, _ := filepath.Rel(repoRoot, path)
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || strings.HasPrefix(rel, "internal/testenv/") ||
			strings.Contains(src, "//go:build fifoq_faults") {
			return nil
		}
		for _, m := range quoted.FindAllStringSubmatch(src, -1) {
			if !strings.HasPrefix(m[1], "FIFOQ_TEST_") && !strings.HasPrefix(m[1], "FIFOQ_REQUIRE_") {
				binary[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return binary, anywhere
}

var (
	// repoPath matches a code span that is a path of the repository:
	// directories and a file with a known extension.
	repoPath = regexp.MustCompile(`^(?:[\w.-]+/)+[\w.-]+\.(?:go|md|yaml|yml|json|txt|sh)$`)
	// mdWord matches a Markdown file named in prose.
	mdWord = regexp.MustCompile(`\b[\w-]+\.md\b`)
)

// TestDocsNameOnlyRealFiles checks that every repository path the
// documentation names in code (internal/server/health.go,
// clustertest/doc.go, ...) is a file of the tree, read from the root, from
// the document's directory or from internal/, and that every Markdown
// file it names in prose exists somewhere in the tree.
func TestDocsNameOnlyRealFiles(t *testing.T) {
	mdFiles := map[string]bool{}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			mdFiles[d.Name()] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range docFiles(t) {
		if d.path == "CHANGELOG.md" || d.path == "docs/benchmarks.md" {
			continue // history: names files as they were
		}
		for i, line := range d.lines {
			if d.fenced[i] {
				continue
			}
			for _, m := range inlineCode.FindAllStringSubmatch(line, -1) {
				p := m[2]
				if !repoPath.MatchString(p) || strings.HasPrefix(p, "/") {
					continue
				}
				checked++
				found := false
				for _, base := range []string{repoRoot, filepath.Join(repoRoot, filepath.Dir(d.path)), filepath.Join(repoRoot, "internal")} {
					if _, err := os.Stat(filepath.Join(base, filepath.FromSlash(p))); err == nil {
						found = true
					}
				}
				if !found {
					t.Errorf("%s:%d: names %s, which is not a file of the tree", d.path, i+1, p)
				}
			}
			for _, w := range mdWord.FindAllString(mdLink.ReplaceAllString(d.prose(i), "$1"), -1) {
				if !mdFiles[w] {
					t.Errorf("%s:%d: names %s, which is no file of the tree", d.path, i+1, w)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d paths found: the scanner is broken", checked)
	}
}
