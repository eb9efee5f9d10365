package propagation_test

import (
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestOverridersChangeOnlyTheTargetedMember: an image overrider, a labels
// overrider and a field overrider on a ConfigMap's embedded YAML, all aimed
// at member2, leave member1's copies as the templates are.
func TestOverridersChangeOnlyTheTargetedMember(t *testing.T) {
	const ns = "overrides"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: api, namespace: overrides, labels: {app: api}}
spec:
  replicas: 2
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers: [{name: api, image: registry.k8s.io/pause:3.10}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: overrides}
data:
  config.yaml: |
    log:
      level: info
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: api, namespace: overrides}
spec:
  resourceSelectors:
  - {apiVersion: apps/v1, kind: Deployment, name: api}
  - {apiVersion: v1, kind: ConfigMap, name: settings}
  placement:
    clusterAffinity: {clusterNames: [member1, member2]}
    replicaScheduling: {replicaSchedulingType: Duplicated}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: api-on-member2, namespace: overrides}
spec:
  resourceSelectors: [{apiVersion: apps/v1, kind: Deployment, name: api}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      imageOverrider: [{component: Registry, operator: replace, value: mirror.example.com}]
      labelsOverrider: [{operator: add, value: {tier: edge}}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: settings-on-member2, namespace: overrides}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
  overrideRules:
  - targetCluster: {labelSelector: {matchLabels: {fleet.example/name: member2}}}
    overriders:
      fieldOverrider:
      - fieldPath: /data/config.yaml
        yaml: [{subPath: /log/level, operator: replace, value: debug}]
`)
	bindAndSchedule(t, ns, "api", "Deployment", placement(member1, 2, member2, 2))
	bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0, member2, 0))

	want := map[string]struct{ image, tier, level string }{
		member1: {"registry.k8s.io/pause:3.10", "", "level: info"},
		member2: {"mirror.example.com/pause:3.10", "edge", "level: debug"},
	}
	for m, w := range want {
		eventually(t, "the overridden Deployment and ConfigMap in "+m, func() error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}}
			if err := inMember(m, d); err != nil {
				return err
			}
			if got := d.Spec.Template.Spec.Containers[0].Image; got != w.image {
				return fmt.Errorf("image %q, want %q", got, w.image)
			}
			if got := d.Labels["tier"]; got != w.tier {
				return fmt.Errorf("label tier %q, want %q", got, w.tier)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
			if err := inMember(m, cm); err != nil {
				return err
			}
			if got := cm.Data["config.yaml"]; !strings.Contains(got, w.level) {
				return fmt.Errorf("config.yaml %q, want it to contain %q", got, w.level)
			}
			return nil
		})
	}
}

// TestAFailingOverrideIsReportedOnTheBindingAndTheTemplate: an override
// that cannot apply keeps the member's Work as it was and says why.
func TestAFailingOverrideIsReportedOnTheBindingAndTheTemplate(t *testing.T) {
	const ns = "broken-override"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: plain, namespace: broken-override}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: plain, namespace: broken-override}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: plain}]
`)
	rb := bindAndSchedule(t, ns, "plain", "ConfigMap", placement(member1, 0))
	eventually(t, "the ConfigMap in member1", func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"}})
	})
	create(t, &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "missing-path"},
		Spec: policyv1alpha1.OverrideSpec{OverrideRules: []policyv1alpha1.RuleWithCluster{{
			Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
				Path: "/data/b", Operator: policyv1alpha1.OverriderOpReplace, Value: apiextensionsv1.JSON{Raw: []byte(`"2"`)},
			}}},
		}}},
	})
	const message = "member member1: OverridePolicy broken-override/missing-path rule 0 plaintext[0]: path /data/b does not exist"
	eventually(t, "Rendered=False OverrideFailed on the binding", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		return hasCondition(rb, "Rendered", metav1.ConditionFalse, "OverrideFailed", message)
	})
	eventually(t, "an OverrideFailed event on the template", func() error {
		return eventOn(ns, "plain", "OverrideFailed", message)
	})
}

// TestAnOverrideRuleNamingANonMemberIsNamedOnTheBinding: a rule whose
// targetCluster names a cluster that is not a member never applies; the
// binding's Rendered message says which name, and the Works are written.
func TestAnOverrideRuleNamingANonMemberIsNamedOnTheBinding(t *testing.T) {
	const ns = "misspelt-override"
	namespace(t, ns, true)
	createYAML(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: misspelt-override}
data: {level: info}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: settings, namespace: misspelt-override}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: OverridePolicy
metadata: {name: debug-on-memebr2, namespace: misspelt-override}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: settings}]
  overrideRules:
  - targetCluster: {clusterNames: [memebr2]}
    overriders:
      plaintext: [{path: /data/level, operator: replace, value: debug}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0, member2, 0))
	eventually(t, "the binding names the rule's unknown cluster", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx(), keyOf(rb), b); err != nil {
			return err
		}
		return hasCondition(b, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered,
			"OverridePolicy misspelt-override/debug-on-memebr2: overrideRules[0].targetCluster.clusterNames names memebr2, which is not a member of the fleet")
	})
	eventually(t, "settings unchanged in member2", func() error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		if err := inMember(member2, cm); err != nil {
			return err
		}
		if cm.Data["level"] != "info" {
			return fmt.Errorf("level %q, want info", cm.Data["level"])
		}
		return nil
	})
}
