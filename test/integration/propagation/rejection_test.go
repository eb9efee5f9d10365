package propagation_test

import (
	"errors"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestAMemberRejectingAManifestSaysWhyAndHoldsUpNoOtherMember: member1's
// own admission denies the ConfigMap. Its Work and the binding carry
// member1's message, the template gets an ApplyFailed event, member2 holds
// the ConfigMap; once the template changes into what member1 admits, it is
// applied there.
func TestAMemberRejectingAManifestSaysWhyAndHoldsUpNoOtherMember(t *testing.T) {
	const ns, denial = "rejected", "member1 admits no ConfigMap labelled tier=forbidden"
	vap := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-tier"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: `!has(object.metadata.labels) || !('tier' in object.metadata.labels) || object.metadata.labels['tier'] != 'forbidden'`,
				Message:    denial,
			}},
		},
	}
	vapBinding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "no-forbidden-tier"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName: "no-forbidden-tier", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if err := members[member1].Create(ctx(), vap); err != nil {
		t.Fatal(err)
	}
	if err := members[member1].Create(ctx(), vapBinding); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = members[member1].Delete(ctx(), vapBinding)
		_ = members[member1].Delete(ctx(), vap)
	})
	eventually(t, "member1's policy in force", func() error {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "probe", Labels: map[string]string{"tier": "forbidden"}}}
		err := members[member1].Create(ctx(), probe)
		if err == nil {
			_ = members[member1].Delete(ctx(), probe)
			return errForbiddenNotYet
		}
		return nil
	})

	namespace(t, ns, true)
	createYAML(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: rejected, labels: {tier: forbidden}}
data: {k: v}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: everywhere, namespace: rejected}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0, member2, 0))
	eventually(t, "settings in member2", func() error {
		return inMember(member2, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
	})
	eventually(t, "member1's Work carries its denial", func() error {
		w, err := work(rb, member1)
		if err != nil {
			return err
		}
		return hasCondition(w, workv1alpha1.WorkApplied, metav1.ConditionFalse, workv1alpha1.WorkReasonApplyFailed, denial)
	})
	eventually(t, "the binding carries member1's denial", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx(), keyOf(rb), b); err != nil {
			return err
		}
		return hasCondition(b, workv1alpha1.ConditionFullyApplied, metav1.ConditionFalse, "NotFullyApplied", "not applied on member1: ")
	})
	eventually(t, "an ApplyFailed event on the template", func() error { return eventOn(ns, "settings", "ApplyFailed", denial) })

	update(t, hub.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, func(cm *corev1.ConfigMap) {
		cm.Labels["tier"] = "allowed"
	})
	eventually(t, "the changed template applied in member1 at once, whatever the backoff", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		if err := inMember(member1, cm); err != nil {
			return err
		}
		if cm.Labels["tier"] != "allowed" {
			return errForbiddenNotYet
		}
		return nil
	})
}

var errForbiddenNotYet = errors.New("not yet")
