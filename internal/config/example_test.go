package config

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fileKeys returns every key the config file takes, as a dotted path
// from the top ("log.json", "queues.dead_letter.queue"; a list's entries
// add no step), and the keys whose values are free-form mappings
// (attribute names, tags, a policy), whose own keys are not the file's.
func fileKeys() (keys []string, freeForm []string) {
	for _, s := range Settings {
		keys = append(keys, s.Key)
		for prefix := s.Key; strings.Contains(prefix, "."); {
			prefix = prefix[:strings.LastIndex(prefix, ".")]
			keys = append(keys, prefix)
		}
	}
	keys = append(keys, entries...)
	keys = append(keys, "credentials")
	for _, k := range accessKeyKeys {
		keys = append(keys, "credentials.keys."+k)
	}
	for _, k := range queueKeys {
		keys = append(keys, "queues."+k)
	}
	for _, k := range deadLetterKeys {
		keys = append(keys, "queues.dead_letter."+k)
	}
	slices.Sort(keys)
	return slices.Compact(keys), []string{"queues.attributes", "queues.tags", "queues.policy"}
}

// exampleKey matches a line of a YAML mapping's key, with the indentation
// and list dash before it.
var exampleKey = regexp.MustCompile(`^(\s*)(- )?([a-z_]+):(\s|$)`)

// exampleKeys returns the keys fifoq.example.yaml shows, set or in a
// comment ("# data_dir: ..."), as dotted paths like fileKeys's. A line
// commented out is read as if its "# " were not there; prose comments do
// not look like keys (they are not a lowercase word and a colon).
func exampleKeys(text string, freeForm []string) map[string]int {
	type level struct {
		indent int
		path   string
	}
	var stack []level
	out := map[string]int{}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if rest, ok := strings.CutPrefix(trimmed, "#"); ok {
			// A commented line keeps its place: its indentation is what
			// comes before the "# " and what follows it.
			line = line[:len(line)-len(trimmed)] + strings.TrimPrefix(rest, " ")
			if inner := strings.TrimLeft(line, " "); strings.HasPrefix(inner, "# ") {
				line = line[:len(line)-len(inner)] + strings.TrimPrefix(inner, "# ")
			}
		}
		m := exampleKey.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		indent := len(m[1]) + len(m[2])
		for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
			stack = stack[:len(stack)-1]
		}
		path := m[3]
		if len(stack) > 0 {
			parent := stack[len(stack)-1].path
			if slices.Contains(freeForm, parent) || strings.HasPrefix(parent, "-") {
				stack = append(stack, level{indent, "-"})
				continue
			}
			path = parent + "." + m[3]
		}
		stack = append(stack, level{indent, path})
		out[path] = i + 1
	}
	return out
}

// TestExampleShowsEveryKey keeps fifoq.example.yaml true to its word, that
// it shows every key: each key the file takes appears in it (set, or in a
// comment), and each key it shows is one the file takes.
func TestExampleShowsEveryKey(t *testing.T) {
	b, err := os.ReadFile(examplePath(t))
	if err != nil {
		t.Fatal(err)
	}
	keys, freeForm := fileKeys()
	shown := exampleKeys(string(b), freeForm)
	for _, k := range keys {
		if _, ok := shown[k]; !ok {
			t.Errorf("fifoq.example.yaml does not show the key %s", k)
		}
	}
	var unknown []string
	for k, line := range shown {
		if !slices.Contains(keys, k) {
			unknown = append(unknown, k+" (line "+itoa(line)+")")
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		t.Errorf("fifoq.example.yaml shows %s, which is no key of the config file", k)
	}
	if len(shown) < 20 {
		t.Fatalf("only %d keys read from the example: the scanner is broken", len(shown))
	}
}
