package check

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// fakeAPI is the little of a Kubernetes API server that helm template
// --dry-run=server needs to render an upgrade: the version, discovery of
// the kinds the chart renders, no release history, and the ConfigMap of
// the release being upgraded, which the chart's lookup reads back.
type fakeAPI struct {
	mu       sync.Mutex
	previous *corev1.ConfigMap // nil: none (a first install)
	unknown  []string          // requests it could not answer
}

var discovery = map[string]string{
	"/version": `{"major":"1","minor":"32","gitVersion":"v1.32.0"}`,
	"/api":     `{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`,
	"/apis": `{"kind":"APIGroupList","apiVersion":"v1","groups":[
		{"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
		{"name":"policy","versions":[{"groupVersion":"policy/v1","version":"v1"}],"preferredVersion":{"groupVersion":"policy/v1","version":"v1"}}]}`,
	"/api/v1": `{"kind":"APIResourceList","groupVersion":"v1","resources":[
		{"name":"configmaps","singularName":"configmap","namespaced":true,"kind":"ConfigMap","verbs":["get","list","create","update","patch","delete"]},
		{"name":"secrets","singularName":"secret","namespaced":true,"kind":"Secret","verbs":["get","list","create","update","patch","delete"]},
		{"name":"services","singularName":"service","namespaced":true,"kind":"Service","verbs":["get","list","create","update","patch","delete"]},
		{"name":"serviceaccounts","singularName":"serviceaccount","namespaced":true,"kind":"ServiceAccount","verbs":["get","list","create","update","patch","delete"]}]}`,
	"/apis/apps/v1": `{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
		{"name":"statefulsets","singularName":"statefulset","namespaced":true,"kind":"StatefulSet","verbs":["get","list","create","update","patch","delete"]}]}`,
	"/apis/policy/v1": `{"kind":"APIResourceList","groupVersion":"policy/v1","resources":[
		{"name":"poddisruptionbudgets","singularName":"poddisruptionbudget","namespaced":true,"kind":"PodDisruptionBudget","verbs":["get","list","create","update","patch","delete"]}]}`,
}

func (f *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	if body, ok := discovery[r.URL.Path]; ok {
		fmt.Fprint(w, body)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := "/api/v1/namespaces/" + namespace + "/"
	switch {
	case r.Method == http.MethodGet && r.URL.Path == prefix+"secrets":
		// helm's release history: none.
		fmt.Fprint(w, `{"kind":"SecretList","apiVersion":"v1","metadata":{},"items":[]}`)
		return
	case r.Method == http.MethodGet && f.previous != nil && r.URL.Path == prefix+"configmaps/"+f.previous.Name:
		json.NewEncoder(w).Encode(f.previous)
		return
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/api"):
		// Any other object: it does not exist.
	default:
		f.unknown = append(f.unknown, r.Method+" "+r.URL.String())
	}
	w.WriteHeader(http.StatusNotFound)
	fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`)
}

// upgradeRender renders the chart with v as an upgrade of a release
// whose ConfigMap was previous's: helm template --dry-run=server against
// a fakeAPI, so that the chart's lookup reads it.
func upgradeRender(t *testing.T, previous *rendered, v values) ([]object, error) {
	t.Helper()
	f := &fakeAPI{}
	if previous != nil {
		cm := *previous.configMaps[release+"-config"]
		cm.APIVersion, cm.Kind = "v1", "ConfigMap"
		f.previous = &cm
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	conf := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: %q}}]
users: [{name: fake, user: {token: fake}}]
contexts: [{name: fake, context: {cluster: fake, user: fake, namespace: %s}}]
current-context: fake
`, srv.URL, namespace)
	if err := os.WriteFile(kubeconfig, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append(templateArgs(t, v), "--dry-run=server", "--is-upgrade", "--kubeconfig", kubeconfig, "--disable-openapi-validation")
	out, err := helm(t, args...)
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.unknown) > 0 {
		t.Errorf("helm asked the fake API server what it cannot answer: %q", f.unknown)
	}
	if err != nil {
		return nil, err
	}
	return splitObjects(t, out), nil
}

// TestUpgradesRememberTheInitialMembers renders upgrades as helm upgrade
// does, with the chart's lookup reading the release's ConfigMap back: the
// initial members recorded at install are kept without being given
// again, a contradicting value is refused, and a pod the previous release
// had no config file for joins, even below the initial members (a cluster
// installed with 5, shrunk to 3, grown back to 5).
func TestUpgradesRememberTheInitialMembers(t *testing.T) {
	install3 := decode(t, render(t, baseValues()))
	install5 := decode(t, render(t, baseValues().with(values{"replicas": 5})))
	shrunk := decode(t, mustUpgrade(t, install5, baseValues().with(values{"replicas": 3})))
	install1 := decode(t, render(t, baseValues().with(values{"replicas": 1})))
	for _, c := range []struct {
		name     string
		previous *rendered
		values   values
		initial  int
		joiners  []int
	}{
		{"3 grown to 5", install3, baseValues().with(values{"replicas": 5}), 3, []int{3, 4}},
		{"5 shrunk to 3", install5, baseValues().with(values{"replicas": 3}), 5, nil},
		{"5 shrunk to 3, grown back to 5", shrunk, baseValues().with(values{"replicas": 5}), 5, []int{3, 4}},
		{"1 grown to 3", install1, baseValues().with(values{"replicas": 3}), 1, []int{1, 2}},
		{"a first install", nil, baseValues().with(values{"replicas": 5}), 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := decode(t, mustUpgrade(t, c.previous, c.values))
			replicas := c.values["replicas"].(int)
			cc := chartCase{values: c.values, replicas: replicas, initial: c.initial, joiners: c.joiners}
			for _, msg := range r.checkNodeFiles(cc) {
				t.Error(msg)
			}
			if got := r.configMaps[release+"-config"].Annotations["fifoq/initial-members"]; got != fmt.Sprint(c.initial) {
				t.Errorf("the ConfigMap records %q initial members, want %d", got, c.initial)
			}
		})
	}
	_, err := upgradeRender(t, install3, baseValues().with(values{"replicas": 5, "cluster.initialMembers": 5}))
	if err == nil || !strings.Contains(err.Error(), "installed with 3 initial members: it cannot change") {
		t.Errorf("an upgrade that changes cluster.initialMembers: %v, want it refused", err)
	}
}

// mustUpgrade is upgradeRender, failing the test on an error.
func mustUpgrade(t *testing.T, previous *rendered, v values) []object {
	t.Helper()
	objs, err := upgradeRender(t, previous, v)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}
