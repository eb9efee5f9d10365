package binding

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

// A member's Deployment rolling out moves its ready count while staying
// Unhealthy: the binding's status takes that progress at most once per
// interval. Its turning Healthy is a state: written at once, however soon
// after the last write.
func TestABindingsProgressIsPacedAndItsStateChangesAreNot(t *testing.T) {
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	at := metav1.NewTime(now)
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "web-deployment", UID: types.UID("b-1"), Generation: 1},
		Spec:       workv1alpha1.ResourceBindingSpec{Resource: web, Replicas: 2, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 2}}},
	}
	report := func(health workv1alpha1.ResourceHealth, ready int) *workv1alpha1.Work {
		status := map[int]string{0: `{"replicas":2}`, 1: `{"replicas":2,"readyReplicas":1}`, 2: `{"replicas":2,"readyReplicas":2}`}[ready]
		w := workOn("m1", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"}, deployment(health, status))
		w.Name, w.Labels[workv1alpha1.BindingPermanentIDLabel] = "web-m1", "b-1"
		return &w
	}
	// The binding as last written: m1 applied, Unhealthy, nothing ready.
	first := Aggregate(&rb.Spec, []workv1alpha1.Work{*report(workv1alpha1.ResourceUnhealthy, 0)})
	KeepHealthTransitions(first.Items, nil, at)
	rb.Status.AggregatedStatus = first.Items
	first.Condition.ObservedGeneration = 1
	rb.Status.Conditions = []metav1.Condition{first.Condition}
	rb.Status.Conditions[0].LastTransitionTime = at

	work := report(workv1alpha1.ResourceUnhealthy, 1)
	base := newFakeCache(s).WithObjects(rb, work).WithStatusSubresource(rb, work).Build()
	writes := 0
	c := interceptor.NewClient(base, interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, _ runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			writes++
			return nil
		},
	})
	clk := clocktesting.NewFakeClock(now)
	reports := &pacing.Reports{Interval: time.Second, Clock: clk}
	key := client.ObjectKeyFromObject(rb)
	reports.Written(key)
	r := &Aggregator{Client: c, Recorder: events.NewFakeRecorder(10), Now: func() time.Time { return now }, Reports: reports}
	reconcile := func() ctrl.Result {
		t.Helper()
		res, err := r.Reconcile(context.Background(), KindResourceBinding, ctrl.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res
	}

	now = now.Add(200 * time.Millisecond)
	clk.SetTime(now)
	if res := reconcile(); writes != 0 || res.RequeueAfter != 800*time.Millisecond {
		t.Errorf("1 of 2 ready, 200ms after the last write: %d writes, back after %s; want none, back after 800ms", writes, res.RequeueAfter)
	}
	now = now.Add(time.Second)
	clk.SetTime(now)
	if res := reconcile(); writes != 1 || res.RequeueAfter != 0 {
		t.Errorf("1 of 2 ready, once the interval passed: %d writes, back after %s; want it written", writes, res.RequeueAfter)
	}

	// Turned Healthy 100ms after that write (the fake kept the binding as
	// first written: the change is made from there).
	reports.Written(key)
	now = now.Add(100 * time.Millisecond)
	clk.SetTime(now)
	healthy := report(workv1alpha1.ResourceHealthy, 2)
	healthy.ResourceVersion = ""
	if err := base.Delete(context.Background(), work); err != nil {
		t.Fatal(err)
	}
	if err := base.Create(context.Background(), healthy); err != nil {
		t.Fatal(err)
	}
	if res := reconcile(); writes != 2 || res.RequeueAfter != 0 {
		t.Errorf("Healthy 100ms after the last write: %d writes, back after %s; want it written at once", writes, res.RequeueAfter)
	}
}

// On its way: members move on toward applied and healthy; arriving,
// falling back and anything else are states.
func TestABindingOnItsWayIsPacedAndItsArrivalIsNot(t *testing.T) {
	item := func(member string, applied bool, health workv1alpha1.ResourceHealth, msg string) workv1alpha1.AggregatedStatusItem {
		return workv1alpha1.AggregatedStatusItem{ClusterName: member, Applied: applied, Health: health, AppliedMessage: msg}
	}
	fields := func(status metav1.ConditionStatus, reason, msg string, items ...workv1alpha1.AggregatedStatusItem) aggregatedFields {
		return aggregatedFields{AggregatedStatus: items, Conditions: []metav1.Condition{{Type: workv1alpha1.ConditionFullyApplied, Status: status, Reason: reason, Message: msg}}}
	}
	notCreated := func(m string) workv1alpha1.AggregatedStatusItem {
		return item(m, false, workv1alpha1.ResourceUnknown, "Work not created yet")
	}
	notApplied := func(m string) workv1alpha1.AggregatedStatusItem {
		return item(m, false, workv1alpha1.ResourceUnknown, "Work not applied yet")
	}
	unhealthy := func(m string) workv1alpha1.AggregatedStatusItem {
		return item(m, true, workv1alpha1.ResourceUnhealthy, "")
	}
	healthy := func(m string) workv1alpha1.AggregatedStatusItem {
		return item(m, true, workv1alpha1.ResourceHealthy, "")
	}
	const f, tr = metav1.ConditionFalse, metav1.ConditionTrue
	nf, fa := workv1alpha1.BindingReasonNotFullyApplied, workv1alpha1.BindingReasonFullyApplied
	for _, tc := range []struct {
		name     string
		was, now aggregatedFields
		want     bool
	}{
		{"Works created", fields(f, nf, "a", notCreated("m1"), notCreated("m2")), fields(f, nf, "b", notApplied("m1"), notApplied("m2")), true},
		{"one member applied", fields(f, nf, "a", notApplied("m1"), notApplied("m2")), fields(f, nf, "b", unhealthy("m1"), notApplied("m2")), true},
		{"one member healthy of two", fields(tr, fa, "a", unhealthy("m1"), unhealthy("m2")), fields(tr, fa, "a", healthy("m1"), unhealthy("m2")), true},
		{"every member healthy", fields(tr, fa, "a", healthy("m1"), unhealthy("m2")), fields(tr, fa, "a", healthy("m1"), healthy("m2")), false},
		{"fully applied", fields(f, nf, "a", unhealthy("m1"), notApplied("m2")), fields(tr, fa, "b", unhealthy("m1"), unhealthy("m2")), false},
		{"a member unhealthy again", fields(tr, fa, "a", healthy("m1"), unhealthy("m2")), fields(tr, fa, "a", unhealthy("m1"), healthy("m2")), false},
		{"a Work gone", fields(f, nf, "a", unhealthy("m1"), notApplied("m2")), fields(f, nf, "b", notApplied("m1"), notApplied("m2")), false},
		{"a member more", fields(f, nf, "a", notApplied("m1")), fields(f, nf, "b", notApplied("m1"), notCreated("m2")), false},
		{"another member", fields(f, nf, "a", notApplied("m1")), fields(f, nf, "b", notApplied("m2")), false},
	} {
		if got := aggregatedOnItsWay(tc.was, tc.now); got != tc.want {
			t.Errorf("%s: on its way %v, want %v", tc.name, got, tc.want)
		}
	}
}
