package binding

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/scheduler"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
)

var oneCPU = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}

// tenCPUMember has 10 free CPU on a model observed at observed, having seen
// seen Pods of namespace "shop".
func tenCPUMember(name string, observed time.Time, seen int32) clusterv1alpha1.MemberCluster {
	return clusterv1alpha1.MemberCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Status: clusterv1alpha1.MemberClusterStatus{CapacityModel: &clusterv1alpha1.CapacityModel{
			ObservedTime: metav1.NewTime(observed),
			BoundPods:    map[string]int32{"shop": seen},
			NodeGroups: []clusterv1alpha1.NodeGroup{{Count: 1, Free: corev1.ResourceList{
				corev1.ResourceCPU: resource.MustParse("10"), corev1.ResourcePods: resource.MustParse("110")}}},
		}},
	}
}

func placedBinding(name string, scheduled time.Time, clusters ...workv1alpha1.TargetCluster) *workv1alpha1.ResourceBinding {
	var replicas int32
	for _, c := range clusters {
		replicas += c.Replicas
	}
	at := metav1.NewTime(scheduled)
	return &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource:            workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: name},
			Replicas:            replicas,
			ReplicaRequirements: oneCPU,
			Clusters:            clusters,
		},
		Status: workv1alpha1.ResourceBindingStatus{LastScheduledTime: &at},
	}
}

// A new leader's ledger holds what the previous leader placed and the
// members have not seen: per member and namespace, the bindings' replicas
// beyond the Pods the model counts, charged to the newest placements.
func TestRestoreHoldsWhatTheMembersHaveNotSeen(t *testing.T) {
	now := time.Now()
	snap, err := scheduler.NewSnapshot([]clusterv1alpha1.MemberCluster{
		// a has seen 3 of shop's Pods; b has seen all 4 placed there.
		tenCPUMember("a", now.Add(-20*time.Second), 3),
		tenCPUMember("b", now.Add(-time.Second), 4),
	})
	if err != nil {
		t.Fatal(err)
	}
	bindings := []workv1alpha1.Binding{
		// Running for an hour, seen: 3 on a, 2 on b.
		placedBinding("old", now.Add(-time.Hour), workv1alpha1.TargetCluster{Name: "a", Replicas: 3}, workv1alpha1.TargetCluster{Name: "b", Replicas: 2}),
		// Placed 10 s ago: 4 on a (unseen), 2 on b (seen: b has 4 of 4).
		placedBinding("new", now.Add(-10*time.Second), workv1alpha1.TargetCluster{Name: "a", Replicas: 4}, workv1alpha1.TargetCluster{Name: "b", Replicas: 2}),
	}
	ledger := assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)
	restoreHolds(ledger, snap, bindings)

	fit := func(member, exclude string) int64 {
		t.Helper()
		m, _ := ledger.Adjusted(member, snap.Models()[map[string]int{"a": 0, "b": 1}[member]], exclude)
		return m.Fit(capacity.NewRequirement(oneCPU))
	}
	if got := fit("a", "another"); got != 6 {
		t.Errorf("a for another binding: %d CPU-replicas fit, want 6 (10 less the 4 unseen)", got)
	}
	if got := fit("b", "another"); got != 10 {
		t.Errorf("b for another binding: %d fit, want 10 (b has seen everything placed)", got)
	}
	entries := ledger.Entries("a")
	if len(entries) != 1 || entries[0].Binding != "shop/new" || entries[0].Replicas != 4 {
		t.Errorf("a's entries %+v, want the 4 replicas of shop/new only", entries)
	}

	// The same bindings restored by a leader starting 2 minutes later: past
	// the 90 s bound, nothing is held.
	late := assumed.New(30*time.Second).WithMaxHold(90*time.Second, func() time.Time { return now.Add(2 * time.Minute) })
	restoreHolds(late, snap, bindings)
	if n := len(late.Entries("a")) + len(late.Entries("b")); n != 0 {
		t.Errorf("%d entries restored from placements older than the bound", n)
	}
}

// Unseen Pods of a namespace are charged once, however many recent
// bindings share it: the newest first, up to what each placed.
func TestRestoreChargesANamespacesUnseenPodsOnce(t *testing.T) {
	now := time.Now()
	snap, err := scheduler.NewSnapshot([]clusterv1alpha1.MemberCluster{tenCPUMember("a", now.Add(-time.Minute), 2)})
	if err != nil {
		t.Fatal(err)
	}
	// 6 placed on a, 2 seen: 4 unseen, 3 of the newest, 1 of the other.
	bindings := []workv1alpha1.Binding{
		placedBinding("first", now.Add(-20*time.Second), workv1alpha1.TargetCluster{Name: "a", Replicas: 3}),
		placedBinding("second", now.Add(-5*time.Second), workv1alpha1.TargetCluster{Name: "a", Replicas: 3}),
	}
	ledger := assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)
	restoreHolds(ledger, snap, bindings)
	held := map[string]int64{}
	for _, e := range ledger.Entries("a") {
		held[e.Binding] += e.Replicas
	}
	if held["shop/second"] != 3 || held["shop/first"] != 1 {
		t.Errorf("held %v, want shop/second 3 and shop/first 1", held)
	}
	m, _ := ledger.Adjusted("a", snap.Models()[0], "another")
	if got := m.Fit(capacity.NewRequirement(oneCPU)); got != 6 {
		t.Errorf("%d fit for another binding, want 6", got)
	}
}

// A restored hold whose Work its member had applied (the binding rendered
// whole, the member's item applied) counts its grace from the decision, as
// before; one whose Work was not in the member yet waits for it (up to the
// bound), so a newer model does not release it.
func TestRestoredHoldsWaitForTheirWorkOnlyWhereItWasNotApplied(t *testing.T) {
	now := time.Now()
	decided := now.Add(-40 * time.Second)
	snap, err := scheduler.NewSnapshot([]clusterv1alpha1.MemberCluster{
		tenCPUMember("a", now.Add(-time.Second), 0), tenCPUMember("b", now.Add(-time.Second), 0),
	})
	if err != nil {
		t.Fatal(err)
	}
	b := placedBinding("new", decided, workv1alpha1.TargetCluster{Name: "a", Replicas: 2}, workv1alpha1.TargetCluster{Name: "b", Replicas: 3})
	b.Generation = 4
	b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRendered, Status: metav1.ConditionTrue, ObservedGeneration: 4, Reason: "Rendered"}}
	b.Status.AggregatedStatus = []workv1alpha1.AggregatedStatusItem{{ClusterName: "a", Applied: true}, {ClusterName: "b", AppliedMessage: "Work not applied yet"}}

	ledger := assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)
	restoreHolds(ledger, snap, []workv1alpha1.Binding{b})
	for _, member := range []string{"a", "b"} {
		if e := ledger.Entries(member); len(e) != 1 || e[0].Generation != 4 {
			t.Fatalf("%s's entries %+v, want one at generation 4", member, e)
		}
	}
	// Models observed now, 40 s after the decision: past the grace.
	fit := func(i int, member string) int64 {
		m, _ := ledger.Adjusted(member, snap.Models()[i], "another")
		return m.Fit(capacity.NewRequirement(oneCPU))
	}
	if got := fit(0, "a"); got != 10 {
		t.Errorf("a (applied 40 s ago, model newer than the grace): %d fit, want 10", got)
	}
	if got := fit(1, "b"); got != 7 {
		t.Errorf("b (its Work not applied yet): %d fit, want 7", got)
	}

	// Rendered at an older generation than the placement: nothing is
	// known applied.
	b.Status.Conditions[0].ObservedGeneration = 3
	older := assumed.New(30*time.Second).WithMaxHold(90*time.Second, nil)
	restoreHolds(older, snap, []workv1alpha1.Binding{b})
	if e := older.Entries("a"); len(e) != 1 || !e[0].AppliedAt.IsZero() {
		t.Errorf("a's entries %+v rendered from an older generation: want one not applied", e)
	}
}
