package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Quota key prefixes and names, as a ResourceQuota spells them.
const (
	requestsPrefix = "requests."
	limitsPrefix   = "limits."
	countPrefix    = "count/"
)

// Workload is what a binding asks of quota: its template's kind, one
// replica's requirements and where it is placed (spec.clusters).
type Workload struct {
	APIVersion, Kind string
	// Requirements of one replica; nil asks for nothing but the replica.
	Requirements *workv1alpha1.ReplicaRequirements
	// Clusters is the placement; empty while the binding is unscheduled.
	Clusters []workv1alpha1.TargetCluster
}

// WorkloadOf reads a binding's spec.
func WorkloadOf(spec *workv1alpha1.ResourceBindingSpec) Workload {
	return Workload{
		APIVersion:   spec.Resource.APIVersion,
		Kind:         spec.Resource.Kind,
		Requirements: spec.ReplicaRequirements,
		Clusters:     spec.Clusters,
	}
}

// Replicas is the workload's replicas summed over its members: for a
// Duplicated placement every member's copy counts.
func (w Workload) Replicas() int64 {
	var n int64
	for _, c := range w.Clusters {
		n += int64(c.Replicas)
	}
	return n
}

// Usage is what a workload takes of a namespace's quota, for every key a
// ResourceQuota knows that the workload touches (absent keys are zero):
//
//   - requests of one replica × replicas under both `<name>` and
//     `requests.<name>`: cpu, memory, ephemeral-storage, hugepages-*, and
//     extended resources such as nvidia.com/gpu;
//   - limits of one replica × replicas under `limits.<name>`;
//   - `pods`: the replicas;
//   - `count/<resource>[.<group>]` (e.g. count/deployments.apps), and the
//     legacy object-count names of core kinds (configmaps, secrets,
//     services…): 1 per placed binding, whatever its replicas or members —
//     it is one template of the fleet, not one object per member.
//
// An unscheduled workload (no clusters) uses nothing.
func Usage(w Workload) corev1.ResourceList {
	out := corev1.ResourceList{}
	if len(w.Clusters) == 0 {
		return out
	}
	addPods(out, w.Replicas(), w.Requirements)
	for _, key := range countKeys(w.APIVersion, w.Kind) {
		out[key] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	return out
}

// addPods adds n Pods of requirements r to out: `pods`, each request under
// `<name>` and `requests.<name>`, each limit under `limits.<name>`.
func addPods(out corev1.ResourceList, n int64, r *workv1alpha1.ReplicaRequirements) {
	if n <= 0 {
		return
	}
	add(out, corev1.ResourcePods, *resource.NewQuantity(n, resource.DecimalSI))
	if r == nil {
		return
	}
	for name, q := range r.ResourceRequest {
		if name == corev1.ResourcePods {
			continue
		}
		v := times(q, n)
		add(out, name, v)
		add(out, corev1.ResourceName(requestsPrefix+string(name)), v)
	}
	for name, q := range r.ResourceLimits {
		add(out, corev1.ResourceName(limitsPrefix+string(name)), times(q, n))
	}
}

// add adds q to out's key.
func add(out corev1.ResourceList, key corev1.ResourceName, q resource.Quantity) {
	sum, ok := out[key]
	if !ok {
		out[key] = q.DeepCopy()
		return
	}
	sum.Add(q)
	out[key] = sum
}

// times is q × n, exact.
func times(q resource.Quantity, n int64) resource.Quantity {
	v := q.DeepCopy()
	v.Mul(n)
	return v
}

// legacyCountKeys are the object-count names a ResourceQuota accepts
// without the count/ prefix, for core kinds a template can be.
var legacyCountKeys = map[string]corev1.ResourceName{
	"ConfigMap":             corev1.ResourceConfigMaps,
	"Secret":                corev1.ResourceSecrets,
	"Service":               corev1.ResourceServices,
	"ReplicationController": corev1.ResourceReplicationControllers,
	"PersistentVolumeClaim": corev1.ResourcePersistentVolumeClaims,
	"ResourceQuota":         corev1.ResourceQuotas,
}

// countKeys are the object-count keys of a kind: count/<resource>.<group>
// (no group for the core API), the resource guessed from the kind as
// kubectl does without discovery (Deployment → deployments, NetworkPolicy
// → networkpolicies), and the legacy name of core kinds.
func countKeys(apiVersion, kind string) []corev1.ResourceName {
	if kind == "" {
		return nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil
	}
	plural, _ := meta.UnsafeGuessKindToResource(gv.WithKind(kind))
	key := countPrefix + plural.Resource
	if gv.Group != "" {
		key += "." + gv.Group
	}
	keys := []corev1.ResourceName{corev1.ResourceName(key)}
	if legacy, ok := legacyCountKeys[kind]; ok && gv.Group == "" {
		keys = append(keys, legacy)
	}
	return keys
}

// Add returns a + b, key by key.
func Add(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		sum := out[name]
		sum.Add(q)
		out[name] = sum
	}
	return out
}

// Subtract returns a - b, key by key; keys that reach zero are dropped.
func Subtract(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		diff := out[name]
		diff.Sub(q)
		if diff.IsZero() {
			delete(out, name)
			continue
		}
		out[name] = diff
	}
	return out
}

// Max returns the larger of a and b, key by key.
func Max(a, b corev1.ResourceList) corev1.ResourceList {
	out := a.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range b {
		if have, ok := out[name]; !ok || q.Cmp(have) > 0 {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// Equal reports whether a and b hold the same amounts (absent = zero).
func Equal(a, b corev1.ResourceList) bool {
	return lessOrEqual(a, b) && lessOrEqual(b, a)
}

func lessOrEqual(a, b corev1.ResourceList) bool {
	for name, q := range a {
		have := b[name]
		if q.Cmp(have) > 0 {
			return false
		}
	}
	return true
}

// Decreased reports whether some key of after is less than in before.
func Decreased(before, after corev1.ResourceList) bool {
	return !lessOrEqual(before, after)
}

// Only keeps the keys of list named in keys, with zero for those absent.
func Only(list, keys corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for name := range keys {
		q, ok := list[name]
		if !ok {
			q = *resource.NewQuantity(0, keys[name].Format)
		}
		out[name] = q.DeepCopy()
	}
	return out
}
