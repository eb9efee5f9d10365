package binding

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The cache has not seen the aggregate phase's own last write (m1 turned
// Healthy at t1) when a Work's event wakes it: its write, locked on the
// cached version, is refused, and it aggregates again at once from the
// live binding — keeping t1, where the stale binding (m1 Unhealthy) would
// have made the transition now.
func TestAnAggregationRefusedForTheCachesLagIsMadeAgainFromTheLiveBinding(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	now := t1.Add(time.Minute)
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rb := func(health workv1alpha1.ResourceHealth, at metav1.Time) *workv1alpha1.ResourceBinding {
		return &workv1alpha1.ResourceBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "web-deployment", UID: types.UID("b-1"), Generation: 1},
			Spec:       workv1alpha1.ResourceBindingSpec{Resource: web, Replicas: 1, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}}},
			Status: workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
				{ClusterName: "m1", Applied: true, Health: health, HealthTransitionTime: &at}}},
		}
	}
	w := workOn("m1", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"},
		deployment(workv1alpha1.ResourceHealthy, `{"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1}`))
	w.Name, w.Labels[workv1alpha1.BindingPermanentIDLabel] = "web-m1", "b-1"

	cachedBinding := fake.NewClientBuilder().WithScheme(s).WithObjects(rb(workv1alpha1.ResourceUnhealthy, t0), &w).Build()
	live := fake.NewClientBuilder().WithScheme(s).WithObjects(rb(workv1alpha1.ResourceHealthy, t1)).Build()
	stale, stored := &workv1alpha1.ResourceBinding{}, &workv1alpha1.ResourceBinding{}
	key := client.ObjectKey{Namespace: "fleet", Name: "web-deployment"}
	if err := cachedBinding.Get(context.Background(), key, stale); err != nil {
		t.Fatal(err)
	}
	if err := live.Get(context.Background(), key, stored); err != nil {
		t.Fatal(err)
	}
	// The live binding is a version ahead of the cache's.
	if err := live.Update(context.Background(), stored); err != nil {
		t.Fatal(err)
	}
	type write struct {
		Metadata metav1.ObjectMeta                  `json:"metadata"`
		Status   workv1alpha1.ResourceBindingStatus `json:"status"`
	}
	var writes []write
	cache := interceptor.NewClient(cachedBinding, interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var sent write
			if err := json.Unmarshal(raw, &sent); err != nil {
				return err
			}
			writes = append(writes, sent)
			if sent.Metadata.ResourceVersion != stored.ResourceVersion {
				return apierrors.NewConflict(schema.GroupResource{Group: "work.flotilla.io", Resource: "resourcebindings"}, key.Name, nil)
			}
			return nil
		},
	})
	r := &Aggregator{Client: cache, APIReader: live, Recorder: events.NewFakeRecorder(10), Now: func() time.Time { return now }}
	if stale.ResourceVersion == stored.ResourceVersion {
		t.Fatalf("the two versions must differ, both %s", stale.ResourceVersion)
	}
	res, err := r.Reconcile(context.Background(), KindResourceBinding, ctrl.Request{NamespacedName: key})
	if err != nil || res.RequeueAfter != 0 {
		t.Fatalf("Reconcile: %v, %+v; want done", err, res)
	}
	if len(writes) != 2 {
		t.Fatalf("%d status writes, want the refused one and one on the live version", len(writes))
	}
	last := writes[1].Status.AggregatedStatus
	if len(last) != 1 || last[0].Health != workv1alpha1.ResourceHealthy || last[0].HealthTransitionTime == nil || !last[0].HealthTransitionTime.Equal(&t1) {
		t.Errorf("written again: %+v; want m1 Healthy since %s, as the live binding says", last, t1)
	}
}
