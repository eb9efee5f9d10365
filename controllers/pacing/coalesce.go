package pacing

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// EnqueueCoalesced is handler.TypedEnqueueRequestsFromMapFunc with a delay:
// the requests mapFn makes are queued after window, and those made again
// while they wait are not queued twice (a delaying queue keeps an item's
// earliest time). A burst of events about one object — a binding's member
// Works created, applied and reporting within moments of each other; a
// policy's templates applied one after another — then becomes one
// reconcile and one write, at most window late. A window of zero or less
// queues at once.
func EnqueueCoalesced[T client.Object](mapFn handler.TypedMapFunc[T, reconcile.Request], window time.Duration) handler.TypedEventHandler[T, reconcile.Request] {
	if window <= 0 {
		return handler.TypedEnqueueRequestsFromMapFunc(mapFn)
	}
	add := func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], objs ...T) {
		var none T
		for _, obj := range objs {
			if any(obj) == any(none) {
				continue
			}
			for _, req := range mapFn(ctx, obj) {
				q.AddAfter(req, window)
			}
		}
	}
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
		GenericFunc: func(ctx context.Context, e event.TypedGenericEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(ctx, q, e.Object)
		},
	}
}

// EnqueueCoalescedUnless is EnqueueCoalesced but for the updates urgent
// picks, which are queued at once: the change a reader waits for (a Work
// turning Available, its binding's Ready) is not held for a window meant
// to merge a burst's reports.
func EnqueueCoalescedUnless[T client.Object](mapFn handler.TypedMapFunc[T, reconcile.Request], window time.Duration,
	urgent func(ctx context.Context, before, after T) bool) handler.TypedEventHandler[T, reconcile.Request] {
	coalesced := EnqueueCoalesced(mapFn, window)
	now := handler.TypedEnqueueRequestsFromMapFunc(mapFn)
	return handler.TypedFuncs[T, reconcile.Request]{
		CreateFunc: coalesced.Create,
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[T], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if urgent(ctx, e.ObjectOld, e.ObjectNew) {
				now.Update(ctx, e, q)
				return
			}
			coalesced.Update(ctx, e, q)
		},
		DeleteFunc:  coalesced.Delete,
		GenericFunc: coalesced.Generic,
	}
}
