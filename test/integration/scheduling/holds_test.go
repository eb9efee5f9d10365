package scheduling_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
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
