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
	cache := lagging(newFakeCache(s).WithObjects(rb, &cached).Build(), &writes)
	outcomes := &applier.Outcomes{}
	r := &Aggregator{Client: cache, Recorder: events.NewFakeRecorder(10), Now: time.Now, Outcomes: outcomes}
	outcomes.Reported = r.WorkReported

	var woken []ctrl.Request
	workWrite := interceptor.NewClient(newFakeCache(s).Build(), interceptor.Funcs{
		SubResourceApply: func(ctx context.Context, _ client.Client, _ string, _ runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			// The Work's write under way: the binding is aggregated now.
			select {
			case e := <-r.reportedChannels()[KindResourceBinding].coalesced:
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

// A report that turns a Work Available and with it its whole binding
// (every Work Available) wakes the binding at once; a member turning
// Available while another is not, or any other report, waits out the
// coalescing window with its sibling Works' reports. The Work watch's
// updates (Pull members) are told apart the same way.
func TestTheWorkTurningItsBindingReadyWakesItAtOnce(t *testing.T) {
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	available := func(st metav1.ConditionStatus) []metav1.Condition {
		return []metav1.Condition{{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied"},
			{Type: workv1alpha1.WorkAvailable, Status: st, Reason: "Available"}}
	}
	work := func(member string, st metav1.ConditionStatus) *workv1alpha1.Work {
		w := workOn(member, nil)
		w.Name, w.UID = "web-"+member, types.UID("w-"+member)
		w.Labels[workv1alpha1.BindingPermanentIDLabel] = "b-1"
		w.Annotations = map[string]string{workv1alpha1.BindingKindAnnotation: KindResourceBinding,
			workv1alpha1.BindingNamespaceAnnotation: "fleet", workv1alpha1.BindingNameAnnotation: "web-deployment"}
		w.Status.Conditions = available(st)
		return &w
	}
	m1, m2 := work("m1", metav1.ConditionFalse), work("m2", metav1.ConditionFalse)
	c := newFakeCache(s).WithObjects(m1, m2).WithStatusSubresource(m1).Build()
	outcomes := &applier.Outcomes{}
	r := &Aggregator{Client: c, Outcomes: outcomes}
	outcomes.Reported = r.WorkReported
	writes := interceptor.NewClient(newFakeCache(s).Build(), interceptor.Funcs{
		SubResourceApply: func(context.Context, client.Client, string, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
			return nil
		},
	})
	queued := func() (now, coalesced int) {
		ch := r.reportedChannels()[KindResourceBinding]
		now, coalesced = len(ch.now), len(ch.coalesced)
		for len(ch.now) > 0 {
			<-ch.now
		}
		for len(ch.coalesced) > 0 {
			<-ch.coalesced
		}
		return now, coalesced
	}
	report := func(before *workv1alpha1.Work, st metav1.ConditionStatus) {
		after := before.DeepCopy()
		after.Status.Conditions = available(st)
		if _, err := applier.WriteOutcome(context.Background(), writes, before, after, "flotilla-test", nil, outcomes); err != nil {
			t.Fatal(err)
		}
	}

	report(m1, metav1.ConditionTrue) // m1 Ready, m2 not yet
	if now, coalesced := queued(); now != 0 || coalesced != 1 {
		t.Errorf("m1 Available while m2 is not: %d woken at once, %d coalesced; want 0, 1", now, coalesced)
	}
	report(m2, metav1.ConditionTrue) // m2 Ready: the binding is
	if now, coalesced := queued(); now != 1 || coalesced != 0 {
		t.Errorf("m2 Available, m1 already (its outcome being written): %d woken at once, %d coalesced; want 1, 0", now, coalesced)
	}

	// The watch of Works, as a Pull member's agent writes them: m1 is
	// Available in the cache.
	ready := m1.DeepCopy()
	ready.Status.Conditions = available(metav1.ConditionTrue)
	if err := c.Status().Update(context.Background(), ready); err != nil {
		t.Fatal(err)
	}
	outcomes.Forget(client.ObjectKeyFromObject(m2))
	turned := m2.DeepCopy()
	turned.Status.Conditions = available(metav1.ConditionTrue)
	if r.completesBinding(context.Background(), m2, turned) {
		t.Error("m2 turning Available while the cache holds it not Available: urgent; want it to wait for the cache's m2")
	}
	if err := c.Status().Update(context.Background(), turned); err != nil {
		t.Fatal(err)
	}
	if !r.completesBinding(context.Background(), m2, turned) {
		t.Error("m2 turning Available, m1 Available: not urgent")
	}
	if r.completesBinding(context.Background(), turned, turned) {
		t.Error("an update of a Work that stays Available: urgent")
	}
}
