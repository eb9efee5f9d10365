package binding

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
)

// A Push member's executor is writing m1's outcome — applied, healthy —
// to its Work, and that write has not reached the hub yet: the binding is
// woken (WorkReported) and aggregated from the outcome, not from the
// Work the cache holds (not applied yet), so that the binding's status
// write does not wait for the Work's.
func TestABindingIsAggregatedFromAnOutcomeWhileItsWorkIsBeingWritten(t *testing.T) {
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "web-deployment", UID: types.UID("b-1"), Generation: 1},
		Spec:       workv1alpha1.ResourceBindingSpec{Resource: web, Replicas: 1, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}}},
	}
	cached := workOn("m1", nil) // created, nothing reported yet
	cached.Name, cached.UID, cached.Labels[workv1alpha1.BindingPermanentIDLabel] = "web-m1", "w-1", "b-1"
	cached.Annotations = map[string]string{workv1alpha1.BindingKindAnnotation: KindResourceBinding,
		workv1alpha1.BindingNamespaceAnnotation: "fleet", workv1alpha1.BindingNameAnnotation: "web-deployment"}
	key := client.ObjectKey{Namespace: "fleet", Name: "web-deployment"}

	var writes []statusWrite
	cache := lagging(fake.NewClientBuilder().WithScheme(s).WithObjects(rb, &cached).Build(), &writes)
	outcomes := &applier.Outcomes{}
	r := &Aggregator{Client: cache, Recorder: events.NewFakeRecorder(10), Now: time.Now, Outcomes: outcomes}
	outcomes.Reported = r.WorkReported

	var woken []ctrl.Request
	workWrite := interceptor.NewClient(fake.NewClientBuilder().WithScheme(s).Build(), interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, _ client.Client, _ string, _ runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			// The Work's write under way: the binding is aggregated now.
			select {
			case e := <-r.reportedChannels()[KindResourceBinding]:
				woken = append(woken, WorkToBinding(KindResourceBinding)(ctx, e.Object)...)
			default:
			}
			if _, err := r.Reconcile(ctx, KindResourceBinding, ctrl.Request{NamespacedName: key}); err != nil {
				t.Errorf("Reconcile: %v", err)
			}
			return nil
		},
	})
	outcome := cached.DeepCopy()
	outcome.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: 1}}
	outcome.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{deployment(workv1alpha1.ResourceHealthy,
		`{"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1}`)}
	if _, err := applier.WriteOutcome(context.Background(), workWrite, &cached, outcome, "flotilla-test", nil, outcomes); err != nil {
		t.Fatal(err)
	}

	if len(woken) != 1 || woken[0].NamespacedName != key {
		t.Errorf("woken %v, want the binding %s once", woken, key)
	}
	if len(writes) != 1 {
		t.Fatalf("%d binding status writes while the Work's was under way, want 1", len(writes))
	}
	got := writes[0].Status
	if len(got.AggregatedStatus) != 1 || !got.AggregatedStatus[0].Applied || got.AggregatedStatus[0].Health != workv1alpha1.ResourceHealthy || got.ReadyReplicas != 1 {
		t.Errorf("binding status %+v; want m1 applied and healthy, 1 ready, from the outcome being written", got)
	}
}
