package propagation_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
)

// Envelopes of both kinds: a ClusterResourceEnvelope is a cluster admin's
// and carries objects of any scope and namespace; a ConfigMap envelope is
// namespaced and stays confined to its namespace whichever policy selects it.

// TestAClusterResourceEnvelopeCarriesHubActingObjectsToMembersOnly: a
// ClusterPropagationPolicy selects a ClusterResourceEnvelope carrying a
// ValidatingWebhookConfiguration, a CRD and a ConfigMap of a namespace the
// hub does not have. Its ClusterResourceBinding renders the three — after a
// ClusterOverridePolicy aimed at member2 — into each member's Work in place
// of the envelope; they are created in both members and none of them on
// the hub; the binding reports each member applied.
func TestAClusterResourceEnvelopeCarriesHubActingObjectsToMembersOnly(t *testing.T) {
	createYAML(t, `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: admission-guard}
data:
  1-webhook:
    apiVersion: admissionregistration.k8s.io/v1
    kind: ValidatingWebhookConfiguration
    metadata: {name: guard-gadgets}
    webhooks:
    - name: gadgets.guard.example.com
      admissionReviewVersions: [v1]
      sideEffects: None
      failurePolicy: Ignore
      clientConfig: {url: "https://guard.example.invalid/validate"}
      rules:
      - {apiGroups: [guard.example.com], apiVersions: [v1], operations: [CREATE], resources: [gadgets]}
  2-crd:
    apiVersion: apiextensions.k8s.io/v1
    kind: CustomResourceDefinition
    metadata: {name: gadgets.guard.example.com}
    spec:
      group: guard.example.com
      scope: Namespaced
      names: {plural: gadgets, singular: gadget, kind: Gadget, listKind: GadgetList}
      versions:
      - name: v1
        served: true
        storage: true
        schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
  3-settings:
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: guard-settings, namespace: guard-system}
    data: {mode: fleet}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: admission-guard}
spec:
  resourceSelectors: [{apiVersion: policy.flotilla.io/v1alpha1, kind: ClusterResourceEnvelope, name: admission-guard}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterOverridePolicy
metadata: {name: admission-guard-on-member2}
spec:
  resourceSelectors: [{apiVersion: policy.flotilla.io/v1alpha1, kind: ClusterResourceEnvelope, name: admission-guard}]
  overrideRules:
  - targetCluster: {clusterNames: [member2]}
    overriders:
      plaintext: [{path: /data/3-settings/data/mode, operator: replace, value: member2}]
`)
	crb := &workv1alpha1.ClusterResourceBinding{}
	eventually(t, "the ClusterResourceBinding of the envelope", func() error {
		return hub.Client.Get(ctx(), client.ObjectKey{Name: "admission-guard-clusterresourceenvelope"}, crb)
	})
	update(t, hub.Client, crb, func(b *workv1alpha1.ClusterResourceBinding) { b.Spec.Clusters = placement(member1, 0, member2, 0) })

	for member, mode := range map[string]string{member1: "fleet", member2: "member2"} {
		eventually(t, "the envelope's contents in "+member, func() error {
			if err := inMember(member, &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard-gadgets"}}); err != nil {
				return err
			}
			if err := inMember(member, &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.guard.example.com"}}); err != nil {
				return err
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "guard-system", Name: "guard-settings"}}
			if err := inMember(member, cm); err != nil {
				return err
			}
			if cm.Data["mode"] != mode {
				return fmt.Errorf("ConfigMap guard-system/guard-settings mode %q, want %q", cm.Data["mode"], mode)
			}
			return nil
		})

		// The Work carries the contents in key order, never the envelope.
		w := &workv1alpha1.Work{}
		key := client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: binding.WorkName(binding.KindClusterResourceBinding, "", crb.Name)}
		if err := hub.Client.Get(ctx(), key, w); err != nil {
			t.Fatalf("the Work %s: %v", key, err)
		}
		var kinds []string
		for _, m := range w.Spec.Workload.Manifests {
			u := &unstructured.Unstructured{}
			if err := json.Unmarshal(m.Raw, &u.Object); err != nil {
				t.Fatal(err)
			}
			kinds = append(kinds, u.GetKind())
		}
		if want := []string{"ValidatingWebhookConfiguration", "CustomResourceDefinition", "ConfigMap"}; !slices.Equal(kinds, want) {
			t.Errorf("Work %s carries %v, want %v", key, kinds, want)
		}
	}

	// Nothing of it acts on the hub.
	for _, obj := range []client.Object{
		&admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "guard-gadgets"}},
		&apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "gadgets.guard.example.com"}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "guard-system"}},
	} {
		if err := hub.Client.Get(ctx(), keyOf(obj), obj); err == nil {
			t.Errorf("%T %s exists on the hub", obj, keyOf(obj))
		} else if client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	}

	eventually(t, "the binding rendered and fully applied, per member", func() error {
		if err := hub.Client.Get(ctx(), keyOf(crb), crb); err != nil {
			return err
		}
		if err := hasCondition(crb, workv1alpha1.ConditionRendered, metav1.ConditionTrue, workv1alpha1.BindingReasonRendered, ""); err != nil {
			return err
		}
		if err := hasCondition(crb, workv1alpha1.ConditionFullyApplied, metav1.ConditionTrue, workv1alpha1.BindingReasonFullyApplied, "applied on member1, member2"); err != nil {
			return err
		}
		if len(crb.Status.AggregatedStatus) != 2 {
			return fmt.Errorf("aggregatedStatus %s, want an item per member", rawJSON(crb.Status.AggregatedStatus))
		}
		for _, item := range crb.Status.AggregatedStatus {
			if !item.Applied || item.Health != workv1alpha1.ResourceHealthy {
				return fmt.Errorf("member %s: applied %v, health %s, want applied and Healthy", item.ClusterName, item.Applied, item.Health)
			}
		}
		return nil
	})
}

// TestANamespacedEnvelopeSelectedByAClusterPropagationPolicyIsStillConfined:
// a ClusterPropagationPolicy selecting a tenant's ConfigMap envelope makes
// a ResourceBinding (the template is namespaced), and what it renders obeys
// the tenancy rule: the ClusterRole and the other namespace's ConfigMap the
// tenant put in it never reach the member; its own ConfigMap does.
func TestANamespacedEnvelopeSelectedByAClusterPropagationPolicyIsStillConfined(t *testing.T) {
	const ns = "cpp-envelope"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata:
  name: smuggle
  namespace: cpp-envelope
  labels: {flotilla.io/envelope: "true"}
data:
  1-clusterrole.yaml: |
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: smuggled-everything}
    rules: [{apiGroups: ["*"], resources: ["*"], verbs: ["*"]}]
  2-elsewhere.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: planted, namespace: kube-public}
  3-own.yaml: |
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: own-settings}
    data: {mode: fleet}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterPropagationPolicy
metadata: {name: cpp-envelope}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, namespace: cpp-envelope, name: smuggle}]
`)
	rb := bindAndSchedule(t, ns, "smuggle", "ConfigMap", placement(member1, 0))
	if _, ok := rb.Labels[policyv1alpha1.ClusterPropagationPolicyPermanentIDLabel]; !ok {
		t.Fatalf("binding labels %v, want the ClusterPropagationPolicy's claim", rb.Labels)
	}
	eventually(t, "Rendered=False ForbiddenObject naming the ClusterRole and the other namespace's ConfigMap", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil {
			return err
		}
		for _, m := range []string{
			"member member1: rbac.authorization.k8s.io/v1 ClusterRole smuggled-everything is not rendered: a ResourceBinding renders only namespaced objects",
			"member member1: v1 ConfigMap kube-public/planted is not rendered: a ResourceBinding renders only into its own namespace cpp-envelope",
		} {
			if err := hasCondition(rb, workv1alpha1.ConditionRendered, metav1.ConditionFalse, workv1alpha1.BindingReasonForbiddenObject, m); err != nil {
				return err
			}
		}
		return nil
	})
	eventually(t, "the envelope's own ConfigMap in member1", func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own-settings"}})
	})
	consistently(t, settle, "neither the ClusterRole nor kube-public's ConfigMap in member1", func() error {
		if err := goneFromMember(member1, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "smuggled-everything"}}); err != nil {
			return err
		}
		return goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-public", Name: "planted"}})
	})
}

// TestAPropagationPolicyCannotSelectAClusterResourceEnvelope: a tenant's
// PropagationPolicy naming a ClusterResourceEnvelope selects nothing — the
// kind is cluster-scoped — and says so in its Propagating condition; the
// envelope gets no binding.
func TestAPropagationPolicyCannotSelectAClusterResourceEnvelope(t *testing.T) {
	const ns = "pp-envelope"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: policy.flotilla.io/v1alpha1
kind: ClusterResourceEnvelope
metadata: {name: not-for-tenants}
data:
  role:
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: not-for-tenants}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: reach-out, namespace: pp-envelope}
spec:
  resourceSelectors: [{apiVersion: policy.flotilla.io/v1alpha1, kind: ClusterResourceEnvelope, name: not-for-tenants}]
`)
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reach-out"}}
	eventually(t, "Propagating=False NoMatchingTemplates naming the cluster-scoped kind", func() error {
		if err := hub.Client.Get(ctx(), keyOf(pp), pp); err != nil {
			return err
		}
		return hasCondition(pp, policyv1alpha1.ConditionPropagating, metav1.ConditionFalse, policyv1alpha1.NoMatchingTemplatesReason,
			"no template matches the resourceSelectors; ClusterResourceEnvelope is cluster-scoped, which only a ClusterPropagationPolicy selects")
	})
	consistently(t, settle, "no binding for the envelope", func() error {
		for _, b := range []client.Object{
			&workv1alpha1.ClusterResourceBinding{ObjectMeta: metav1.ObjectMeta{Name: "not-for-tenants-clusterresourceenvelope"}},
			&workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "not-for-tenants-clusterresourceenvelope"}},
		} {
			if err := hub.Client.Get(ctx(), keyOf(b), b); client.IgnoreNotFound(err) != nil {
				return err
			} else if err == nil {
				return fmt.Errorf("%T %s exists", b, keyOf(b))
			}
		}
		return nil
	})
}
