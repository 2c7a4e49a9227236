package check

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// chartCase is one rendering of the chart and what it must hold.
type chartCase struct {
	name     string
	values   values
	replicas int
	// joiners are the ordinals whose config file must say join; the
	// others of a cluster say peers.
	joiners []int
	// initial is the number of pods in the peers list.
	initial int
}

// fullname is the objects' name for v: fullnameOverride, else the
// release's (named like the chart).
func fullname(v values) string {
	if s, _ := v["fullnameOverride"].(string); s != "" {
		return s
	}
	return release
}

// externalSecrets are the Secrets the values name, which the pods use
// without the chart rendering them.
func externalSecrets(v values) map[string]bool {
	out := map[string]bool{}
	for _, k := range []string{"cluster.tls.secretName", "tls.secretName", "auth.existingSecret", "auth.credentialsSecret"} {
		if s, _ := v[k].(string); s != "" {
			out[s] = true
		}
	}
	return out
}

func chartCases() []chartCase {
	everything := baseValues().with(values{
		"auth.accessKeyId": "", "auth.secretAccessKey": "",
		"auth.existingSecret": "fifoq-admin", "auth.credentialsSecret": "fifoq-app-keys",
		"tls.secretName":                  "fifoq-tls",
		"metrics.serviceMonitor":          map[string]any{"enabled": true, "interval": "15s", "labels": map[string]any{"release": "prometheus"}},
		"config":                          map[string]any{"region": "eu-west-1", "queues": []any{map[string]any{"name": "orders.fifo", "attributes": map[string]any{"FifoQueue": true}}}},
		"memoryBudget":                    "1GiB",
		"podAntiAffinity":                 "hard",
		"extraEnv":                        []any{map[string]any{"name": "TZ", "value": "UTC"}},
		"extraArgs":                       []any{"--log-requests"},
		"podLabels":                       map[string]any{"team": "payments"},
		"podAnnotations":                  map[string]any{"example.com/owner": "payments"},
		"imagePullSecrets":                []any{map[string]any{"name": "registry"}},
		"nodeSelector":                    map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":                     []any{map[string]any{"key": "queues", "operator": "Exists", "effect": "NoSchedule"}},
		"priorityClassName":               "high",
		"service":                         map[string]any{"type": "LoadBalancer", "port": 443, "annotations": map[string]any{"example.com/lb": "internal"}},
		"serviceAccount":                  map[string]any{"create": false, "name": "queues"},
		"persistence.storageClassName":    "fast",
		"topologySpreadConstraints":       []any{map[string]any{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway", "labelSelector": map[string]any{"matchLabels": map[string]any{"app.kubernetes.io/name": "fifoq"}}}},
		"terminationGracePeriodSeconds":   60,
		"fullnameOverride":                "orders-queues",
		"image.tag":                       "1.2.3",
		"cluster.port":                    9400,
		"probes.startup.failureThreshold": 360,
	})
	return []chartCase{
		{name: "one node", values: values{"replicas": 1, "auth.accessKeyId": "AKIAFIFOQHELMCHECK01", "auth.secretAccessKey": "s"}, replicas: 1},
		{name: "three nodes", values: baseValues(), replicas: 3, initial: 3},
		{name: "five nodes", values: baseValues().with(values{"replicas": 5}), replicas: 5, initial: 5},
		{name: "five nodes grown from three", values: baseValues().with(values{"replicas": 5, "cluster.initialMembers": 3}), replicas: 5, initial: 3, joiners: []int{3, 4}},
		{name: "a member rejoins", values: baseValues().with(values{"cluster.rejoin": []int{1}}), replicas: 3, initial: 3, joiners: []int{1}},
		{name: "everything on", values: everything, replicas: 3, initial: 3},
		{name: "insecure", values: values{"auth.insecure": true, "cluster.insecureRaft": true, "metrics.podAnnotations": false, "podDisruptionBudget.enabled": false, "podAntiAffinity": "none"}, replicas: 3, initial: 3},
	}
}

// TestRenderedObjectsAreValid renders the chart for one node, 3 and 5
// nodes and other values, decodes every object strictly into the
// Kubernetes 1.32 API types, and checks what the types cannot: names and
// labels as the API server validates them, references between objects,
// probes, security settings, each pod's config file.
func TestRenderedObjectsAreValid(t *testing.T) {
	for _, c := range chartCases() {
		t.Run(c.name, func(t *testing.T) {
			r := decode(t, render(t, c.values))
			wantPDBs := 0
			if c.replicas > 1 && c.values["podDisruptionBudget.enabled"] != false {
				wantPDBs = 1
			}
			var p problems
			p = append(p, r.checkStatefulSet(c.replicas, externalSecrets(c.values))...)
			p = append(p, r.checkServices(wantPDBs)...)
			p = append(p, r.checkNodeFiles(c)...)
			p = append(p, r.checkArgs(c)...)
			for _, msg := range p {
				t.Error(msg)
			}
		})
	}
}

// nodeFile is what the chart puts in a pod's config file.
type nodeFile struct {
	Peers string `json:"peers"`
	Join  string `json:"join"`
	Rest  map[string]any
}

// nodeFiles reads the pods' config files from the rendered ConfigMap.
func (r *rendered) nodeFiles(name string) (map[string]nodeFile, error) {
	cm := r.configMaps[name+"-config"]
	if cm == nil {
		return nil, fmt.Errorf("no ConfigMap %s-config", name)
	}
	out := map[string]nodeFile{}
	for key, text := range cm.Data {
		var f nodeFile
		if err := yaml.UnmarshalStrict([]byte(text), &f.Rest); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		if err := yaml.Unmarshal([]byte(text), &f); err != nil {
			return nil, fmt.Errorf("%s: %v", key, err)
		}
		out[key] = f
	}
	return out, nil
}

// checkNodeFiles checks each pod's config file: one per pod, the initial
// members with the same peers list, the later pods joining through the
// client Service, the values' config in every one.
func (r *rendered) checkNodeFiles(c chartCase) problems {
	var p problems
	name := fullname(c.values)
	files, err := r.nodeFiles(name)
	if err != nil {
		p.add("%v", err)
		return p
	}
	if len(files) != c.replicas {
		p.add("%d config files for %d pods", len(files), c.replicas)
	}
	domain := fmt.Sprintf("%s-headless.%s.svc.cluster.local", name, namespace)
	raftPort := 9325
	if n, ok := c.values["cluster.port"].(int); ok {
		raftPort = n
	}
	var peers []string
	for i := range c.initial {
		peers = append(peers, fmt.Sprintf("%s-%d=%s-%d.%s:%d", name, i, name, i, domain, raftPort))
	}
	joinURL := fmt.Sprintf("%s://%s.%s.svc.cluster.local:%d", scheme(c.values), name, namespace, servicePort(c.values))
	for i := range c.replicas {
		key := fmt.Sprintf("%s-%d.yaml", name, i)
		f, ok := files[key]
		switch {
		case !ok:
			p.add("no config file %s", key)
			continue
		case c.replicas == 1:
			if f.Peers != "" || f.Join != "" {
				p.add("%s: a server alone with peers %q, join %q", key, f.Peers, f.Join)
			}
		case slices.Contains(c.joiners, i):
			if f.Join != joinURL || f.Peers != "" {
				p.add("%s: join %q, peers %q; want join %s", key, f.Join, f.Peers, joinURL)
			}
		default:
			if f.Peers != strings.Join(peers, ",") || f.Join != "" {
				p.add("%s: peers %q, join %q; want peers %s", key, f.Peers, f.Join, strings.Join(peers, ","))
			}
		}
		if cfg, ok := c.values["config"].(map[string]any); ok {
			for k, v := range cfg {
				got, _ := json.Marshal(f.Rest[k])
				want, _ := json.Marshal(v)
				if string(got) != string(want) {
					p.add("%s: %s is %s, want the values' %s", key, k, got, want)
				}
			}
		}
	}
	return p
}

// scheme is the SQS port's scheme for v.
func scheme(v values) string {
	if s, _ := v["tls.secretName"].(string); s != "" {
		return "https"
	}
	return "http"
}

// servicePort is the client Service's port for v.
func servicePort(v values) int {
	if s, ok := v["service"].(map[string]any); ok {
		if n, ok := s["port"].(int); ok {
			return n
		}
	}
	return 9324
}

// checkArgs checks the fifoq container's command line for the values:
// the cluster flags for more than one node, TLS where a Secret is named,
// --raft-insecure only when asked for by name.
func (r *rendered) checkArgs(c chartCase) problems {
	var p problems
	ct := r.statefulSet.Spec.Template.Spec.Containers[0]
	args := strings.Join(ct.Args, " ")
	name := fullname(c.values)
	has := func(flag string) bool { return slices.Contains(ct.Args, flag) }
	if !strings.HasPrefix(args, "serve ") || !strings.Contains(args, "--node-id $(POD_NAME)") ||
		!strings.Contains(args, "--config /etc/fifoq/nodes/$(POD_NAME).yaml") || !strings.Contains(args, "--data-dir /data") {
		p.add("args %q: want serve with the pod's name as node id, its config file and /data", args)
	}
	clustered := c.replicas > 1
	raftAddr := fmt.Sprintf("--raft-addr $(POD_NAME).%s-headless.%s.svc.cluster.local:", name, namespace)
	if strings.Contains(args, raftAddr) != clustered || has("--advertise-url") != clustered {
		p.add("args %q: want --raft-addr and --advertise-url on the headless Service's names for a cluster only", args)
	}
	raftTLS, _ := c.values["cluster.tls.secretName"].(string)
	if has("--raft-tls-cert") != (clustered && raftTLS != "") || has("--raft-insecure") != (clustered && c.values["cluster.insecureRaft"] == true) {
		p.add("args %q: want --raft-tls-* with cluster.tls.secretName, --raft-insecure only with cluster.insecureRaft", args)
	}
	if has("--tls-cert") != (scheme(c.values) == "https") {
		p.add("args %q: want --tls-cert exactly with tls.secretName", args)
	}
	if has("--insecure") != (c.values["auth.insecure"] == true) {
		p.add("args %q: want --insecure only with auth.insecure", args)
	}
	env := map[string]corev1.EnvVar{}
	for _, e := range ct.Env {
		env[e.Name] = e
	}
	if e, ok := env["POD_NAME"]; !ok || e.ValueFrom == nil || e.ValueFrom.FieldRef == nil || e.ValueFrom.FieldRef.FieldPath != "metadata.name" {
		p.add("POD_NAME must come from the downward API's metadata.name")
	}
	_, keyEnv := env["FIFOQ_ACCESS_KEY_ID"]
	if wantKey := c.values["auth.accessKeyId"] != nil && c.values["auth.accessKeyId"] != "" || c.values["auth.existingSecret"] != nil; keyEnv != wantKey {
		p.add("FIFOQ_ACCESS_KEY_ID in the environment: %v, want %v", keyEnv, wantKey)
	}
	return p
}

// TestRefusedValues checks that values which would start pods fifoq
// refuses, or a cluster open to anyone by accident, fail the rendering
// with a message that says what to set.
func TestRefusedValues(t *testing.T) {
	for _, c := range []struct {
		name   string
		values values
		want   string
	}{
		{"a cluster without mutual TLS", values{"auth.insecure": true}, "cluster.tls.secretName"},
		{"no credentials", values{"replicas": 1}, "needs credentials"},
		{"a key id without its secret", values{"replicas": 1, "auth.accessKeyId": "AKIA"}, "go together"},
		{"two access keys", baseValues().with(values{"auth.existingSecret": "keys"}), "not both"},
		{"peers in the config", baseValues().with(values{"config": map[string]any{"peers": "a=b:1"}}), "config.peers: the chart sets"},
		{"listen in the config", baseValues().with(values{"config": map[string]any{"listen": "127.0.0.1:1"}}), "config.listen"},
		{"no pods", baseValues().with(values{"replicas": 0}), "replicas"},
		{"a rejoin beyond the pods", baseValues().with(values{"cluster.rejoin": []int{3}}), "no pod ordinal"},
		{"an unknown anti-affinity", baseValues().with(values{"podAntiAffinity": "sometimes"}), "podAntiAffinity"},
		{"an unknown value", baseValues().with(values{"replica": 3}), "replica"},
		{"a memory budget in Kubernetes' units", baseValues().with(values{"memoryBudget": "1Gi"}), "memoryBudget"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, templateArgs(t, c.values)...)
			if err == nil {
				t.Fatalf("rendered:\n%s", out)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("refused, but without %q: %v", c.want, err)
			}
		})
	}
}

// TestScalingRestartsNoPod renders 3 nodes, and the same release grown
// to 5 (cluster.initialMembers 3, as an upgrade keeps it): everything but
// the StatefulSet's replicas and the two new pods' config files is the
// same, so the upgrade restarts no running pod and changes no running
// member's settings.
func TestScalingRestartsNoPod(t *testing.T) {
	three := decode(t, render(t, baseValues()))
	five := decode(t, render(t, baseValues().with(values{"replicas": 5, "cluster.initialMembers": 3})))
	same := func(what string, a, b any) {
		ja, _ := json.Marshal(a)
		jb, _ := json.Marshal(b)
		if string(ja) != string(jb) {
			t.Errorf("%s differs between 3 and 5 nodes:\n%s\n%s", what, ja, jb)
		}
	}
	same("the pod template", three.statefulSet.Spec.Template, five.statefulSet.Spec.Template)
	same("the Services", three.services, five.services)
	same("the PodDisruptionBudget", three.pdbs, five.pdbs)
	f3, err := three.nodeFiles(release)
	if err != nil {
		t.Fatal(err)
	}
	f5, err := five.nodeFiles(release)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		key := fmt.Sprintf("%s-%d.yaml", release, i)
		same(key, three.configMaps[release+"-config"].Data[key], five.configMaps[release+"-config"].Data[key])
	}
	if len(f3) != 3 || len(f5) != 5 {
		t.Errorf("%d and %d config files, want 3 and 5", len(f3), len(f5))
	}
}
