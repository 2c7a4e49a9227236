package metrics

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// registeredMetrics returns every fifoq metric a Registry can hold, by
// name, with its variable labels: each method that registers metrics is
// called once. It fails the test if Registry has an exported method this
// function does not know, so that a new metric cannot escape the check.
func registeredMetrics(t *testing.T) map[string][]string {
	t.Helper()
	r := New()
	registers := map[string]func(){
		"WatchServer": func() {
			src := &fakeServer{}
			if err := r.WatchServer(src.source()); err != nil {
				t.Fatal(err)
			}
		},
		"LogObserver": func() { r.LogObserver() },
		"WatchMemory": func() {
			src := MemorySource{Budget: 1, Live: func() int64 { return 0 }, Refusing: func() bool { return false }}
			if err := r.WatchMemory(src); err != nil {
				t.Fatal(err)
			}
		},
		"WatchCluster": func() {
			if err := r.WatchCluster(func() ClusterFigures { return ClusterFigures{Role: "Leader", LastContact: time.Now()} }); err != nil {
				t.Fatal(err)
			}
		},
		"WatchShards": func() {
			if err := r.WatchShards(func() []ShardFigures { return []ShardFigures{{Shard: 1, Role: "Leader"}} }); err != nil {
				t.Fatal(err)
			}
		},
		"ObserveForward": func() { r.ObserveForward() },
	}
	registersNothing := []string{"Handler", "ObserveRequest", "WritesRefused", "QueueMoved"}
	typ := reflect.TypeOf(r)
	for i := range typ.NumMethod() {
		name := typ.Method(i).Name
		if _, ok := registers[name]; !ok && !slices.Contains(registersNothing, name) {
			t.Fatalf("Registry.%s is new: add it to registeredMetrics, which lists the metrics docs/metrics.md must name", name)
		}
	}
	for _, register := range registers {
		register()
	}
	ch := make(chan *prometheus.Desc, 256)
	go func() { r.reg.Describe(ch); close(ch) }()
	descName := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	out := map[string][]string{}
	for d := range ch {
		m := descName.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		if strings.HasPrefix(m[1], namespace+"_") {
			out[m[1]] = strings.FieldsFunc(m[2], func(r rune) bool { return r == ',' })
		}
	}
	return out
}

// labelValues are the values of the labels that take a fixed set.
var labelValues = map[string][]string{
	"role":   clusterRoles,
	"reason": {RefusedMemory, RefusedDisk},
	"from":   {"spare", "allocated"},
}

// metricRef matches a metric named in the docs, with its labels if given.
var metricRef = regexp.MustCompile(`\bfifoq_[a-z0-9_]*[a-z0-9]\b(\{[^}]*\})?`)

// TestDocsListEveryMetric keeps docs/metrics.md true: it names every
// metric the server registers, and the documentation names no metric, no
// label and no fixed label value that does not exist.
func TestDocsListEveryMetric(t *testing.T) {
	metrics := registeredMetrics(t)
	if len(metrics) < 30 {
		t.Fatalf("only %d metrics registered: the test does not register them all", len(metrics))
	}
	root := filepath.Join("..", "..")
	paths, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	paths = append(paths, filepath.Join(root, "README.md"))
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		name := filepath.Base(path)
		if name == "metrics.md" {
			for m := range metrics {
				if !regexp.MustCompile(`\b` + m + `\b`).MatchString(text) {
					t.Errorf("docs/metrics.md does not name %s", m)
				}
			}
		}
		if name == "benchmarks.md" {
			continue // history: names metrics as they were
		}
		for _, ref := range metricRef.FindAllStringSubmatch(text, -1) {
			checkMetricRef(t, name, ref[0], ref[1], metrics)
		}
	}
}

// checkMetricRef checks one metric named in a document: its name (a
// histogram's _bucket, _sum and _count series included), its labels and
// the fixed values given them.
func checkMetricRef(t *testing.T, doc, ref, labels string, metrics map[string][]string) {
	t.Helper()
	name := strings.TrimSuffix(ref, labels)
	if name == "fifoq_faults" {
		return // the build tag of the fault-injection build
	}
	known, ok := metrics[name]
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, cut := strings.CutSuffix(name, suffix); !ok && cut {
			known, ok = metrics[base]
			if suffix == "_bucket" {
				known = append(slices.Clone(known), "le")
			}
		}
	}
	if !ok {
		t.Errorf("%s names %s, which the server does not register", doc, name)
		return
	}
	for _, pair := range strings.Split(strings.Trim(labels, "{}"), ",") {
		label, value, hasValue := strings.Cut(strings.TrimSpace(pair), "=")
		label = strings.TrimSuffix(label, "!")
		if label == "" {
			continue
		}
		if !slices.Contains(known, label) {
			t.Errorf("%s: %s has no label %q (it has %v)", doc, ref, label, known)
			continue
		}
		value = strings.Trim(value, `"~`)
		if fixed, ok := labelValues[label]; ok && hasValue && !strings.HasPrefix(value, "(") && !slices.Contains(fixed, value) {
			t.Errorf("%s: %s: label %s is never %q (it is one of %v)", doc, ref, label, value, fixed)
		}
	}
}
