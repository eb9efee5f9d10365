package scheduling_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
)

// A hub too slow to get a decision's Works to the member (here: nothing
// renders or applies them at all) while the member's estimator keeps
// publishing models without those Pods: the capacity held for the decision
// stays held past the grace, so the next binding is not given the same
// CPUs. Before the grace counted from the Work's application, a model
// observed a grace after the decision released it, and the second binding
// was placed on capacity already handed out.
func TestCapacityHeldForAWorkNotYetInItsMemberIsNotHandedOutAgain(t *testing.T) {
	own := ownHubWithOneMember(t)
	c := own.Client
	ctx := context.Background()
	ledger := assumed.New(time.Second).WithMaxHold(time.Minute, nil)
	stop := startPlacer(t, own, ledger, nil)
	defer stop()

	decided := func(name string) *workv1alpha1.ResourceBinding {
		t.Helper()
		return decidedIn(t, c, name)
	}
	createOnOnly(t, c, "first")
	if first := decided("first"); placement(first) != "only:3" {
		t.Fatalf("first placed %q, want only:3", placement(first))
	}

	// The estimator publishes a model observed well past the grace; the 3
	// Pods are not in it (their Work never reached the member).
	time.Sleep(2 * time.Second)
	m := &clusterv1alpha1.MemberCluster{}
	if err := c.Get(ctx, client.ObjectKey{Name: "only"}, m); err != nil {
		t.Fatal(err)
	}
	m.Status.CapacityModel.ObservedTime = metav1.Now()
	m.Status.CapacityModel.NodeGroups[0].Free[corev1.ResourcePods] = resource.MustParse("109") // a change of its own
	if err := c.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}

	createOnOnly(t, c, "second")
	second := decided("second")
	cond := conditions.Get(second, workv1alpha1.ConditionScheduled)
	if cond.Status != metav1.ConditionFalse || placement(second) != "" {
		t.Fatalf("second placed %q on a member whose 4 CPU hold the 3 replicas of first, not applied yet (Scheduled %s %s: %s)",
			placement(second), cond.Status, cond.Reason, cond.Message)
	}
	t.Logf("second: Scheduled=%s %s: %s", cond.Status, cond.Reason, cond.Message)
	if e := ledger.Entries("only"); len(e) != 1 || e[0].Binding != "default/first" || e[0].Generation == 0 || !e[0].AppliedAt.IsZero() {
		t.Errorf("the ledger holds %+v, want first's 3 replicas, decided at a generation, not applied", e)
	}
}

// A member can apply a decision's Work, and the aggregate phase take in its
// last report, before the render phase's Rendered condition for that
// decision reaches the cache; the ledger is told a member applied only once
// Rendered is True at the decision's generation. The aggregate phase looks
// at the binding again when that condition is recorded, so the hold's grace
// starts then, and not at its maximum.
func TestAHoldIsToldItsWorkIsAppliedWhenTheRenderingIsRecordedAfterTheApply(t *testing.T) {
	own := ownHubWithOneMember(t)
	c := own.Client
	ctx := context.Background()
	ledger := assumed.New(time.Minute).WithMaxHold(10*time.Minute, nil)
	stopPlacer := startPlacer(t, own, ledger, nil)
	defer stopPlacer()
	stopAggregator := own.StartManager(t, func(mgr ctrl.Manager) error {
		a := &bindingcontroller.Aggregator{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("flotilla-status"), Holds: ledger}
		return a.SetupWithManager(mgr, controller.Options{})
	})
	defer stopAggregator()

	createOnOnly(t, c, "first")
	first := decidedIn(t, c, "first")
	if placement(first) != "only:3" {
		t.Fatalf("first placed %q, want only:3", placement(first))
	}

	// The member's Work, applied, with no Rendered condition on the binding yet.
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ExecutionNamespace("only")}}); err != nil {
		t.Fatal(err)
	}
	w := &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: clusterv1alpha1.ExecutionNamespace("only"), Name: "first-deployment",
		Labels: map[string]string{workv1alpha1.BindingPermanentIDLabel: string(first.UID)},
		Annotations: map[string]string{
			workv1alpha1.BindingKindAnnotation:      bindingcontroller.KindResourceBinding,
			workv1alpha1.BindingNamespaceAnnotation: "default", workv1alpha1.BindingNameAnnotation: "first",
		},
	}}
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	conditions.Set(w, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionTrue, Reason: "Applied", ObservedGeneration: w.Generation})
	if err := c.Status().Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	waitIn(t, c, first, "the Work aggregated as applied", func(b *workv1alpha1.ResourceBinding) bool {
		return len(b.Status.AggregatedStatus) == 1 && b.Status.AggregatedStatus[0].Applied
	})
	if e := ledger.Entries("only"); len(e) != 1 || !e[0].AppliedAt.IsZero() {
		t.Fatalf("the ledger holds %+v before the rendering is recorded, want first's hold, not applied", e)
	}

	// The render phase's record of the decision, after the apply.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(first), b); err != nil {
			return err
		}
		conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionRendered, Status: metav1.ConditionTrue, Reason: "Rendered", ObservedGeneration: b.Generation})
		return c.Status().Update(ctx, b)
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		e := ledger.Entries("only")
		if len(e) == 1 && !e[0].AppliedAt.IsZero() {
			t.Logf("the hold is told applied: %+v", e[0])
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("10 s after the rendering was recorded the ledger holds %+v, want first's hold applied", e)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
