package scheduling_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/metrics"
)

// TestAShortPlacementIsReportedAndCompletedWhenRoomFrees: a Duplicated
// binding that one of the members it names cannot hold is placed on the
// others and says so — Scheduled=False, PartiallyScheduled, naming the
// member and why, an event on its template, the waiting metric — and is
// placed there too as soon as that member reports room, with no periodic
// retry (the place phase's backstop is minutes, the test's wait 30 s).
func TestAShortPlacementIsReportedAndCompletedWhenRoomFrees(t *testing.T) {
	ctx := context.Background()
	member(t, "short-a", "r7", "64", 1)
	member(t, "short-b", "r7", "64", 1)
	full := member(t, "short-c", "r7", "100m", 1) // 1 of 2 replicas of 100m fits
	waitingBefore := testutil.ToFloat64(metrics.BindingsWaitingForPlacement.WithLabelValues(workv1alpha1.BindingReasonPartiallyScheduled))

	b := binding(t, "short-web", 2, &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"short-a", "short-b", "short-c"}},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
	})
	got := waitFor(t, b, "PartiallyScheduled", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Reason == workv1alpha1.BindingReasonPartiallyScheduled
	})
	cond := scheduled(got)
	want := "placed on short-a:2, short-b:2; short of short-c (insufficient capacity: 1 of 2 replicas fit); placed there as soon as it has room"
	if cond.Status != metav1.ConditionFalse || cond.Message != want {
		t.Errorf("Scheduled = %s %s: %s\nwant False PartiallyScheduled: %s", cond.Status, cond.Reason, cond.Message, want)
	}
	if placement(got) != "short-a:2,short-b:2" {
		t.Errorf("placement %s, want the two members with room", placement(got))
	}
	if n := testutil.ToFloat64(metrics.BindingsWaitingForPlacement.WithLabelValues(workv1alpha1.BindingReasonPartiallyScheduled)); n != waitingBefore+1 {
		t.Errorf("flotilla_bindings_waiting_for_placement{reason=PartiallyScheduled} = %v, want %v", n, waitingBefore+1)
	}
	templateEvent(t, "short-web", corev1.EventTypeWarning, workv1alpha1.BindingReasonPartiallyScheduled, "short of short-c")

	// short-c reports room for both replicas: the binding is placed there.
	before := full.DeepCopy()
	full.Status.CapacityModel.ObservedTime = metav1.Now()
	full.Status.CapacityModel.NodeGroups[0].Free[corev1.ResourceCPU] = resource.MustParse("1")
	if err := env.Client.Status().Patch(ctx, full, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	got = waitFor(t, b, "Success on all three", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Reason == workv1alpha1.BindingReasonSuccess && placement(b) == "short-a:2,short-b:2,short-c:2"
	})
	if c := scheduled(got); c.Status != metav1.ConditionTrue || strings.Contains(c.Message, "short of") {
		t.Errorf("Scheduled = %s %s: %s", c.Status, c.Reason, c.Message)
	}
	if n := testutil.ToFloat64(metrics.BindingsWaitingForPlacement.WithLabelValues(workv1alpha1.BindingReasonPartiallyScheduled)); n != waitingBefore {
		t.Errorf("flotilla_bindings_waiting_for_placement{reason=PartiallyScheduled} = %v once complete, want %v", n, waitingBefore)
	}
	templateEvent(t, "short-web", corev1.EventTypeNormal, "Scheduled", "placement complete: placed on short-a:2, short-b:2, short-c:2")
}

// A member that has room reports it, but for a binding short elsewhere: the
// binding is not decided again (its decision record keeps its time).
func TestRoomOnAnotherMemberLeavesAShortBindingAlone(t *testing.T) {
	ctx := context.Background()
	member(t, "alone-a", "r8", "64", 1)
	other := member(t, "alone-b", "r8", "64", 1)
	member(t, "alone-c", "r8", "100m", 1)
	b := binding(t, "alone-web", 2, &policyv1alpha1.Placement{
		ClusterAffinity:   &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"alone-a", "alone-b", "alone-c"}},
		ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingTypeDuplicated},
	})
	got := waitFor(t, b, "PartiallyScheduled", func(b *workv1alpha1.ResourceBinding) bool {
		c := scheduled(b)
		return c != nil && c.Reason == workv1alpha1.BindingReasonPartiallyScheduled
	})
	decidedAt := scheduled(got).LastTransitionTime
	rv := got.ResourceVersion

	before := other.DeepCopy()
	other.Status.CapacityModel.ObservedTime = metav1.Now()
	other.Status.CapacityModel.NodeGroups[0].Free[corev1.ResourceCPU] = resource.MustParse("32")
	if err := env.Client.Status().Patch(ctx, other, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(b), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != rv || !scheduled(got).LastTransitionTime.Equal(&decidedAt) {
		t.Errorf("a capacity report of alone-b wrote the binding short of alone-c: resourceVersion %s → %s", rv, got.ResourceVersion)
	}
}

// templateEvent waits for an event of the given type and reason about the
// Deployment template name in default whose note contains note.
func templateEvent(t *testing.T, name, eventType, reason, note string) {
	t.Helper()
	var seen []string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		list := &eventsv1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace("default")); err != nil {
			t.Fatal(err)
		}
		seen = seen[:0]
		for _, e := range list.Items {
			if e.Regarding.Kind == "Deployment" && e.Regarding.Name == name {
				seen = append(seen, e.Type+" "+e.Reason+": "+e.Note)
				if e.Type == eventType && e.Reason == reason && strings.Contains(e.Note, note) {
					return
				}
			}
		}
	}
	t.Fatalf("no %s %s event on Deployment %s containing %q; events on it: %q", eventType, reason, name, note, seen)
}
