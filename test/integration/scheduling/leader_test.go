package scheduling_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	bindingcontroller "github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/test/testenv"
)

// A scheduler that takes over from another — a new leader — starts with an
// empty ledger, while the replicas the previous one placed a moment ago are
// not in the member's model yet. It rebuilds the holds from the bindings
// before its first decision, so it does not hand the same capacity out
// again. This runs on an apiserver of its own: the suite's scheduler would
// decide these bindings too.
func TestANewLeaderDoesNotHandOutCapacityThePreviousOneJustPlaced(t *testing.T) {
	own := ownHubWithOneMember(t)
	c := own.Client

	leader := func() context.CancelFunc {
		t.Helper()
		return startPlacer(t, own, nil, nil)
	}
	create := func(name string) *workv1alpha1.ResourceBinding {
		t.Helper()
		return createOnOnly(t, c, name)
	}
	decided := func(b *workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
		t.Helper()
		return decidedIn(t, c, b.Name)
	}

	stopFirst := leader()
	first := decided(create("first"))
	if placement(first) != "only:3" {
		t.Fatalf("the first leader placed %q, want only:3", placement(first))
	}
	// The first leader goes before the member reports the 3 Pods.
	stopFirst()

	stopSecond := leader()
	defer stopSecond()
	second := decided(create("second"))
	cond := conditions.Get(second, workv1alpha1.ConditionScheduled)
	if cond.Status != metav1.ConditionFalse || placement(second) != "" {
		t.Fatalf("the new leader placed %q on a member whose 4 CPU hold 3 replicas just placed and 1 more (Scheduled %s %s: %s)",
			placement(second), cond.Status, cond.Reason, cond.Message)
	}
	t.Logf("the new leader: Scheduled=%s %s: %s", cond.Status, cond.Reason, cond.Message)
}

// decidedIn waits up to 30 s for the place phase to have decided the
// current generation of binding default/name and returns it.
func decidedIn(t *testing.T, c client.Client, name string) *workv1alpha1.ResourceBinding {
	t.Helper()
	got := &workv1alpha1.ResourceBinding{}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, got); err == nil {
			if cond := conditions.Get(got, workv1alpha1.ConditionScheduled); cond != nil && cond.ObservedGeneration == got.Generation {
				return got
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("binding %s never decided: %+v", name, got.Status.Conditions)
	return nil
}

// ownHubWithOneMember starts an apiserver of the test's own — the suite's
// scheduler would decide its bindings too — holding one Ready member,
// "only", with 4 free CPU and a capacity model older than anything placed.
func ownHubWithOneMember(t *testing.T) *testenv.Env {
	t.Helper()
	own, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = own.Stop() })
	c := own.Client
	ctx := context.Background()

	// One member with 4 free CPU, its model older than anything placed here.
	m := &clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "only"},
		Spec:       clusterv1alpha1.MemberClusterSpec{ClusterRef: clusterv1alpha1.ClusterReference{Namespace: "capi", Name: "only"}},
	}
	if err := c.Create(ctx, m); err != nil {
		t.Fatal(err)
	}
	m.Status = clusterv1alpha1.MemberClusterStatus{
		Conditions: []metav1.Condition{{Type: clusterv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: metav1.Now()}},
		APIEnablements: []clusterv1alpha1.APIEnablement{
			{GroupVersion: "apps/v1", Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}},
		},
		CapacityModel: &clusterv1alpha1.CapacityModel{
			ObservedTime: metav1.NewTime(time.Now().Add(-time.Minute)),
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110"),
			}}},
		},
	}
	if err := c.Status().Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	return own
}

// createOnOnly creates a binding of 3 replicas of 1 CPU each, all to be
// placed on the member "only" (Divided, Aggregated).
func createOnOnly(t *testing.T, c client.Client, name string) *workv1alpha1.ResourceBinding {
	t.Helper()
	b := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "default", Name: name},
			Replicas: 3,
			ReplicaRequirements: &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("1"),
			}},
			Placement: &policyv1alpha1.Placement{
				ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"only"}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingTypeDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionPreferenceAggregated,
				},
			},
		},
	}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	return b
}

// startPlacer runs a scheduler of its own against own, as a leader does,
// until the returned stop is called; its client is the manager's, or what
// wrap makes of it; its ledger is the manager's default (30 s of grace, 90
// s at most) when nil.
func startPlacer(t *testing.T, own *testenv.Env, ledger *assumed.Ledger, wrap func(client.Client) client.Client) (stop func()) {
	t.Helper()
	return own.StartManager(t, func(mgr ctrl.Manager) error {
		c := mgr.GetClient()
		if wrap != nil {
			c = wrap(c)
		}
		if ledger == nil {
			ledger = assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)
		}
		r := &bindingcontroller.Placer{
			Client:        c,
			Scheduler:     scheduler.New(scheduler.WithLedger(ledger)),
			Recorder:      mgr.GetEventRecorder("flotilla-scheduler"),
			RetryInterval: time.Second,
		}
		return r.SetupWithManager(mgr, controller.Options{})
	})
}
