package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// schemaNode is a node of values.schema.json.
type schemaNode struct {
	Properties map[string]*schemaNode `json:"properties"`
}

// schemaLeaves returns the dotted paths of the schema's values: those
// without properties of their own (a free-form map such as resources is
// one value).
func schemaLeaves(prefix string, n *schemaNode, out *[]string) {
	for name, child := range n.Properties {
		path := strings.TrimPrefix(prefix+"."+name, ".")
		if path == "global" {
			continue // Helm's, in every chart's values
		}
		if len(child.Properties) == 0 {
			*out = append(*out, path)
			continue
		}
		schemaLeaves(path, child, out)
	}
}

// has reports whether the values tree m holds path.
func has(m map[string]any, path string) bool {
	head, rest, nested := strings.Cut(path, ".")
	v, ok := m[head]
	if !ok || !nested {
		return ok
	}
	sub, _ := v.(map[string]any)
	return has(sub, rest)
}

// codeSpan matches an inline code span.
var codeSpan = regexp.MustCompile("`([^`]+)`")

// TestReadmeNamesEveryValue checks that the chart's README.md table names
// every value of values.schema.json and no other, and that values.yaml
// gives each a default (helm lint checks values.yaml against the schema,
// which refuses values it does not know).
func TestReadmeNamesEveryValue(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir(), "values.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var root schemaNode
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	var leaves []string
	schemaLeaves("", &root, &leaves)
	slices.Sort(leaves)
	b, err = os.ReadFile(filepath.Join(chartDir(), "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(b, &defaults); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(filepath.Join(chartDir(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, table, _ := strings.Cut(string(readme), "\n## Values\n")
	named := map[string]bool{}
	for _, line := range strings.Split(table, "\n") {
		if cells := strings.Split(line, "|"); strings.HasPrefix(line, "| `") && len(cells) > 2 {
			for _, m := range codeSpan.FindAllStringSubmatch(cells[1], -1) {
				named[m[1]] = true
			}
		}
	}
	for _, leaf := range leaves {
		if !named[leaf] {
			t.Errorf("README.md's Values table does not name %s", leaf)
		}
		if !has(defaults, leaf) {
			t.Errorf("values.yaml has no default for %s", leaf)
		}
	}
	for name := range named {
		if !slices.Contains(leaves, name) {
			t.Errorf("README.md's Values table names %s, which values.schema.json does not have", name)
		}
	}
	if len(leaves) < 40 {
		t.Fatalf("only %d values found in the schema: the walk is broken", len(leaves))
	}
}
