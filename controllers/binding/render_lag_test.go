package binding

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The render phase writes its status without the lock and, while the
// cache has not seen its own last write, starts from that write. Here the
// cache shows Rendered False TemplateNotFound; the phase then writes
// NamespaceNotFederated (the namespace lost its label), and, the label
// back, TemplateNotFound again. Starting from the stale cache it would see
// no change and leave NamespaceNotFederated on the binding.
func TestARenderingStartsFromItsOwnLastWriteWhileTheCacheLags(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, workv1alpha1.AddToScheme,
		clusterv1alpha1.AddToScheme, policyv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "web-configmap", UID: types.UID("b-1"), Generation: 2},
		Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "fleet", Name: "web"},
			Clusters: []workv1alpha1.TargetCluster{{Name: "m1"}}},
		Status: workv1alpha1.ResourceBindingStatus{Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionRendered,
			Status: metav1.ConditionFalse, Reason: workv1alpha1.BindingReasonTemplateNotFound, ObservedGeneration: 2,
			Message: "ConfigMap fleet/web not found", LastTransitionTime: metav1.Now()}}},
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	key := client.ObjectKeyFromObject(rb)

	var writes []statusWrite
	cache := lagging(newFakeCache(s).WithObjects(rb, ns).Build(), &writes)
	r := &Renderer{Client: cache, APIReader: cache, Recorder: events.NewFakeRecorder(10)}
	render := func(wantReason string) {
		t.Helper()
		if _, err := r.Reconcile(context.Background(), KindResourceBinding, ctrl.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		if len(writes) == 0 {
			t.Fatalf("no status written, want Rendered %s", wantReason)
		}
		last := writes[len(writes)-1]
		if last.Metadata.ResourceVersion != "" {
			t.Errorf("written locked on version %s, want no lock", last.Metadata.ResourceVersion)
		}
		c := conditions.Get(&workv1alpha1.ResourceBinding{Status: last.Status}, workv1alpha1.ConditionRendered)
		if c == nil || c.Reason != wantReason {
			t.Fatalf("last written Rendered %+v, want reason %s", c, wantReason)
		}
	}

	render(workv1alpha1.BindingReasonNamespaceNotFederated) // the namespace has no label
	ns.Labels = map[string]string{policyv1alpha1.FederatedLabel: "true"}
	if err := cache.Update(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	render(workv1alpha1.BindingReasonTemplateNotFound)
	if len(writes) != 2 {
		t.Errorf("%d status writes, want 2", len(writes))
	}
}
