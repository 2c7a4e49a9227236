package check

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The pods run on loopback addresses of their own, one each, as pods have
// an IP each: every pod listens on the same ports (9324, and 9325 for
// Raft), so distinct addresses, not distinct ports, keep them apart.
// 127.0.93.0/24 is out of the way of the 127.0.0.1 that other tests use.
func podAddr(ordinal int) string { return fmt.Sprintf("127.0.93.%d", ordinal+1) }

// fifoqPath is the fifoq binary the pods run: $CHECK_FIFOQ, which
// check.sh builds from this checkout.
func fifoqPath(t *testing.T) string {
	t.Helper()
	p := os.Getenv("CHECK_FIFOQ")
	if p == "" {
		t.Skip("CHECK_FIFOQ names no fifoq binary (deploy/helm/check.sh builds one)")
	}
	return p
}

// kubelet starts the pods of a rendered StatefulSet as processes, doing
// what a kubelet and the cluster's DNS would: the pod's name and
// namespace from the downward API, Secrets and ConfigMaps written as
// files where they are mounted (under a directory of the pod's), $(VAR)
// references expanded, and every DNS name of a pod or of the client
// Service mapped to the pod's loopback address (the client Service's to
// pod 0's, one of the pods it would pick).
type kubelet struct {
	t       *testing.T
	bin     string
	root    string
	name    string // the objects' full name: pods are name-0, name-1, ...
	secrets map[string]map[string][]byte
	names   *strings.Replacer
}

// newKubelet makes a kubelet for the release named name; secrets are
// the contents of the Secrets the values name (a rendered Secret is read
// from the rendering).
func newKubelet(t *testing.T, name string, secrets map[string]map[string][]byte) *kubelet {
	var pairs []string
	domain := fmt.Sprintf("%s.svc.cluster.local", namespace)
	for i := range 9 {
		pairs = append(pairs, fmt.Sprintf("%s-%d.%s-headless.%s", name, i, name, domain), podAddr(i))
	}
	pairs = append(pairs, fmt.Sprintf("%s.%s", name, domain), podAddr(0))
	return &kubelet{t: t, bin: fifoqPath(t), root: t.TempDir(), name: name, secrets: secrets, names: strings.NewReplacer(pairs...)}
}

// pod is one running pod.
type pod struct {
	name, addr string
	ordinal    int
	args, env  []string
	logPath    string
	cmd        *exec.Cmd
	exited     chan struct{}
	exitErr    error
}

// mount is a volume mounted in the pod, and where it is on this machine.
type mount struct{ path, host string }

// prepare lays out pod ordinal of rendering r: its volumes, environment
// and command line. Its data volume is kept between calls, as a
// PersistentVolumeClaim outlives the pod.
func (k *kubelet) prepare(r *rendered, ordinal int) *pod {
	t := k.t
	t.Helper()
	p := &pod{name: fmt.Sprintf("%s-%d", k.name, ordinal), addr: podAddr(ordinal), ordinal: ordinal}
	spec := r.statefulSet.Spec.Template.Spec
	c := spec.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("the container sets a command %q: the check expects the image's entrypoint, fifoq", c.Command)
	}
	dir := filepath.Join(k.root, p.name)
	var mounts []mount
	for _, vm := range c.VolumeMounts {
		host := filepath.Join(dir, "volumes", vm.Name)
		k.mountVolume(r, spec.Volumes, vm.Name, host)
		mounts = append(mounts, mount{path: vm.MountPath, host: host})
	}
	sort.Slice(mounts, func(i, j int) bool { return len(mounts[i].path) > len(mounts[j].path) })
	local := func(s string) string {
		s = k.names.Replace(s)
		for _, m := range mounts {
			if s == m.path || strings.HasPrefix(s, m.path+"/") {
				return m.host + strings.TrimPrefix(s, m.path)
			}
		}
		return s
	}
	env := map[string]string{}
	for _, e := range c.Env {
		v := expand(e.Value, env)
		if e.ValueFrom != nil {
			v = k.valueFrom(r, p, e.ValueFrom)
		}
		env[e.Name] = v
		p.env = append(p.env, e.Name+"="+local(v))
	}
	for i, a := range c.Args {
		a = local(expand(a, env))
		if i > 0 && c.Args[i-1] == "--listen" {
			// A pod listens on every address it has: here, its own.
			a = p.addr + a[strings.LastIndex(a, ":"):]
		}
		p.args = append(p.args, a)
	}
	p.logPath = filepath.Join(dir, "log")
	return p
}

// mountVolume writes volume name's content at host: a ConfigMap's keys
// or a Secret's as files; a claim's directory is made once and kept.
func (k *kubelet) mountVolume(r *rendered, volumes []corev1.Volume, name, host string) {
	t := k.t
	t.Helper()
	var files map[string][]byte
	var items []corev1.KeyToPath
	for _, v := range volumes {
		switch {
		case v.Name != name:
		case v.ConfigMap != nil:
			cm := r.configMaps[v.ConfigMap.Name]
			files, items = map[string][]byte{}, v.ConfigMap.Items
			for key, text := range cm.Data {
				files[key] = []byte(k.names.Replace(text))
			}
		case v.Secret != nil:
			files, items = k.secret(r, v.Secret.SecretName), v.Secret.Items
		case v.EmptyDir != nil:
			files = map[string][]byte{}
		default:
			t.Fatalf("volume %s: a kind this check does not mount", name)
		}
	}
	if files == nil {
		// No volume: a volumeClaimTemplate, the pod's persistent volume.
		if err := os.MkdirAll(host, 0o700); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.RemoveAll(host); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(host, 0o700); err != nil {
		t.Fatal(err)
	}
	if items != nil {
		picked := map[string][]byte{}
		for _, it := range items {
			picked[it.Path] = files[it.Key]
		}
		files = picked
	}
	for path, b := range files {
		if err := os.WriteFile(filepath.Join(host, path), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// secret returns the content of Secret name: rendered, or given.
func (k *kubelet) secret(r *rendered, name string) map[string][]byte {
	if s, ok := k.secrets[name]; ok {
		return s
	}
	s := r.secrets[name]
	if s == nil {
		k.t.Fatalf("Secret %s is neither rendered nor given", name)
	}
	out := map[string][]byte{}
	for key, v := range s.Data {
		out[key] = v
	}
	for key, v := range s.StringData {
		out[key] = []byte(v)
	}
	return out
}

// valueFrom resolves an environment variable's source.
func (k *kubelet) valueFrom(r *rendered, p *pod, from *corev1.EnvVarSource) string {
	switch {
	case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.name":
		return p.name
	case from.FieldRef != nil && from.FieldRef.FieldPath == "metadata.namespace":
		return namespace
	case from.SecretKeyRef != nil:
		v, ok := k.secret(r, from.SecretKeyRef.Name)[from.SecretKeyRef.Key]
		if !ok {
			k.t.Fatalf("Secret %s has no key %s", from.SecretKeyRef.Name, from.SecretKeyRef.Key)
		}
		return string(v)
	}
	k.t.Fatalf("an environment variable from %+v, which this check does not resolve", from)
	return ""
}

// varRefOrEscape matches what the kubelet expands: $$ (a $) and $(VAR).
var varRefOrEscape = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand expands $(VAR) references as the kubelet does: a defined
// variable's value, an undefined one left as it is, $$ a single $.
func expand(s string, env map[string]string) string {
	return varRefOrEscape.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// start starts p's process, its output to its log file; the test's end
// kills it.
func (k *kubelet) start(p *pod) {
	t := k.t
	t.Helper()
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(logf, "=== started %s: fifoq %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(p.args, " "))
	p.cmd = exec.Command(k.bin, p.args...)
	p.cmd.Env = p.env // a container's environment: what the pod spec gives, nothing else
	p.cmd.Dir = filepath.Dir(p.logPath)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p.exited = make(chan struct{})
	go func() {
		p.exitErr = p.cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	t.Cleanup(func() { p.kill() })
}

// dataDir is where p's data volume is on this machine.
func (k *kubelet) dataDir(p *pod) string {
	return filepath.Join(k.root, p.name, "volumes", "data")
}

// kill stops p at once, as a kubelet does when the grace period ends.
func (p *pod) kill() {
	select {
	case <-p.exited:
	default:
		p.cmd.Process.Kill()
		<-p.exited
	}
}

// stop sends p SIGTERM, as a kubelet does to a pod being deleted, and
// waits up to grace for it to exit; it reports how long that took.
func (p *pod) stop(t *testing.T, grace time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.kill()
		t.Fatalf("%s did not stop within the grace period of %v after SIGTERM\n%s", p.name, grace, p.logTail())
	}
	if p.exitErr != nil {
		t.Errorf("%s exited with %v after SIGTERM, want 0\n%s", p.name, p.exitErr, p.logTail())
	}
	return time.Since(start)
}

// logTail returns the end of p's log, for a failure's message.
func (p *pod) logTail() string {
	b, _ := os.ReadFile(p.logPath)
	if len(b) > 6000 {
		b = b[len(b)-6000:]
	}
	return fmt.Sprintf("--- %s's log:\n%s", p.name, bytes.TrimSpace(b))
}

// getenv returns the value p's environment gives name.
func (p *pod) getenv(name string) string {
	for _, kv := range p.env {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// exec runs fifoq in p's environment, as kubectl exec POD -- fifoq ...
// would, with more variables if given; it returns the standard output.
func (k *kubelet) exec(p *pod, more []string, args ...string) (string, error) {
	cmd := exec.Command(k.bin, args...)
	cmd.Env = append(append([]string{}, p.env...), more...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("fifoq %s in %s: %v: %s", strings.Join(args, " "), p.name, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}
