package propagation_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/execution"
)

// TestConflictResolution: an object the member already has, not made by
// Flotilla, is left alone and reported under Abort, and taken over under
// Overwrite — in a namespace the cluster admin marked for takeover
// (TestOverwriteFromATenantPolicyNeedsTheClusterAdminsMark is the unmarked one).
func TestConflictResolution(t *testing.T) {
	const ns = "conflict"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: map[string]string{
		policyv1alpha1.FederatedLabel: "true", policyv1alpha1.AllowOverwriteLabel: "true"}}})
	if err := members[member1].Create(ctx(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	if err := members[member1].Create(ctx(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}, Data: map[string]string{"owner": "member"},
	}); err != nil {
		t.Fatal(err)
	}
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: existing, namespace: conflict}
data: {owner: hub}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: existing, namespace: conflict}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: existing}]
`)
	rb := bindAndSchedule(t, ns, "existing", "ConfigMap", placement(member1, 0))
	if rb.Spec.ConflictResolution != policyv1alpha1.ConflictAbort {
		t.Errorf("binding spec.conflictResolution = %q, want the policy's default Abort", rb.Spec.ConflictResolution)
	}

	eventually(t, "the Work reporting the conflict", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		if err := hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonConflict, execution.ConflictMessage); err != nil {
			return err
		}
		if len(w.Status.ManifestStatuses) != 1 || w.Status.ManifestStatuses[0].Applied || w.Status.ManifestStatuses[0].Message != execution.ConflictMessage {
			return fmt.Errorf("manifestStatuses %s", rawJSON(w.Status.ManifestStatuses))
		}
		return nil
	})
	eventually(t, "the binding not FullyApplied, naming member1", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionFalse, workv1alpha1.BindingReasonNotFullyApplied,
			"not applied on member1: 1 of 1 manifests not applied: v1 ConfigMap conflict/existing: "+execution.ConflictMessage)
	})
	eventually(t, "an ApplyFailed event on the template", func() error {
		return eventOn(ns, "existing", "ApplyFailed", execution.ConflictMessage)
	})
	memberCopy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}}
	if err := inMember(member1, memberCopy); err != nil || memberCopy.Data["owner"] != "member" {
		t.Errorf("the member's ConfigMap = %v (err %v), want it untouched (owner: member)", memberCopy.Data, err)
	}

	update(t, hub.Client, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}},
		func(p *policyv1alpha1.PropagationPolicy) {
			p.Spec.ConflictResolution = policyv1alpha1.ConflictOverwrite
		})
	eventually(t, "the member's ConfigMap taken over", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "existing"}}
		if err := inMember(member1, cm); err != nil {
			return err
		}
		if cm.Data["owner"] != "hub" || cm.Labels[workv1alpha1.ManagedByLabel] != workv1alpha1.ManagedByValue {
			return fmt.Errorf("data %v labels %v", cm.Data, cm.Labels)
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
