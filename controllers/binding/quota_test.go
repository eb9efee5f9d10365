package binding

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// TestAMemberPastTheQuotaKeepsItsWorkAsItIs: an override raising m1's
// requests past the quota leaves m1's existing Work untouched, says
// QuotaExceeded naming the rule (m1 would add 6 CPU to the 2 the
// scheduler charged), and charges the binding with what m1's
// Work still carries; m2's Work is written.
func TestAMemberPastTheQuotaKeepsItsWorkAsItIs(t *testing.T) {
	template := object(t, `
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 1
  template:
    spec:
      containers: [{name: app, resources: {requests: {cpu: "1"}}}]
`)
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", UID: "uid-1"},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web"},
			Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}, {Name: "m2", Replicas: 1}},
			ReplicaRequirements: &workv1alpha1.ReplicaRequirements{
				ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			},
		},
	}
	// m1 already runs the template as it was: 1 CPU.
	kept := Strip(template)
	raw, _ := json.Marshal(kept.Object)
	existing := &workv1alpha1.Work{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: clusterv1alpha1.ExecutionNamespace("m1"), Name: WorkName(KindResourceBinding, "shop", b.Name),
			Labels: map[string]string{workv1alpha1.BindingPermanentIDLabel: "uid-1", clusterv1alpha1.MemberLabel: "m1"},
		},
		Spec: workv1alpha1.WorkSpec{Workload: workv1alpha1.WorkloadTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: raw}}}}},
	}
	m1 := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m1"}}
	m2 := &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "m2"}}
	hub := newFakeCache(hubscheme.New()).WithObjects(m1, m2, existing, b).Build()

	quotas := tracker.New(tracker.Options{})
	quotas.MarkSynced()
	quotas.SetQuota("shop", "team", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")})
	quotas.ObserveBinding("shop/web-deployment", "shop", quota.WorkloadOf(&b.Spec), false)

	bigger := plaintext("/spec/template/spec/containers/0/resources/requests/cpu", `"8"`)
	bigger.Spec.OverrideRules[0].TargetCluster = &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"m1"}}
	mapper := hubMapper().(*meta.DefaultRESTMapper)
	mapper.Add(schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, meta.RESTScopeNamespace)
	r := &Renderer{Client: hub, RESTMapper: mapper, Quota: quotas}
	s := &rendering{
		key:     bindingKey{Kind: KindResourceBinding, ObjectKey: client.ObjectKeyFromObject(b)},
		binding: b, template: template, policies: []policyv1alpha1.OverridePolicy{bigger},
	}
	if _, err := r.writeWorks(context.Background(), s); err != nil {
		t.Fatal(err)
	}

	if len(s.failures) != 1 || s.failures[0].member != "m1" || s.failures[0].reason != workv1alpha1.BindingReasonQuotaExceeded {
		t.Fatalf("failures %+v, want one QuotaExceeded for m1", s.failures)
	}
	want := "FederatedResourceQuota shop/team: cpu: requested 6, used 2 of 4, 2 left; raised by OverridePolicy shop/attack rule 0; its Work is not written"
	if !strings.HasPrefix(s.failures[0].message, want) {
		t.Errorf("message %q, want it to start %q", s.failures[0].message, want)
	}
	got := &workv1alpha1.Work{}
	if err := hub.Get(context.Background(), client.ObjectKeyFromObject(existing), got); err != nil {
		t.Fatal(err)
	}
	if string(got.Spec.Workload.Manifests[0].Raw) != string(raw) {
		t.Errorf("m1's Work changed:\n%s", got.Spec.Workload.Manifests[0].Raw)
	}
	w2 := &workv1alpha1.Work{}
	if err := hub.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace("m2"), Name: existing.Name}, w2); err != nil {
		t.Errorf("m2's Work: %v", err)
	}
	if used := b.Status.RenderedUsage[corev1.ResourceCPU]; used.String() != "2" {
		t.Errorf("renderedUsage cpu %s, want 2 (m1's kept Work and m2's)", used.String())
	}
}
