package propagation_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/detector"
)

func policyCondition(t *testing.T, namespace, name, status, reason, message string) {
	t.Helper()
	eventually(t, fmt.Sprintf("PropagationPolicy %s/%s Propagating=%s %s", namespace, name, status, reason), func() error {
		p := &policyv1alpha1.PropagationPolicy{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: namespace, Name: name}, p); err != nil {
			return err
		}
		return hasCondition(p, policyv1alpha1.ConditionPropagating, metav1.ConditionStatus(status), reason, message)
	})
}

// TestATemplateInANamespaceThatIsNotFederatedStaysOnTheHub: the policy
// says why and the one step to take, the template gets an event, and no
// binding is made — until the namespace is labelled.
func TestATemplateInANamespaceThatIsNotFederatedStaysOnTheHub(t *testing.T) {
	const ns = "plain"
	namespace(t, ns, false)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: plain}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: plain}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: web}]
`)
	const step = "label it with `kubectl label namespace plain flotilla.io/federated=true`"
	policyCondition(t, ns, "web", "False", policyv1alpha1.NamespaceNotFederatedReason, "namespace plain is not federated, so the templates this policy selects (1 now) stay on the hub: "+step)
	eventually(t, "a NamespaceNotFederated event on the template", func() error {
		return eventOn(ns, "web", policyv1alpha1.NamespaceNotFederatedReason, "PropagationPolicy plain/web selects this template but namespace plain is not federated, so it stays on the hub: "+step)
	})
	consistently(t, 500*time.Millisecond, "no binding for the template", func() error {
		err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "web-configmap"}, &workv1alpha1.ResourceBinding{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("binding: %v", err)
	})

	update(t, hub.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, func(n *corev1.Namespace) {
		n.Labels = map[string]string{policyv1alpha1.FederatedLabel: "true"}
	})
	waitForBinding(t, ns, "web", "ConfigMap")
	policyCondition(t, ns, "web", "True", policyv1alpha1.PropagatingReason, "propagates 1 template")
}

// TestPolicyConditionsSayWhyNothingPropagates covers the other reasons a
// policy propagates nothing.
func TestPolicyConditionsSayWhyNothingPropagates(t *testing.T) {
	const ns = "reasons"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: shared, namespace: reasons}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: nothing, namespace: reasons}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: absent}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: gadgets, namespace: reasons}
spec:
  resourceSelectors: [{apiVersion: example.com/v1, kind: Gadget}]
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: cluster-kind, namespace: reasons}
spec:
  resourceSelectors: [{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole}]
`)
	create(t, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a-high"},
		Spec: policyv1alpha1.PropagationSpec{Priority: ptr.To[int32](10),
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap"}}},
	})
	create(t, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b-low"},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "shared"}}},
	})

	policyCondition(t, ns, "nothing", "False", policyv1alpha1.NoMatchingTemplatesReason, "no template matches the resourceSelectors")
	policyCondition(t, ns, "gadgets", "False", policyv1alpha1.UnknownResourceKindReason,
		"the hub serves no example.com/v1 Gadget: install the CRD on the hub, or correct the resourceSelectors")
	policyCondition(t, ns, "cluster-kind", "False", policyv1alpha1.NoMatchingTemplatesReason,
		"no template matches the resourceSelectors; ClusterRole is cluster-scoped, which only a ClusterPropagationPolicy selects")
	policyCondition(t, ns, "a-high", "True", policyv1alpha1.PropagatingReason, "propagates 1 template")
	policyCondition(t, ns, "b-low", "False", policyv1alpha1.ClaimedByOtherPoliciesReason,
		"every template this policy selects (1) is claimed by another policy: PropagationPolicy reasons/a-high (1)")
	rb := waitForBinding(t, ns, "shared", "ConfigMap")
	if rb.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] == "" {
		t.Errorf("binding labels %v, want the claiming policy's permanent id", rb.Labels)
	}
}

// TestAClaimedTemplateKeepsItsPolicyUntilThatPolicyIsDeleted: a policy of
// higher priority created later does not take the template; deleting the
// claiming policy hands it over without leaving the members; deleting the
// last policy unclaims it and keeps its binding and its object in the
// member (Karmada's semantics); a new policy takes both over without
// re-creating either; deleting the template removes them.
func TestAClaimedTemplateKeepsItsPolicyUntilThatPolicyIsDeleted(t *testing.T) {
	const ns = "claims"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: claims}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: first, namespace: claims}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap}]
`)
	rb := bindAndSchedule(t, ns, "settings", "ConfigMap", placement(member1, 0))
	inMember1 := func() error {
		return inMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
	}
	eventually(t, "the ConfigMap in member1", inMember1)
	claimedBy := func(policy string) func() error {
		return func() error {
			cm := &corev1.ConfigMap{}
			if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "settings"}, cm); err != nil {
				return err
			}
			if got := cm.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation]; got != policy {
				return fmt.Errorf("claimed by %q", got)
			}
			return nil
		}
	}
	eventually(t, "the template claimed by first", claimedBy("first"))

	create(t, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"},
		Spec: policyv1alpha1.PropagationSpec{Priority: ptr.To[int32](10),
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}},
	})
	policyCondition(t, ns, "second", "False", policyv1alpha1.ClaimedByOtherPoliciesReason, "PropagationPolicy claims/first (1)")
	consistently(t, 500*time.Millisecond, "the template stays with first", claimedBy("first"))

	if err := hub.Client.Delete(ctx(), &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "first"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the template handed to second", claimedBy("second"))
	policyCondition(t, ns, "second", "True", policyv1alpha1.PropagatingReason, "propagates 1 template")
	consistently(t, 500*time.Millisecond, "the ConfigMap staying in member1", inMember1)
	if err := hub.Client.Get(ctx(), keyOf(rb), rb); err != nil || len(rb.Spec.Clusters) != 1 {
		t.Errorf("the binding after the hand-over: clusters %v, err %v; want it kept with its placement", rb.Spec.Clusters, err)
	}

	if err := hub.Client.Delete(ctx(), &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "second"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the template unclaimed", claimedBy(""))
	eventually(t, "the binding unclaimed", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := hub.Client.Get(ctx(), keyOf(rb), b); err != nil {
			return err
		}
		if id := b.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel]; id != "" {
			return fmt.Errorf("binding still claimed: %v", b.Labels)
		}
		return nil
	})
	consistently(t, 2*time.Second, "the ConfigMap staying in member1 with no policy", inMember1)
	kept := &workv1alpha1.ResourceBinding{}
	if err := hub.Client.Get(ctx(), keyOf(rb), kept); err != nil || kept.UID != rb.UID || len(kept.Spec.Clusters) != 1 {
		t.Fatalf("the binding without a policy: %v, clusters %v; want the same binding (uid %s) with its placement", err, kept.Spec.Clusters, rb.UID)
	}
	eventually(t, "a Released event on the template", func() error {
		return eventOn(ns, "settings", detector.ReleasedReason, "its objects in members are kept")
	})
	inMemberBefore := &corev1.ConfigMap{}
	if err := members[member1].Get(ctx(), client.ObjectKey{Namespace: ns, Name: "settings"}, inMemberBefore); err != nil {
		t.Fatal(err)
	}

	create(t, &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "third"},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "v1", Kind: "ConfigMap", Name: "settings"}}},
	})
	eventually(t, "the template adopted by third", claimedBy("third"))
	consistently(t, time.Second, "the ConfigMap staying in member1", inMember1)
	adopted := &workv1alpha1.ResourceBinding{}
	if err := hub.Client.Get(ctx(), keyOf(rb), adopted); err != nil || adopted.UID != rb.UID {
		t.Errorf("binding after adoption: %v (uid %s, want %s): want the same binding taken over", err, adopted.UID, rb.UID)
	}
	inMemberAfter := &corev1.ConfigMap{}
	if err := members[member1].Get(ctx(), client.ObjectKey{Namespace: ns, Name: "settings"}, inMemberAfter); err != nil || inMemberAfter.UID != inMemberBefore.UID {
		t.Errorf("member object after adoption: %v (uid %s, want %s): want it kept, not re-created", err, inMemberAfter.UID, inMemberBefore.UID)
	}

	if err := hub.Client.Delete(ctx(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ConfigMap gone from member1 with its template", func() error {
		return goneFromMember(member1, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}})
	})
	eventually(t, "the binding gone with its template", func() error {
		if err := hub.Client.Get(ctx(), keyOf(rb), rb); !apierrors.IsNotFound(err) {
			return fmt.Errorf("binding: %v", err)
		}
		return nil
	})
}

// TestAPolicyNamingAClusterThatIsNotAMemberSaysSo: the user's mistake (a
// misspelt or not yet enrolled name) is on the policy, and goes when a
// member of that name joins.
func TestAPolicyNamingAClusterThatIsNotAMemberSaysSo(t *testing.T) {
	const ns = "unknown-member"
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: unknown-member}
data: {a: "1"}
---
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: web, namespace: unknown-member}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, name: web}]
  placement:
    clusterAffinity: {clusterNames: [member1, nosuch]}
`)
	policyCondition(t, ns, "web", "True", policyv1alpha1.PropagatingReason,
		"propagates 1 template; clusterAffinity.clusterNames names nosuch, which is not a member of the fleet")

	late := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "nosuch"},
		Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "default", Name: "nosuch"}},
	}
	create(t, late)
	t.Cleanup(func() { _ = hub.Client.Delete(ctx(), late) })
	eventually(t, "the policy's message without the unknown name once nosuch is a member", func() error {
		p := &policyv1alpha1.PropagationPolicy{}
		if err := hub.Client.Get(ctx(), client.ObjectKey{Namespace: ns, Name: "web"}, p); err != nil {
			return err
		}
		if c := conditions.Get(p, policyv1alpha1.ConditionPropagating); c == nil || c.Message != "propagates 1 template" {
			return fmt.Errorf("Propagating is %+v", c)
		}
		return nil
	})
}

// TestABurstOfTemplatesIsOneWriteOfItsPolicyPerSecond: a policy's
// condition counts the templates it propagates; 60 templates applied one
// after another change that count 60 times, and each change was a status
// write of the policy. Template events now wait a second for more, so the
// policy is written at most once a second of the burst (and once more as
// it settles), and what it finally says counts every template.
func TestABurstOfTemplatesIsOneWriteOfItsPolicyPerSecond(t *testing.T) {
	const ns, templates = "policy-burst", 60
	namespace(t, ns, true)
	createYAML(t, `
apiVersion: policy.flotilla.io/v1alpha1
kind: PropagationPolicy
metadata: {name: many, namespace: policy-burst}
spec:
  resourceSelectors: [{apiVersion: v1, kind: ConfigMap, labelSelector: {matchLabels: {app: many}}}]
`)
	policyCondition(t, ns, "many", "False", policyv1alpha1.NoMatchingTemplatesReason, "no template matches the resourceSelectors")

	c, cancel := context.WithCancel(ctx())
	defer cancel()
	w := watchHub(c, t, &policyv1alpha1.PropagationPolicyList{}, ns)
	began := time.Now()
	for i := range templates {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%02d", i), Labels: map[string]string{"app": "many"}}}
		if err := hub.Client.Create(ctx(), cm); err != nil {
			t.Fatal(err)
		}
	}
	policyCondition(t, ns, "many", "True", policyv1alpha1.PropagatingReason, fmt.Sprintf("propagates %d templates", templates))
	elapsed := time.Since(began)

	writes := 0
	for drained := false; !drained; {
		select {
		case e := <-w.ResultChan():
			if e.Type == watch.Modified {
				writes++
			}
		case <-time.After(200 * time.Millisecond):
			drained = true
		}
	}
	// One write per started second of the burst, one as it settles.
	allowed := int(elapsed/time.Second) + 2
	t.Logf("%d templates created and counted in %s: %d writes of the policy (at most %d allowed)", templates, elapsed.Round(time.Millisecond), writes, allowed)
	if writes == 0 || writes > allowed {
		t.Fatalf("the policy was written %d times while %d templates came in %s; want 1 to %d", writes, templates, elapsed.Round(time.Millisecond), allowed)
	}
}
