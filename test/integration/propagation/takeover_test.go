package propagation_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// memberAdminQuota creates, as the member's own admin (not Flotilla's field
// manager), the namespace and a ResourceQuota limits of 4 CPU in member1.
func memberAdminQuota(t *testing.T, ns string) {
	t.Helper()
	if err := members[member1].Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := members[member1].Create(ctx(), &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limits"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}},
	}, client.FieldOwner("member-admin")); err != nil {
		t.Fatal(err)
	}
}

// memberQuota reads member1's ResourceQuota limits: its hard cpu and
// whether Flotilla manages it.
func memberQuota(ns string) (string, bool, error) {
	rq := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "limits"}}
	if err := inMember(member1, rq); err != nil {
		return "", false, err
	}
	cpu := rq.Spec.Hard[corev1.ResourceCPU]
	return cpu.String(), rq.Labels[workv1alpha1.ManagedByLabel] == workv1alpha1.ManagedByValue, nil
}

func takenOver(ns string) func() error {
	return func() error {
		cpu, managed, err := memberQuota(ns)
		if err != nil {
			return err
		}
		if cpu != "400" || !managed {
			return fmt.Errorf("member's ResourceQuota: cpu %s, managed by Flotilla %v; want 400, true", cpu, managed)
		}
		return nil
	}
}

// TestOverwriteFromATenantPolicyNeedsTheClusterAdminsMark (threat row 15): a
// tenant's PropagationPolicy with conflictResolution Overwrite does not take
// over the member admin's ResourceQuota in the tenant's member namespace; the
// conflict is reported naming the object and the mark. Once the cluster
// admin labels the namespace, the quota is taken over.
func TestOverwriteFromATenantPolicyNeedsTheClusterAdminsMark(t *testing.T) {
	const ns = "takeover"
	namespace(t, ns, true)
	memberAdminQuota(t, ns)

	// The tenant cannot set the mark itself: TestATenantAdminCannotMarkItsNamespaceForTakeover
	// (test/integration/tenancy, where admin is aggregated as in a real cluster).

	createYAML(t, `
apiVersion: v1
kind: ResourceQuota
metadata: {name: limits, namespace: takeover}
spec: {hard: {cpu: "400"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: limits, namespace: takeover}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ResourceQuota, name: limits}]
  conflictResolution: Overwrite
`)
	rb := bindAndSchedule(t, ns, "limits", "ResourceQuota", placement(member1, 0))
	if rb.Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite {
		t.Errorf("binding spec.conflictResolution = %q, want the policy's Overwrite (copied as written)", rb.Spec.ConflictResolution)
	}
	const refused = "exists in the member and is not managed by Flotilla; conflictResolution Overwrite of PropagationPolicy takeover/limits is not honoured, it acts as Abort: taking over an object Flotilla did not create is a cluster admin's decision — a ClusterPropagationPolicy, or the label policy.flotilla.io/allow-overwrite=true on namespace takeover"
	eventually(t, "the Work applying Abort and reporting the conflict", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if w.Spec.ConflictResolution != policyv1alpha1.ConflictAbort {
			return fmt.Errorf("Work spec.conflictResolution %q, want Abort", w.Spec.ConflictResolution)
		}
		return hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonConflict, refused)
	})
	eventually(t, "the binding not FullyApplied, naming the object and the mark", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionFalse, workv1alpha1.BindingReasonNotFullyApplied,
			"not applied on member1: 1 of 1 manifests not applied: v1 ResourceQuota takeover/limits: "+refused)
	})
	consistently(t, 2*time.Second, "the member admin's ResourceQuota untouched", func() error {
		cpu, managed, err := memberQuota(ns)
		if err != nil {
			return err
		}
		if cpu != "4" || managed {
			return fmt.Errorf("member's ResourceQuota: cpu %s, managed by Flotilla %v; want 4, false", cpu, managed)
		}
		return nil
	})

	// The cluster admin marks the namespace.
	update(t, hub.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Labels[policyv1alpha1.AllowOverwriteLabel] = "true"
	})
	eventually(t, "the member's ResourceQuota taken over", takenOver(ns))
	eventually(t, "the Work applying Overwrite, the refusal gone", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if w.Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite || w.Annotations[workv1alpha1.OverwriteRefusedAnnotation] != "" {
			return fmt.Errorf("Work spec.conflictResolution %q, %s %q", w.Spec.ConflictResolution,
				workv1alpha1.OverwriteRefusedAnnotation, w.Annotations[workv1alpha1.OverwriteRefusedAnnotation])
		}
		return nil
	})
	eventually(t, "the binding FullyApplied", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionTrue, workv1alpha1.BindingReasonFullyApplied, "applied on member1")
	})
}

// TestAClusterPropagationPolicyMayTakeOver: Overwrite from a
// ClusterPropagationPolicy — the cluster admin's own policy — takes over the
// member admin's object in an unmarked namespace.
func TestAClusterPropagationPolicyMayTakeOver(t *testing.T) {
	const ns = "takeover-cluster"
	namespace(t, ns, true)
	memberAdminQuota(t, ns)
	createYAML(t, `
apiVersion: v1
kind: ResourceQuota
metadata: {name: limits, namespace: takeover-cluster}
spec: {hard: {cpu: "400"}}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: takeover-cluster-limits}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ResourceQuota, namespace: takeover-cluster, name: limits}]
  conflictResolution: Overwrite
`)
	rb := bindAndSchedule(t, ns, "limits", "ResourceQuota", placement(member1, 0))
	if _, ok := rb.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; !ok {
		t.Fatalf("binding labels %v, want the ClusterPropagationPolicy's claim", rb.Labels)
	}
	eventually(t, "the member's ResourceQuota taken over", takenOver(ns))
	w, err := work(rb, member1)
	if err != nil {
		t.Fatal(err)
	}
	if w.Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite || strings.Contains(rawJSON(w.Annotations), workv1alpha1.OverwriteRefusedAnnotation) {
		t.Errorf("Work spec.conflictResolution %q, annotations %v; want Overwrite, no refusal", w.Spec.ConflictResolution, w.Annotations)
	}
}
