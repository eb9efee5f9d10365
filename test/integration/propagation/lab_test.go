package propagation_test

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// fleetWeb is the lab's Deployment: 6 replicas of 100m CPU, env[0] "shared".
func fleetWeb(namespace string) *appsv1.Deployment {
	labels := map[string]string{"app": "fleet-web"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "fleet-web", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](6),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "registry.k8s.io/pause:3.10",
					Env:       []corev1.EnvVar{{Name: "MODE", Value: "shared"}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}},
				}}},
			},
		},
	}
}

func fleetWebService(namespace string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "fleet-web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "fleet-web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
}

func duplicatedTo(namespace, name string, clusters []string, selectors ...policyv1alpha1.ResourceSelector) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: selectors,
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: clusters},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
			},
		},
	}
}

func deploymentSelector(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

// TestKarmadaLab walks Karmada's getting-started lab on Flotilla: a
// Deployment and a Service propagated Duplicated to two members, re-divided,
// overridden on one member, and removed.
func TestKarmadaLab(t *testing.T) {
	const ns = "lab"
	namespace(t, ns, true)
	create(t, fleetWeb(ns))
	create(t, fleetWebService(ns))
	create(t, duplicatedTo(ns, "fleet-web", []string{member1, member2},
		deploymentSelector("fleet-web"),
		policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Service", Name: "fleet-web"}))

	// The binding carries the template's replicas, what one replica needs and the policy's placement.
	rb := waitForBinding(t, ns, "fleet-web", "Deployment")
	if rb.Spec.Replicas != 6 {
		t.Errorf("binding spec.replicas = %d, want 6", rb.Spec.Replicas)
	}
	if rr := rb.Spec.ReplicaRequirements; rr == nil || !rr.ResourceRequest.Cpu().Equal(resource.MustParse("100m")) {
		t.Errorf("binding spec.replicaRequirements = %s, want resourceRequest cpu 100m", rawJSON(rr))
	}
	if p := rb.Spec.Placement; p == nil || p.ReplicaScheduling == nil || p.ReplicaScheduling.ReplicaSchedulingType != policyv1alpha1.ReplicaSchedulingTypeDuplicated {
		t.Errorf("binding spec.placement = %s, want the policy's (Duplicated)", rawJSON(p))
	}
	if r := rb.Spec.Resource; r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Namespace != ns || r.Name != "fleet-web" || r.UID == "" {
		t.Errorf("binding spec.resource = %s", rawJSON(r))
	}
	if len(rb.OwnerReferences) != 1 || rb.OwnerReferences[0].Kind != "Deployment" || rb.OwnerReferences[0].Name != "fleet-web" {
		t.Errorf("binding ownerReferences = %s, want the Deployment", rawJSON(rb.OwnerReferences))
	}
	template := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
	eventually(t, "the template claimed by the policy", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(template), template); err != nil {
			return err
		}
		if template.Annotations[policyv1alpha1.PropagationPolicyNameAnnotation] != "fleet-web" || template.Labels[policyv1alpha1.PropagationPolicyPermanentIDLabel] == "" {
			return fmt.Errorf("claim labels %v annotations %v", template.Labels, template.Annotations)
		}
		return nil
	})

	// Duplicated over both members: 6 replicas each, and a Service in each.
	schedule(t, rb, placement(member1, 6, member2, 6))
	svc := waitForBinding(t, ns, "fleet-web", "Service")
	schedule(t, svc, placement(member1, 0, member2, 0))
	expectReplicas(t, ns, map[string]int32{member1: 6, member2: 6})
	for _, m := range []string{member1, member2} {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
		eventually(t, "the Service in "+m, func() error { return inMember(m, s) })
		if s.Labels[workv1alpha1.ManagedByLabel] != workv1alpha1.ManagedByValue {
			t.Errorf("Service in %s has labels %v, want %s=%s", m, s.Labels, workv1alpha1.ManagedByLabel, workv1alpha1.ManagedByValue)
		}
	}
	eventually(t, "the binding FullyApplied on both members", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		if len(rb.Status.AggregatedStatus) != 2 || !rb.Status.AggregatedStatus[0].Applied || !rb.Status.AggregatedStatus[1].Applied {
			return fmt.Errorf("aggregatedStatus %s", rawJSON(rb.Status.AggregatedStatus))
		}
		return hasCondition(rb, workv1alpha1.ConditionFullyApplied, metav1.ConditionTrue, workv1alpha1.BindingReasonFullyApplied, "applied on member1, member2")
	})

	// Divided 4 + 2.
	schedule(t, rb, placement(member1, 4, member2, 2))
	expectReplicas(t, ns, map[string]int32{member1: 4, member2: 2})

	// An override on member2 only.
	create(t, &policyv1alpha1.OverridePolicy{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secondary-mode"},
		Spec: policyv1alpha1.OverrideSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{deploymentSelector("fleet-web")},
			OverrideRules: []policyv1alpha1.RuleWithCluster{{
				TargetCluster: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{member2}},
				Overriders: policyv1alpha1.Overriders{Plaintext: []policyv1alpha1.PlaintextOverrider{{
					Path: "/spec/template/spec/containers/0/env/0/value", Operator: policyv1alpha1.OverriderOpReplace,
					Value: apiextensionsv1.JSON{Raw: []byte(`"secondary"`)},
				}}},
			}},
		},
	})
	eventually(t, "MODE=secondary on member2", func() error { return expectEnv(member2, ns, "secondary") })
	if err := expectEnv(member1, ns, "shared"); err != nil {
		t.Error(err)
	}
	if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(template), template); err != nil || template.Spec.Template.Spec.Containers[0].Env[0].Value != "shared" {
		t.Errorf("hub template env[0] = %v (err %v), want shared", template.Spec.Template.Spec.Containers[0].Env, err)
	}

	// Status flows back: member1 reports its 4 replicas ready.
	reportReady(t, member1, ns, "fleet-web", 4)
	eventually(t, "the binding summing member1's ready replicas", func() error {
		if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(rb), rb); err != nil {
			return err
		}
		st := rb.Status
		if st.ReadyReplicas != 4 || st.AvailableReplicas != 4 || st.UpdatedReplicas != 4 || st.Replicas != 4 {
			return fmt.Errorf("status replicas %d ready %d available %d updated %d", st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.UpdatedReplicas)
		}
		if h := rb.Status.AggregatedStatus[0]; h.ClusterName != member1 || h.Health != workv1alpha1.ResourceHealthy || h.Status == nil {
			return fmt.Errorf("member1 item %s", rawJSON(h))
		}
		if h := rb.Status.AggregatedStatus[1]; h.ClusterName != member2 || h.Health != workv1alpha1.ResourceUnhealthy {
			return fmt.Errorf("member2 item %s", rawJSON(h))
		}
		return nil
	})

	// Deleting the policy keeps everything in the members (Karmada's
	// semantics); deleting the templates then removes it.
	if err := hub.Client.Delete(ctx(), &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}); err != nil {
		t.Fatal(err)
	}
	consistently(t, 2*time.Second, "the Deployment and Service staying in the members without their policy", func() error {
		for _, m := range []string{member1, member2} {
			if err := inMember(m, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}); err != nil {
				return err
			}
			if err := inMember(m, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}); err != nil {
				return err
			}
		}
		return nil
	})
	if err := hub.Client.Delete(ctx(), template); err != nil {
		t.Fatal(err)
	}
	if err := hub.Client.Delete(ctx(), &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{member1, member2} {
		eventually(t, "the Deployment gone from "+m, func() error {
			return goneFromMember(m, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}})
		})
		eventually(t, "the Service gone from "+m, func() error {
			return goneFromMember(m, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}})
		})
	}
	eventually(t, "the bindings and Works gone", func() error {
		for _, b := range []*workv1alpha1.ResourceBinding{rb, svc} {
			if err := hub.Client.Get(ctx(), client.ObjectKeyFromObject(b), &workv1alpha1.ResourceBinding{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("binding %s: %v", b.Name, err)
			}
		}
		for _, m := range []string{member1, member2} {
			works := &workv1alpha1.WorkList{}
			if err := hub.Client.List(ctx(), works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(m))); err != nil {
				return err
			}
			for _, w := range works.Items {
				if w.Annotations[workv1alpha1.BindingNamespaceAnnotation] == ns {
					return fmt.Errorf("Work %s/%s remains", w.Namespace, w.Name)
				}
			}
		}
		return nil
	})
}

// expectReplicas waits until each member's fleet-web has the replicas.
func expectReplicas(t *testing.T, ns string, want map[string]int32) {
	t.Helper()
	for m, n := range want {
		eventually(t, fmt.Sprintf("fleet-web with %d replicas in %s", n, m), func() error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
			if err := inMember(m, d); err != nil {
				return err
			}
			if got := ptr.Deref(d.Spec.Replicas, -1); got != n {
				return fmt.Errorf("replicas %d", got)
			}
			return nil
		})
	}
}

func expectEnv(member, ns, want string) error {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fleet-web"}}
	if err := inMember(member, d); err != nil {
		return err
	}
	if got := d.Spec.Template.Spec.Containers[0].Env[0].Value; got != want {
		return fmt.Errorf("fleet-web MODE in %s = %q, want %q", member, got, want)
	}
	return nil
}

// reportReady writes, as the member's deployment controller would, that
// all n replicas of a Deployment are up.
func reportReady(t testing.TB, member, ns, name string, n int32) {
	t.Helper()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := inMember(member, d); err != nil {
		t.Fatal(err)
	}
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n, UpdatedReplicas: n}
	if err := members[member].Status().Update(ctx(), d); err != nil {
		t.Fatalf("report %s ready in %s: %v", name, member, err)
	}
}
