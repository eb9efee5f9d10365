package luavm

import (
	"encoding/json"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/interpreter/podrequirements"
)

const kubeLibName = "kube"

// kubeHelpers are the functions of the kube library, Karmada's names and
// arguments.
var kubeHelpers = map[string]func(c *call, L *lua.LState) int{
	"accuratePodRequirements": (*call).accuratePodRequirements,
	"getPodDependencies":      (*call).getPodDependencies,
	"getResourceQuantity":     (*call).getResourceQuantity,
	"resourceAdd":             (*call).resourceAdd,
}

func kubeHelperNames() []string { return sortedKeys(kubeHelpers) }

// kubeLibrary is the kube table: the helpers, and an error naming the
// helpers for any other name.
func (c *call) kubeLibrary(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	for name, fn := range kubeHelpers {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return fn(c, L) }))
	}
	mt := L.NewTable()
	mt.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("kube.%s is not a kube helper (there are %s)",
			L.ToString(2), strings.Join(kubeHelperNames(), ", "))
		return 0
	}))
	L.SetMetatable(t, mt)
	return t
}

// podTemplate reads argument n, a pod template table.
func (c *call) podTemplate(L *lua.LState, fn string, n int) *corev1.PodTemplateSpec {
	v := L.Get(n)
	tb, ok := v.(*lua.LTable)
	if !ok {
		L.RaiseError("kube.%s: argument #%d must be a pod template table, not %s", fn, n, v.Type())
	}
	out := &corev1.PodTemplateSpec{}
	if err := c.conv.into(tb, shapeMap, out); err != nil {
		L.RaiseError("kube.%s: argument #%d is not a pod template: %v", fn, n, err)
	}
	return out
}

// kube.accuratePodRequirements(podTemplate) is what one replica made from
// the template needs, as a ReplicaRequirements table (nodeClaim,
// resourceRequest, resourceLimits, namespace, priorityClassName), or nil
// when it needs nothing in particular.
func (c *call) accuratePodRequirements(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("kube.accuratePodRequirements takes one argument, the pod template")
	}
	rr := replicaRequirements(c.podTemplate(L, "accuratePodRequirements", 1))
	if rr == nil {
		L.Push(lua.LNil)
		return 1
	}
	c.pushTyped(L, "accuratePodRequirements", rr)
	return 1
}

// replicaRequirements is podrequirements.Of the template's namespace, with
// a container's limits standing in for requests it does not set (as the
// API server defaults a Pod and Karmada does), zero quantities dropped, and
// nil when it needs nothing in particular.
func replicaRequirements(tpl *corev1.PodTemplateSpec) *workv1alpha1.ReplicaRequirements {
	defaulted := &corev1.PodTemplateSpec{ObjectMeta: tpl.ObjectMeta, Spec: *tpl.Spec.DeepCopy()}
	for _, cs := range [][]corev1.Container{defaulted.Spec.Containers, defaulted.Spec.InitContainers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, q := range r.Limits {
				if _, ok := r.Requests[name]; !ok {
					if r.Requests == nil {
						r.Requests = corev1.ResourceList{}
					}
					r.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	rr := podrequirements.Of(tpl.Namespace, defaulted)
	rr.ResourceRequest, rr.ResourceLimits = nonZero(rr.ResourceRequest), nonZero(rr.ResourceLimits)
	if rr.NodeClaim == nil && rr.ResourceRequest == nil && rr.ResourceLimits == nil &&
		rr.Namespace == "" && rr.PriorityClassName == "" {
		return nil
	}
	return rr
}

// nonZero is l without its zero quantities, nil when none is left.
func nonZero(l corev1.ResourceList) corev1.ResourceList {
	for name, q := range l {
		if q.IsZero() {
			delete(l, name)
		}
	}
	if len(l) == 0 {
		return nil
	}
	return l
}

// kube.getPodDependencies(podTemplate, namespace) lists the ConfigMaps,
// Secrets, ServiceAccount and PersistentVolumeClaims the template's Pods
// use, as DependentObjectReference tables (apiVersion, kind, namespace,
// name), ConfigMaps first then Secrets, ServiceAccounts and
// PersistentVolumeClaims, each sorted by name. namespace nil means
// "default", as in Karmada. It is an empty table, not nil, when there are
// none.
func (c *call) getPodDependencies(L *lua.LState) int {
	if top := L.GetTop(); top < 1 || top > 2 {
		L.RaiseError("kube.getPodDependencies takes two arguments, the pod template and the namespace")
	}
	tpl := c.podTemplate(L, "getPodDependencies", 1)
	namespace := "default"
	switch v := L.Get(2).(type) {
	case *lua.LNilType:
	case lua.LString:
		namespace = string(v)
	case lua.LNumber:
		namespace = v.String()
	default:
		L.RaiseError("kube.getPodDependencies: argument #2 must be a namespace string, not %s", v.Type())
	}
	var deps []any
	for _, kind := range []string{"ConfigMap", "Secret", "ServiceAccount", "PersistentVolumeClaim"} {
		for _, name := range podDependencies(&tpl.Spec)[kind] {
			deps = append(deps, map[string]any{
				"apiVersion": "v1", "kind": kind, "namespace": namespace, "name": name,
			})
		}
	}
	if deps == nil {
		deps = []any{}
	}
	c.push(L, "getPodDependencies", deps)
	return 1
}

// podDependencies maps kinds to the sorted names a pod spec refers to.
func podDependencies(spec *corev1.PodSpec) map[string][]string {
	found := map[string]map[string]bool{}
	add := func(kind, name string) {
		if name == "" {
			return
		}
		if found[kind] == nil {
			found[kind] = map[string]bool{}
		}
		found[kind][name] = true
	}
	secretRef := func(r *corev1.LocalObjectReference) {
		if r != nil {
			add("Secret", r.Name)
		}
	}
	if sa := spec.ServiceAccountName; sa != "default" {
		add("ServiceAccount", sa)
	}
	for _, s := range spec.ImagePullSecrets {
		add("Secret", s.Name)
	}
	for i := range spec.Volumes {
		v := &spec.Volumes[i].VolumeSource
		switch {
		case v.ConfigMap != nil:
			add("ConfigMap", v.ConfigMap.Name)
		case v.Secret != nil:
			add("Secret", v.Secret.SecretName)
		case v.PersistentVolumeClaim != nil:
			add("PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName)
		case v.Projected != nil:
			for _, p := range v.Projected.Sources {
				if p.ConfigMap != nil {
					add("ConfigMap", p.ConfigMap.Name)
				}
				if p.Secret != nil {
					add("Secret", p.Secret.Name)
				}
			}
		case v.AzureFile != nil:
			add("Secret", v.AzureFile.SecretName)
		case v.CephFS != nil:
			secretRef(v.CephFS.SecretRef)
		case v.Cinder != nil:
			secretRef(v.Cinder.SecretRef)
		case v.FlexVolume != nil:
			secretRef(v.FlexVolume.SecretRef)
		case v.RBD != nil:
			secretRef(v.RBD.SecretRef)
		case v.ISCSI != nil:
			secretRef(v.ISCSI.SecretRef)
		case v.StorageOS != nil:
			secretRef(v.StorageOS.SecretRef)
		case v.CSI != nil:
			secretRef(v.CSI.NodePublishSecretRef)
		case v.ScaleIO != nil:
			secretRef(v.ScaleIO.SecretRef)
		}
	}
	containers := func(env []corev1.EnvVar, from []corev1.EnvFromSource) {
		for _, e := range from {
			if e.ConfigMapRef != nil {
				add("ConfigMap", e.ConfigMapRef.Name)
			}
			if e.SecretRef != nil {
				add("Secret", e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom == nil {
				continue
			}
			if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
				add("ConfigMap", r.Name)
			}
			if r := e.ValueFrom.SecretKeyRef; r != nil {
				add("Secret", r.Name)
			}
		}
	}
	for _, ct := range spec.InitContainers {
		containers(ct.Env, ct.EnvFrom)
	}
	for _, ct := range spec.Containers {
		containers(ct.Env, ct.EnvFrom)
	}
	for _, ct := range spec.EphemeralContainers {
		containers(ct.Env, ct.EnvFrom)
	}
	out := map[string][]string{}
	for kind, names := range found {
		out[kind] = sortedKeys(names)
	}
	return out
}

// kube.getResourceQuantity(q) is quantity q ("100m", "1Gi", a number) as
// a number.
func (c *call) getResourceQuantity(L *lua.LState) int {
	if L.GetTop() != 1 {
		L.RaiseError("kube.getResourceQuantity takes one argument, a quantity")
	}
	q := quantity(L, "getResourceQuantity", 1)
	f := q.AsApproximateFloat64()
	if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		L.RaiseError("kube.getResourceQuantity: %s is not a finite non-negative quantity", q.String())
	}
	L.Push(lua.LNumber(f))
	return 1
}

// kube.resourceAdd(q1, q2, ...) is the sum of the quantities, nil being
// zero, as a quantity string.
func (c *call) resourceAdd(L *lua.LState) int {
	var sum resource.Quantity
	for i := 1; i <= L.GetTop(); i++ {
		sum.Add(quantity(L, "resourceAdd", i))
	}
	L.Push(lua.LString(sum.String()))
	return 1
}

func quantity(L *lua.LState, fn string, n int) resource.Quantity {
	var s string
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return resource.Quantity{}
	case lua.LString:
		s = string(v)
	case lua.LNumber:
		s = v.String()
	default:
		L.RaiseError("kube.%s: argument #%d must be a quantity string, not %s", fn, n, v.Type())
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		L.RaiseError("kube.%s: argument #%d, %q, is not a quantity: %v", fn, n, s, err)
	}
	return q
}

// pushTyped pushes a typed Go value, as its JSON form.
func (c *call) pushTyped(L *lua.LState, fn string, v any) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(v)
	if err != nil {
		L.RaiseError("kube.%s: %v", fn, err)
	}
	c.push(L, fn, u)
}

func (c *call) push(L *lua.LState, fn string, v any) {
	lv, err := c.conv.toLua(L, v)
	if err != nil {
		L.RaiseError("kube.%s: %v", fn, err)
	}
	L.Push(lv)
}

// jsonInto converts a JSON-like Go value into a typed one.
func jsonInto(v any, out any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}
