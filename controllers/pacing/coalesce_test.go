package pacing

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// An update urgent picks is queued at once; any other event waits out
// the window.
func TestAnUrgentUpdateIsNotHeldForTheWindow(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	self := func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	}
	urgent := func(_ context.Context, before, after client.Object) bool { return after.GetLabels()["ready"] == "true" }
	h := EnqueueCoalescedUnless(self, time.Hour, urgent)
	cm := func(name, ready string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: map[string]string{"ready": ready}}}
	}
	ctx := context.Background()
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: cm("created", "true")}, q)
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: cm("progress", "false"), ObjectNew: cm("progress", "false")}, q)
	h.Generic(ctx, event.TypedGenericEvent[client.Object]{Object: cm("generic", "true")}, q)
	if q.Len() != 0 {
		t.Fatalf("%d queued at once; want none before the window ends", q.Len())
	}
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: cm("turned", "false"), ObjectNew: cm("turned", "true")}, q)
	if q.Len() != 1 {
		t.Fatalf("%d queued at once; want the urgent update", q.Len())
	}
	if got, _ := q.Get(); got.Name != "turned" {
		t.Errorf("queued %s, want turned", got.Name)
	}
}
