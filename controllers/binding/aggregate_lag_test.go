package binding

import (
	"context"
	"encoding/json"
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
)

// The cache has not seen the aggregate phase's own last write (m1 turned
// Healthy at t1) when a Work's change wakes it again: it starts from that
// write, not from the stale binding, and keeps t1 where the stale binding
// (m1 Unhealthy since t0) would have made the transition now. No write
// carries a lock, so none is refused for the cache's lag.
func TestAnAggregationStartsFromItsOwnLastWriteWhileTheCacheLags(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	now := t1.Time
	s := runtime.NewScheme()
	if err := workv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	rb := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "web-deployment", UID: types.UID("b-1"), Generation: 1},
		Spec:       workv1alpha1.ResourceBindingSpec{Resource: web, Replicas: 1, Clusters: []workv1alpha1.TargetCluster{{Name: "m1", Replicas: 1}}},
		Status: workv1alpha1.ResourceBindingStatus{AggregatedStatus: []workv1alpha1.AggregatedStatusItem{
			{ClusterName: "m1", Applied: true, Health: workv1alpha1.ResourceUnhealthy, HealthTransitionTime: &t0}}},
	}
	w := workOn("m1", &metav1.Condition{Status: metav1.ConditionTrue, Reason: "Applied"},
		deployment(workv1alpha1.ResourceHealthy, `{"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1}`))
	w.Name, w.Labels[workv1alpha1.BindingPermanentIDLabel] = "web-m1", "b-1"
	key := client.ObjectKey{Namespace: "fleet", Name: "web-deployment"}

	var writes []statusWrite
	cache := lagging(newFakeCache(s).WithObjects(rb, &w).Build(), &writes)
	r := &Aggregator{Client: cache, Recorder: events.NewFakeRecorder(10), Now: func() time.Time { return now }}
	aggregate := func() {
		t.Helper()
		res, err := r.Reconcile(context.Background(), KindResourceBinding, ctrl.Request{NamespacedName: key})
		if err != nil || res.RequeueAfter != 0 {
			t.Fatalf("Reconcile: %v, %+v; want done", err, res)
		}
	}
	aggregate() // at t1: m1 Healthy
	if len(writes) != 1 {
		t.Fatalf("%d status writes at t1, want 1", len(writes))
	}
	// A minute later m1 reports again (a new observed generation, still
	// Healthy); the cache still shows the binding as it was before t1.
	now = t1.Add(time.Minute)
	w.Status.ManifestStatuses = []workv1alpha1.ManifestStatus{deployment(workv1alpha1.ResourceHealthy,
		`{"observedGeneration":2,"replicas":1,"readyReplicas":1,"availableReplicas":1,"updatedReplicas":1}`)}
	if err := cache.Update(context.Background(), &w); err != nil {
		t.Fatal(err)
	}
	aggregate()
	if len(writes) != 2 {
		t.Fatalf("%d status writes, want 2", len(writes))
	}
	for i, sent := range writes {
		if sent.Metadata.ResourceVersion != "" {
			t.Errorf("write %d locked on version %s, want no lock", i, sent.Metadata.ResourceVersion)
		}
	}
	last := writes[1].Status.AggregatedStatus
	if len(last) != 1 || last[0].Health != workv1alpha1.ResourceHealthy || last[0].HealthTransitionTime == nil || !last[0].HealthTransitionTime.Equal(&t1) {
		t.Errorf("written again: %+v; want m1 Healthy since %s, as this phase last wrote", last, t1)
	}
}

// statusWrite is what a phase's status apply sent.
type statusWrite struct {
	Metadata metav1.ObjectMeta                  `json:"metadata"`
	Status   workv1alpha1.ResourceBindingStatus `json:"status"`
}

// lagging is c whose status applies are answered and recorded in writes
// but never reach c: a cache that lags them.
func lagging(c client.WithWatch, writes *[]statusWrite) client.WithWatch {
	return interceptor.NewClient(c, interceptor.Funcs{
		SubResourceApply: func(_ context.Context, _ client.Client, _ string, obj runtime.ApplyConfiguration, _ ...client.SubResourceApplyOption) error {
			raw, err := json.Marshal(obj)
			if err != nil {
				return err
			}
			var sent statusWrite
			if err := json.Unmarshal(raw, &sent); err != nil {
				return err
			}
			*writes = append(*writes, sent)
			return nil
		},
	})
}
