package propagation_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TestRemovingTheFederatedLabelKeepsWhatRunsInMembers: removing a
// namespace's federated label deletes nothing in members; the policy says
// why nothing new propagates; the label back, changes flow again.
func TestRemovingTheFederatedLabelKeepsWhatRunsInMembers(t *testing.T) {
	const ns = "unfederated"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: unfederated}
data: {version: v1}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: settings, namespace: unfederated}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0))
	version := func() (string, error) {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		if err := inMember(member1, cm); err != nil {
			return "", err
		}
		return cm.Data["version"], nil
	}
	want := func(v string) func() error {
		return func() error {
			got, err := version()
			if err != nil {
				return err
			}
			if got != v {
				return fmt.Errorf("member1 has version %q, want %q", got, v)
			}
			return nil
		}
	}
	eventually(t, "v1 in member1", want("v1"))

	update(t, hub.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		delete(n.Labels, policyv1alpha1.FederatedLabel)
	})
	eventually(t, "the policy says its namespace is not federated and what is kept", func() error {
		pp := &policyv1alpha1.PropagationPolicy{}
		if err := hub.Client.Get(ctx(), keyOf(&policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}), pp); err != nil {
			return err
		}
		return hasCondition(pp, policyv1alpha1.ConditionPropagating, metav1.ConditionFalse, policyv1alpha1.NamespaceNotFederatedReason, "kept as it is")
	})
	update(t, hub.Client, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}, func(cm *corev1.ConfigMap) {
		cm.Data["version"] = "v2"
	})
	eventually(t, "an event on the template says it stays on the hub", func() error {
		return eventOn(ns, "settings", policyv1alpha1.NamespaceNotFederatedReason, "not federated")
	})
	consistently(t, 3*time.Second, "member1 keeps v1, its binding and its Work", func() error {
		if err := want("v1")(); err != nil {
			return err
		}
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		_, err := work(rb, member1)
		return err
	})

	update(t, hub.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Labels = map[string]string{policyv1alpha1.FederatedLabel: "true"}
	})
	eventually(t, "v2 in member1 once the label is back", want("v2"))
}
