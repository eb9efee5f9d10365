package binding

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// WorkName is the name of a binding's Work in each member's execution
// namespace: "<namespace>.<name>" of the binding (just "<name>" for a
// ClusterResourceBinding), cut to fit, and a hash of the binding's kind,
// namespace and name, so that two bindings never share a Work whatever
// their names.
func WorkName(bindingKind, namespace, name string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(bindingKind + "/" + namespace + "/" + name))
	suffix := fmt.Sprintf("-%08x", h.Sum32())
	base := name
	if namespace != "" {
		base = namespace + "." + name
	}
	const maxName = 253
	if len(base) > maxName-len(suffix) {
		base = strings.TrimRight(base[:maxName-len(suffix)], ".-")
	}
	return base + suffix
}

// serverSetMetadata are the metadata fields the hub's API server wrote; a
// member's API server writes its own.
var serverSetMetadata = []string{
	"uid", "resourceVersion", "managedFields", "creationTimestamp", "generation",
	"ownerReferences", "finalizers", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds",
}

// hubOnlyAnnotations are annotations that describe the hub's copy: the
// policy claim, kubectl's record of what was applied to the hub, and what
// the hub's own controllers write (a member's controllers write their own;
// applying the hub's would fight them).
var hubOnlyAnnotations = []string{
	policyv1alpha1.PropagationPolicyNamespaceAnnotation,
	policyv1alpha1.PropagationPolicyNameAnnotation,
	policyv1alpha1.ClusterPropagationPolicyNameAnnotation,
	"kubectl.kubernetes.io/last-applied-configuration",
	"deployment.kubernetes.io/revision",
	"deprecated.daemonset.template.generation",
}

var hubOnlyLabels = []string{
	policyv1alpha1.PropagationPolicyPermanentIDLabel,
	policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel,
}

// jobControllerLabels are the labels the hub's API server adds to a Job's
// pod template (and selector) from the hub Job's UID: meaningless in a member.
var jobControllerLabels = []string{"controller-uid", "batch.kubernetes.io/controller-uid", "job-name", "batch.kubernetes.io/job-name"}

// Strip removes from a copy of a hub object everything the hub's API server
// and controllers set, so that the member's API server accepts it as new:
// status, server-set metadata, the policy claim, and values allocated by
// the hub (a Service's cluster IPs and node ports, a Job's generated
// selector, a ServiceAccount's token Secrets).
func Strip(obj *unstructured.Unstructured) *unstructured.Unstructured {
	out := obj.DeepCopy()
	delete(out.Object, "status")
	for _, f := range serverSetMetadata {
		unstructured.RemoveNestedField(out.Object, "metadata", f)
	}
	removeKeys(out, hubOnlyLabels, out.GetLabels, out.SetLabels)
	removeKeys(out, hubOnlyAnnotations, out.GetAnnotations, out.SetAnnotations)

	switch out.GroupVersionKind().GroupKind() {
	case schema.GroupKind{Kind: "Service"}:
		if ip, _, _ := unstructured.NestedString(out.Object, "spec", "clusterIP"); ip != "None" {
			unstructured.RemoveNestedField(out.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(out.Object, "spec", "clusterIPs")
		}
		unstructured.RemoveNestedField(out.Object, "spec", "healthCheckNodePort")
		if ports, found, _ := unstructured.NestedSlice(out.Object, "spec", "ports"); found {
			for _, p := range ports {
				if m, ok := p.(map[string]any); ok {
					delete(m, "nodePort")
				}
			}
			_ = unstructured.SetNestedSlice(out.Object, ports, "spec", "ports")
		}
	case schema.GroupKind{Group: "batch", Kind: "Job"}:
		if manual, _, _ := unstructured.NestedBool(out.Object, "spec", "manualSelector"); !manual {
			unstructured.RemoveNestedField(out.Object, "spec", "selector")
			labels, _, _ := unstructured.NestedStringMap(out.Object, "spec", "template", "metadata", "labels")
			for _, k := range jobControllerLabels {
				delete(labels, k)
			}
			if len(labels) == 0 {
				unstructured.RemoveNestedField(out.Object, "spec", "template", "metadata", "labels")
			} else {
				_ = unstructured.SetNestedStringMap(out.Object, labels, "spec", "template", "metadata", "labels")
			}
		}
	case schema.GroupKind{Kind: "ServiceAccount"}:
		delete(out.Object, "secrets")
	}
	return out
}

func removeKeys(obj *unstructured.Unstructured, keys []string, get func() map[string]string, set func(map[string]string)) {
	m := get()
	if len(m) == 0 {
		return
	}
	for _, k := range keys {
		delete(m, k)
	}
	if len(m) == 0 {
		m = nil
	}
	set(m)
}

// manifestsOf encodes objects as Work manifests.
func manifestsOf(objs []*unstructured.Unstructured) ([]workv1alpha1.Manifest, error) {
	out := make([]workv1alpha1.Manifest, 0, len(objs))
	for _, o := range objs {
		raw, err := json.Marshal(o.Object)
		if err != nil {
			return nil, fmt.Errorf("encode %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		out = append(out, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: raw}})
	}
	return out, nil
}

// dispatchSuspended reports whether the binding suspends dispatching to member.
func dispatchSuspended(s *workv1alpha1.Suspension, member string) bool {
	if s == nil {
		return false
	}
	if s.Dispatching != nil && *s.Dispatching {
		return true
	}
	return s.DispatchingOnClusters != nil && slices.Contains(s.DispatchingOnClusters.ClusterNames, member)
}

// WorksByBindingIndex indexes Works by the permanent ID of the binding they
// were made for (BindingPermanentIDLabel). The render and aggregate phases
// read a binding's Works on every change of it or of one of them; a label
// selector on the cache would scan every cached Work (30,000 in a fleet of
// 10,000 bindings on three members) each time.
const WorksByBindingIndex = "work.flotilla.io/binding-permanent-id"

// IndexWorksByBinding registers WorksByBindingIndex with indexer (a
// manager's), once however often it is called: the render and aggregate
// phases each call it as they are set up, alone or together.
func IndexWorksByBinding(ctx context.Context, indexer client.FieldIndexer) error {
	if _, done := worksIndexed.LoadOrStore(indexer, true); done {
		return nil
	}
	if err := indexer.IndexField(ctx, &workv1alpha1.Work{}, WorksByBindingIndex, bindingIDOfWork); err != nil {
		worksIndexed.Delete(indexer)
		return fmt.Errorf("index Works by binding: %w", err)
	}
	return nil
}

// worksIndexed holds the indexers IndexWorksByBinding has registered with.
var worksIndexed sync.Map

func bindingIDOfWork(o client.Object) []string {
	if id := o.GetLabels()[workv1alpha1.BindingPermanentIDLabel]; id != "" {
		return []string{id}
	}
	return nil
}

// listWorksOf lists the Works made for the binding of that permanent ID.
func listWorksOf(ctx context.Context, c client.Reader, id string) (*workv1alpha1.WorkList, error) {
	works := &workv1alpha1.WorkList{}
	if err := c.List(ctx, works, client.MatchingFields{WorksByBindingIndex: id}); err != nil {
		return nil, err
	}
	return works, nil
}
