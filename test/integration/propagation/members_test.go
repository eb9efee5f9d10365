package propagation_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// TestAMemberThatDoesNotServeTheKindSaysSo: a custom resource whose CRD
// exists only on the hub is not applied, and the Work and the binding say
// which kind the member lacks.
func TestAMemberThatDoesNotServeTheKindSaysSo(t *testing.T) {
	const ns = "widgets"
	hubCRD(t, "Widget", "widgets")
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: widgets}
spec: {size: 3}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: widgets, namespace: widgets}
spec:
  resourceSelectors: [{apiVersion: example.com/v1, kind: Widget}]
`)
	rb := bindAndSchedule(t, ns, "w1", "Widget", placement(member1, 0))

	const message = "the member does not serve example.com/v1, Kind=Widget"
	eventually(t, "the Work Applied=False APINotEnabled", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if err := hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonAPINotEnabled, message); err != nil {
			return err
		}
		if st := w.Status.ManifestStatuses; len(st) != 1 || st[0].Applied || st[0].Message != message || st[0].Identifier.Kind != "Widget" {
			return fmt.Errorf("manifestStatuses %s", rawJSON(st))
		}
		return nil
	})
	eventually(t, "the binding naming member1 and the missing kind", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionFalse, workv1alpha1.BindingReasonNotFullyApplied,
			"not applied on member1: 1 of 1 manifests not applied: example.com/v1 Widget widgets/w1: "+message)
	})
}

// TestAnEnvelopeDeliversItsContentsToMembersOnly: what the hub's inert
// namespace refuses (a PersistentVolumeClaim, a NodePort Service) travels
// inside a ConfigMap and is created in the member, in the envelope's
// namespace, never on the hub; the ConfigMap itself stays on the hub.
func TestAnEnvelopeDeliversItsContentsToMembersOnly(t *testing.T) {
	const ns = "envelopes"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: storage
  namespace: envelopes
  labels: {flotilla.io/envelope: "true"}
data:
  claim.yaml: |
    apiVersion: v1
    kind: PersistentVolumeClaim
    metadata: {name: data, namespace: envelopes}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 1Gi}}
  service.yaml: |
    apiVersion: v1
    kind: Service
    metadata: {name: edge}
    spec:
      type: NodePort
      ports: [{port: 80}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: storage, namespace: envelopes}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: storage}]
`)
	rb := bindAndSchedule(t, ns, "storage", "ConfigMap", placement(member1, 0))
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "data"}}
	eventually(t, "the PersistentVolumeClaim in member1", func() error { return inMember(member1, pvc) })
	// A manifest that names no namespace goes into the envelope's.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "edge"}}
	eventually(t, "the NodePort Service in member1, in the envelope's namespace", func() error { return inMember(member1, svc) })
	if svc.Spec.Type != corev1.ServiceTypeNodePort {
		t.Errorf("Service type %s", svc.Spec.Type)
	}
	if err := goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "storage"}}); err != nil {
		t.Errorf("the envelope itself reached the member: %v", err)
	}
	for _, obj := range []client.Object{&corev1.PersistentVolumeClaim{}, &corev1.Service{}} {
		key := client.ObjectKey{Namespace: ns, Name: "data"}
		if _, ok := obj.(*corev1.Service); ok {
			key.Name = "edge"
		}
		if err := hub.Client.Get(ctx(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s on the hub: %v, want NotFound", obj, key, err)
		}
	}
	eventually(t, "Rendered=True", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered, "")
	})
}

// TestAClusterScopedTemplateGoesThroughAClusterResourceBinding.
func TestAClusterScopedTemplateGoesThroughAClusterResourceBinding(t *testing.T) {
	createYAML(t, `
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: flotilla-test-reader}
rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: readers}
spec:
  resourceSelectors: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, name: flotilla-test-reader}]
`)
	crb := &workv1alpha1.ClusterResourceBinding{}
	eventually(t, "the ClusterResourceBinding", func() error {
		return hub.Client.Get(ctx(), client.ObjectKey{Name: "flotilla-test-reader-clusterrole"}, crb)
	})
	update(t, hub.Client, crb, func(b *workv1alpha1.ClusterResourceBinding) { b.Spec.Clusters = placement(member2, 0) })
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "flotilla-test-reader"}}
	eventually(t, "the ClusterRole in member2", func() error { return inMember(member2, role) })
	w := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(member2), Name: binding.WorkName(binding.KindClusterResourceBinding, "", crb.Name)}
	if err := hub.Client.Get(ctx(), key, w); err != nil {
		t.Errorf("the Work %s: %v", key, err)
	}
}

// TestSuspendedDispatchingLeavesTheMemberAlone.
func TestSuspendedDispatchingLeavesTheMemberAlone(t *testing.T) {
	const ns = "suspended"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: paused, namespace: suspended}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: paused, namespace: suspended}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: paused}]
  suspension:
    dispatchingOnClusters: {clusterNames: [member2]}
`)
	rb := bindAndSchedule(t, ns, "paused", "ConfigMap", placement(member1, 0, member2, 0))
	eventually(t, "member2's Work suspended", func() error {
		w, err := work(rb, member2)
		if err != nil {
			return err
		}
		if !ptr.Deref(w.Spec.SuspendDispatching, false) {
			return fmt.Errorf("spec.suspendDispatching not set")
		}
		return hasCondition(w, workv1alpha1.WorkDispatching, metav1.ConditionFalse, workv1alpha1.WorkReasonSuspended, "")
	})
	eventually(t, "the ConfigMap in member1", func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paused"}})
	})
	consistently(t, settle, "no ConfigMap in member2", func() error {
		return goneFromMember(member2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paused"}})
	})
}

// TestAGracefullyEvictedMemberKeepsItsWorkUntilTheTaskIsRemoved.
func TestAGracefullyEvictedMemberKeepsItsWorkUntilTheTaskIsRemoved(t *testing.T) {
	const ns = "eviction"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: moving, namespace: eviction}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: moving, namespace: eviction}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: moving}]
`)
	rb := bindAndSchedule(t, ns, "moving", "ConfigMap", placement(member1, 0, member2, 0))
	inMember2 := func() error {
		return inMember(member2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moving"}})
	}
	eventually(t, "the ConfigMap in member2", inMember2)

	update(t, hub.Client, rb, func(b *workv1alpha1.ResourceBinding) {
		b.Spec.Clusters = placement(member1, 0)
		b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: member2, Reason: "TaintUntolerated", Producer: "test"}}
	})
	consistently(t, time.Second, "member2 keeps its Work and ConfigMap", func() error {
		if _, err := work(rb, member2); err != nil {
			return err
		}
		return inMember2()
	})

	update(t, hub.Client, rb, func(b *workv1alpha1.ResourceBinding) { b.Spec.GracefulEvictionTasks = nil })
	eventually(t, "member2's Work and ConfigMap gone", func() error {
		if _, err := work(rb, member2); !apierrors.IsNotFound(err) {
			return fmt.Errorf("Work: %v", err)
		}
		return goneFromMember(member2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "moving"}})
	})
}
