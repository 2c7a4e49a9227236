// Package check tests the Helm chart in ../fifoq: every object it renders
// is decoded strictly into the Kubernetes API's own Go types (1.32) and
// checked for what a decoder cannot see, and the StatefulSet's pods are
// started as real fifoq processes on loopback addresses, as a kubelet
// would start them, to form a cluster and to grow it.
//
// It is a module of its own so that fifoq's module does not depend on
// the Kubernetes API; deploy/helm/check.sh builds helm and fifoq and runs
// it with CHECK_HELM and CHECK_FIFOQ naming them.
package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// chartDir is the chart: ../fifoq, or $CHECK_CHART (a changed copy, to
// see that the checks catch the change).
func chartDir() string {
	if d := os.Getenv("CHECK_CHART"); d != "" {
		return d
	}
	return "../fifoq"
}

// kubeVersion is the Kubernetes version the chart is rendered for: the
// one whose API types (k8s.io/api v0.32) check the objects. helm built
// with go install would otherwise assume 1.20, below the chart's
// kubeVersion.
const kubeVersion = "1.32.0"

// namespace and release are those of every rendering: a release named
// like the chart gets the plain names (fifoq, fifoq-headless, fifoq-0).
const (
	namespace = "queues"
	release   = "fifoq"
)

// helmPath is the helm binary: $CHECK_HELM, else helm on the PATH.
func helmPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("CHECK_HELM"); p != "" {
		return p
	}
	p, err := exec.LookPath("helm")
	if err != nil {
		t.Skip("no helm: set CHECK_HELM (deploy/helm/check.sh builds one)")
	}
	return p
}

// values are the chart values of one rendering, as --set-json pairs.
type values map[string]any

// baseValues are values every cluster rendering of the tests starts from:
// an access key, and the members' mutual TLS.
func baseValues() values {
	return values{
		"auth.accessKeyId":       "AKIAFIFOQHELMCHECK01",
		"auth.secretAccessKey":   "helm-check-secret-not-for-production",
		"cluster.tls.secretName": "fifoq-raft-tls",
	}
}

// with returns a copy of v with more values.
func (v values) with(more values) values {
	out := values{}
	for k, x := range v {
		out[k] = x
	}
	for k, x := range more {
		out[k] = x
	}
	return out
}

// args turns v into helm's --set-json flags, in a stable order.
func (v values) args(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, k := range slices.Sorted(maps.Keys(v)) {
		if v[k] == nil {
			continue // null: the chart's default
		}
		j, err := json.Marshal(v[k])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "--set-json", k+"="+string(j))
	}
	return out
}

// helm runs helm with args and returns its standard output, or its
// standard error as the error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(helmPath(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v: %s", strings.Join(args[:1], " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// templateArgs are helm template's arguments for v.
func templateArgs(t *testing.T, v values) []string {
	abs, err := filepath.Abs(chartDir())
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"template", release, abs, "--namespace", namespace, "--kube-version", kubeVersion}, v.args(t)...)
}

// render renders the chart with v and returns its objects.
func render(t *testing.T, v values) []object {
	t.Helper()
	out, err := helm(t, templateArgs(t, v)...)
	if err != nil {
		t.Fatal(err)
	}
	return splitObjects(t, out)
}

// object is one rendered document: its kind, name and YAML.
type object struct {
	apiVersion, kind, name, source string
	yaml                           []byte
}

// splitObjects splits helm template's output into its documents.
func splitObjects(t *testing.T, out string) []object {
	t.Helper()
	var objs []object
	for _, doc := range strings.Split("\n"+out, "\n---\n") {
		source := ""
		for _, line := range strings.Split(doc, "\n") {
			if s, ok := strings.CutPrefix(line, "# Source: "); ok {
				source = s
			}
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("%s: not YAML: %v", source, err)
		}
		if head.Kind == "" && strings.TrimSpace(stripComments(doc)) == "" {
			continue // an empty document: a template that rendered nothing
		}
		objs = append(objs, object{apiVersion: head.APIVersion, kind: head.Kind, name: head.Metadata.Name, source: source, yaml: []byte(doc)})
	}
	return objs
}

// stripComments drops YAML comment lines.
func stripComments(doc string) string {
	var b strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

// find returns the object of kind named name, failing the test if there
// is none.
func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.kind == kind && o.name == name {
			return o
		}
	}
	t.Fatalf("no %s %s among the rendered objects", kind, name)
	return object{}
}
