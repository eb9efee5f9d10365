package quota

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/hubscheme"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// rb is a binding of namespace tenant created minutes after epoch, with a
// Scheduled condition of status and reason (none when status is empty).
func rb(name string, minutes int, status metav1.ConditionStatus, reason string) workv1alpha1.ResourceBinding {
	b := workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{
		Namespace: "tenant", Name: name, CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(minutes) * time.Minute)),
	}}
	if status != "" {
		b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: status, Reason: reason}}
	}
	return b
}

func names(reqs []reconcile.Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Name
	}
	return out
}

func TestWaitingOnQuotaAreTheBindingsRefusedByQuotaOldestFirst(t *testing.T) {
	deleting := rb("deleting", 0, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded)
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch}
	got := names(WaitingOnQuota([]workv1alpha1.ResourceBinding{
		rb("young", 30, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("placed", 1, metav1.ConditionTrue, workv1alpha1.BindingReasonSuccess),
		rb("b-same-age", 10, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("unschedulable", 2, metav1.ConditionFalse, workv1alpha1.BindingReasonUnschedulable),
		rb("old", 5, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("a-same-age", 10, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("undecided", 0, "", ""),
		deleting,
	}))
	want := []string{"old", "a-same-age", "b-same-age", "young"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestRetryQueuesTheWaitingBindingsOldestFirstWhenQuotaFrees(t *testing.T) {
	waiting := []workv1alpha1.ResourceBinding{
		rb("young", 30, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("middle", 20, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
		rb("old", 10, metav1.ConditionFalse, workv1alpha1.BindingReasonQuotaExceeded),
	}
	objs := make([]client.Object, len(waiting))
	for i := range waiting {
		objs[i] = &waiting[i]
	}
	reader := fake.NewClientBuilder().WithScheme(hubscheme.New()).WithObjects(objs...).WithStatusSubresource(objs...).Build()

	tr := tracker.New(tracker.Options{})
	tr.MarkSynced()
	cpu := &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
	placed := quota.Workload{APIVersion: "apps/v1", Kind: "Deployment", Requirements: cpu, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 10}}}
	tr.SetQuota("tenant", "team", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})
	tr.ObserveBinding("tenant/running", "tenant", placed, false)

	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	// The queue already holds two of them, youngest first, waiting for
	// their periodic retry at the priority they last ran with.
	for _, name := range []string{"young", "old"} {
		p := RetryPriority
		q.AddWithOpts(priorityqueue.AddOpts{After: time.Hour, Priority: &p}, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "tenant", Name: name}})
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := NewRetry(reader, tr).Start(ctx, q); err != nil {
		t.Fatal(err)
	}

	// Growing usage frees nothing: nothing is queued.
	tr.ObserveBinding("tenant/other", "tenant", placed, false)
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d bindings ready after usage grew, want none", n)
	}

	// The running binding scales down: the three are queued, oldest first.
	placed.Clusters[0].Replicas = 6
	tr.ObserveBinding("tenant/running", "tenant", placed, false)
	var got []string
	for range 3 {
		done := make(chan reconcile.Request)
		go func() {
			item, _, _ := q.GetWithPriority()
			done <- item
		}()
		select {
		case item := <-done:
			got = append(got, item.Name)
			q.Done(item)
		case <-time.After(5 * time.Second):
			t.Fatalf("only %v queued within 5s", got)
		}
	}
	if want := []string{"old", "middle", "young"}; got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Errorf("queued %v, want %v", got, want)
	}
}

func TestABindingRefusedJustBeforeQuotaFreedIsRetriedByTheEcho(t *testing.T) {
	late := rb("late", 0, "", "")
	reader := fake.NewClientBuilder().WithScheme(hubscheme.New()).WithObjects(&late).WithStatusSubresource(&late).Build()
	tr := tracker.New(tracker.Options{})
	tr.MarkSynced()
	tr.SetQuota("tenant", "team", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10")})

	q := priorityqueue.New[reconcile.Request]("test")
	defer q.ShutDown()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := NewRetry(reader, tr).Start(ctx, q); err != nil {
		t.Fatal(err)
	}
	// Quota frees while the refusal of "late" is not written yet.
	tr.SetQuota("tenant", "team", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("20")})
	time.Sleep(100 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d queued before any binding waits", n)
	}
	late.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse,
		Reason: workv1alpha1.BindingReasonQuotaExceeded, LastTransitionTime: metav1.NewTime(epoch)}}
	if err := reader.Status().Update(ctx, &late); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(RetryEcho + 2*time.Second)
	for q.Len() == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the late refusal was not retried within %v", RetryEcho+2*time.Second)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
