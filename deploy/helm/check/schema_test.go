package check

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// rendered is a rendering decoded into the API's types: one StatefulSet,
// its Services, ConfigMap, and whatever else the values asked for.
type rendered struct {
	statefulSet     *appsv1.StatefulSet
	services        map[string]*corev1.Service
	configMaps      map[string]*corev1.ConfigMap
	secrets         map[string]*corev1.Secret
	serviceAccounts map[string]*corev1.ServiceAccount
	pdbs            []*policyv1.PodDisruptionBudget
	serviceMonitors []*monitoringv1.ServiceMonitor
}

// kinds maps each apiVersion and kind the chart may render to a new
// object of its Go type. Anything else fails the check: an object no
// schema checks is not let through.
var kinds = map[string]func() any{
	"apps/v1 StatefulSet":                     func() any { return &appsv1.StatefulSet{} },
	"v1 Service":                              func() any { return &corev1.Service{} },
	"v1 ConfigMap":                            func() any { return &corev1.ConfigMap{} },
	"v1 Secret":                               func() any { return &corev1.Secret{} },
	"v1 ServiceAccount":                       func() any { return &corev1.ServiceAccount{} },
	"policy/v1 PodDisruptionBudget":           func() any { return &policyv1.PodDisruptionBudget{} },
	"monitoring.coreos.com/v1 ServiceMonitor": func() any { return &monitoringv1.ServiceMonitor{} },
}

// strictDecode decodes a YAML document into obj as the API server decodes
// a request with fieldValidation=Strict: sigs.k8s.io/json, whose field
// names are case-sensitive (encoding/json would take "fieldpath" for
// fieldPath), and for which an unknown or duplicate field, or a value of
// the wrong type, is an error.
func strictDecode(doc []byte, obj any) error {
	j, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return err
	}
	strict, err := kjson.UnmarshalStrict(j, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	return errors.Join(strict...)
}

// decode decodes every object strictly into its type (strictDecode) and
// checks its metadata as the API server would.
func decode(t *testing.T, objs []object) *rendered {
	t.Helper()
	r := &rendered{services: map[string]*corev1.Service{}, configMaps: map[string]*corev1.ConfigMap{},
		secrets: map[string]*corev1.Secret{}, serviceAccounts: map[string]*corev1.ServiceAccount{}}
	for _, o := range objs {
		newObj, ok := kinds[o.apiVersion+" "+o.kind]
		if !ok {
			t.Errorf("%s: %s %s is not a kind this check knows: add its type to kinds", o.source, o.apiVersion, o.kind)
			continue
		}
		obj := newObj()
		if err := strictDecode(o.yaml, obj); err != nil {
			t.Errorf("%s: %s %s does not decode strictly: %v", o.source, o.kind, o.name, err)
			continue
		}
		nameFn := apivalidation.NameIsDNSSubdomain
		switch x := obj.(type) {
		case *appsv1.StatefulSet:
			if r.statefulSet != nil {
				t.Errorf("%s: a second StatefulSet", o.source)
			}
			r.statefulSet = x
		case *corev1.Service:
			nameFn = apivalidation.NameIsDNS1035Label
			r.services[x.Name] = x
		case *corev1.ConfigMap:
			r.configMaps[x.Name] = x
		case *corev1.Secret:
			r.secrets[x.Name] = x
		case *corev1.ServiceAccount:
			r.serviceAccounts[x.Name] = x
		case *policyv1.PodDisruptionBudget:
			r.pdbs = append(r.pdbs, x)
		case *monitoringv1.ServiceMonitor:
			r.serviceMonitors = append(r.serviceMonitors, x)
		}
		meta := metaOf(obj)
		for _, e := range apivalidation.ValidateObjectMeta(meta, true, nameFn, field.NewPath("metadata")) {
			t.Errorf("%s: %s %s: %v", o.source, o.kind, o.name, e)
		}
		if meta.Namespace != namespace {
			t.Errorf("%s: %s %s is in namespace %q, not the release's", o.source, o.kind, o.name, meta.Namespace)
		}
	}
	if r.statefulSet == nil {
		t.Fatal("no StatefulSet rendered")
	}
	return r
}

// metaOf returns the ObjectMeta of one of kinds' objects.
func metaOf(obj any) *metav1.ObjectMeta {
	switch x := obj.(type) {
	case *appsv1.StatefulSet:
		return &x.ObjectMeta
	case *corev1.Service:
		return &x.ObjectMeta
	case *corev1.ConfigMap:
		return &x.ObjectMeta
	case *corev1.Secret:
		return &x.ObjectMeta
	case *corev1.ServiceAccount:
		return &x.ObjectMeta
	case *policyv1.PodDisruptionBudget:
		return &x.ObjectMeta
	case *monitoringv1.ServiceMonitor:
		return &x.ObjectMeta
	}
	panic(fmt.Sprintf("no metadata of %T", obj))
}

// problems collects what is wrong, for one t.Error each.
type problems []string

func (p *problems) add(format string, a ...any) { *p = append(*p, fmt.Sprintf(format, a...)) }

// checkStatefulSet checks what decoding cannot: that the references
// between the objects hold, and what the chart promises of every pod.
func (r *rendered) checkStatefulSet(replicas int, external map[string]bool) problems {
	var p problems
	s := r.statefulSet
	if s.Spec.Replicas == nil || int(*s.Spec.Replicas) != replicas {
		p.add("StatefulSet replicas %v, want %d", s.Spec.Replicas, replicas)
	}
	sel, err := metav1.LabelSelectorAsSelector(s.Spec.Selector)
	for _, e := range metav1validation.ValidateLabelSelector(s.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec.selector")) {
		p.add("StatefulSet: %v", e)
	}
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(s.Spec.Template.Labels)) {
		p.add("StatefulSet selector %v does not select its pods' labels %v", s.Spec.Selector, s.Spec.Template.Labels)
	}
	if h := r.services[s.Spec.ServiceName]; h == nil || h.Spec.ClusterIP != corev1.ClusterIPNone || !h.Spec.PublishNotReadyAddresses {
		p.add("StatefulSet serviceName %q is not a rendered headless Service that publishes pods before they are ready", s.Spec.ServiceName)
	}
	if s.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		p.add("podManagementPolicy %q: the initial members must start together", s.Spec.PodManagementPolicy)
	}
	if rp := s.Spec.PersistentVolumeClaimRetentionPolicy; rp == nil || rp.WhenScaled != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		p.add("a pod removed by scaling down must lose its volume (persistentVolumeClaimRetentionPolicy.whenScaled: Delete)")
	}
	claims := map[string]bool{}
	for _, c := range s.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
		if _, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; !ok {
			p.add("volumeClaimTemplate %s asks for no storage", c.Name)
		}
	}
	pod := s.Spec.Template.Spec
	if sc := pod.SecurityContext; sc == nil || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot || sc.RunAsUser == nil || *sc.RunAsUser != 65532 || sc.FSGroup == nil {
		p.add("the pod must run as the image's user 65532, non-root, with an fsGroup for its volume")
	}
	if pod.TerminationGracePeriodSeconds == nil || *pod.TerminationGracePeriodSeconds < 45 {
		p.add("terminationGracePeriodSeconds %v: fifoq's graceful stop may take 42 s", pod.TerminationGracePeriodSeconds)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		volumes[v.Name] = v
		if claims[v.Name] {
			p.add("volume %s is also a volumeClaimTemplate", v.Name)
		}
		switch {
		case v.ConfigMap != nil && r.configMaps[v.ConfigMap.Name] == nil:
			p.add("volume %s: no ConfigMap %s is rendered", v.Name, v.ConfigMap.Name)
		case v.Secret != nil && r.secrets[v.Secret.SecretName] == nil && !external[v.Secret.SecretName]:
			p.add("volume %s: Secret %s is neither rendered nor one the values name", v.Name, v.Secret.SecretName)
		}
	}
	if len(pod.Containers) != 1 {
		p.add("%d containers, want 1", len(pod.Containers))
		return p
	}
	p = append(p, r.checkContainer(pod.Containers[0], volumes, claims, external)...)
	return p
}

// varRef matches a $(VAR) reference, as the kubelet expands them.
var varRef = regexp.MustCompile(`\$\(([^)]*)\)`)

// checkContainer checks the fifoq container: names, ports, probes,
// mounts, the variables its arguments use, its securityContext.
func (r *rendered) checkContainer(c corev1.Container, volumes map[string]corev1.Volume, claims, external map[string]bool) problems {
	var p problems
	for _, msg := range validation.IsDNS1123Label(c.Name) {
		p.add("container name %q: %s", c.Name, msg)
	}
	ports := map[string]bool{}
	for _, port := range c.Ports {
		for _, msg := range validation.IsValidPortName(port.Name) {
			p.add("port name %q: %s", port.Name, msg)
		}
		if ports[port.Name] {
			p.add("port %s twice", port.Name)
		}
		ports[port.Name] = true
	}
	for name, probe := range map[string]*corev1.Probe{"startup": c.StartupProbe, "liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			p.add("no %s probe over HTTP", name)
			continue
		}
		if port := probe.HTTPGet.Port.String(); !ports[port] {
			p.add("%s probe on port %q, which the container does not name", name, port)
		}
	}
	if c.ReadinessProbe != nil && c.ReadinessProbe.HTTPGet != nil && c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		p.add("readiness probe on %s, want /readyz", c.ReadinessProbe.HTTPGet.Path)
	}
	if c.LivenessProbe != nil && c.LivenessProbe.HTTPGet != nil && c.LivenessProbe.HTTPGet.Path != "/healthz" {
		p.add("liveness probe on %s, want /healthz", c.LivenessProbe.HTTPGet.Path)
	}
	mounts := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if _, ok := volumes[m.Name]; !ok && !claims[m.Name] {
			p.add("volumeMount %s names no volume", m.Name)
		}
		if mounts[m.MountPath] {
			p.add("two mounts at %s", m.MountPath)
		}
		mounts[m.MountPath] = true
	}
	defined := map[string]bool{}
	for _, e := range c.Env {
		for _, msg := range validation.IsEnvVarName(e.Name) {
			p.add("env %q: %s", e.Name, msg)
		}
		p = append(p, undefinedRefs("env "+e.Name, e.Value, defined)...)
		if ref := e.ValueFrom; ref != nil && ref.SecretKeyRef != nil {
			p = append(p, r.checkSecretKey(ref.SecretKeyRef, external)...)
		}
		defined[e.Name] = true
	}
	for _, a := range append(append([]string{}, c.Command...), c.Args...) {
		p = append(p, undefinedRefs("argument", a, defined)...)
	}
	sc := c.SecurityContext
	if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation || sc.ReadOnlyRootFilesystem == nil ||
		!*sc.ReadOnlyRootFilesystem || sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		p.add("container securityContext %+v: want no privilege escalation, a read-only root, capabilities ALL dropped", sc)
	}
	return p
}

// undefinedRefs reports the $(VAR) references in s to variables not in
// defined: the kubelet would leave them as they are.
func undefinedRefs(where, s string, defined map[string]bool) problems {
	var p problems
	for _, m := range varRef.FindAllStringSubmatch(strings.ReplaceAll(s, "$$", ""), -1) {
		if !defined[m[1]] {
			p.add("%s %q refers to $(%s), which is not defined before it", where, s, m[1])
		}
	}
	return p
}

// checkSecretKey checks a secretKeyRef: its Secret is rendered with that
// key, or is one the values name.
func (r *rendered) checkSecretKey(ref *corev1.SecretKeySelector, external map[string]bool) problems {
	var p problems
	s := r.secrets[ref.Name]
	switch {
	case s == nil && !external[ref.Name]:
		p.add("secretKeyRef: Secret %s is neither rendered nor one the values name", ref.Name)
	case s != nil:
		if _, ok := s.StringData[ref.Key]; !ok {
			if _, ok := s.Data[ref.Key]; !ok {
				p.add("secretKeyRef: Secret %s has no key %s", ref.Name, ref.Key)
			}
		}
	}
	return p
}

// checkServices checks that every Service selects the pods and sends to
// ports the container has, and that the PodDisruptionBudgets (as many as
// wantPDBs) and ServiceMonitors select what they should.
func (r *rendered) checkServices(wantPDBs int) problems {
	var p problems
	pod := labels.Set(r.statefulSet.Spec.Template.Labels)
	ports := map[string]bool{}
	for _, port := range r.statefulSet.Spec.Template.Spec.Containers[0].Ports {
		ports[port.Name] = true
	}
	for name, s := range r.services {
		if len(s.Spec.Selector) == 0 || !labels.SelectorFromSet(s.Spec.Selector).Matches(pod) {
			p.add("Service %s selector %v does not select the pods", name, s.Spec.Selector)
		}
		for _, port := range s.Spec.Ports {
			if !ports[port.TargetPort.String()] {
				p.add("Service %s port %s sends to %q, which the container does not name", name, port.Name, port.TargetPort.String())
			}
		}
	}
	if len(r.pdbs) != wantPDBs {
		p.add("%d PodDisruptionBudgets, want %d", len(r.pdbs), wantPDBs)
	}
	for _, b := range r.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(pod) {
			p.add("PodDisruptionBudget %s does not select the pods", b.Name)
		}
		if b.Spec.MaxUnavailable == nil || b.Spec.MaxUnavailable.IntValue() != 1 {
			p.add("PodDisruptionBudget %s: maxUnavailable %v, want 1", b.Name, b.Spec.MaxUnavailable)
		}
	}
	for _, m := range r.serviceMonitors {
		sel, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
		matched := 0
		for _, s := range r.services {
			if err == nil && sel.Matches(labels.Set(s.Labels)) {
				matched++
				if s.Spec.ClusterIP != corev1.ClusterIPNone {
					p.add("ServiceMonitor %s selects Service %s, which lists only the ready pods", m.Name, s.Name)
				}
			}
		}
		if matched != 1 {
			p.add("ServiceMonitor %s selects %d Services, want the headless one", m.Name, matched)
		}
	}
	return p
}
