package quota

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/quota/tracker"
)

// Feed keeps the tracker up to date from the manager's informers on
// ResourceBindings and FederatedResourceQuotas. Event handlers, not a
// reconciler, so that the tracker sees a change before any controller that
// reacts to the same event runs; the tracker is marked synced once both
// handlers have seen their initial lists (until then the scheduler's quota
// checks wait). ClusterResourceBindings place cluster-scoped templates,
// which no namespace's quota covers.
func Feed(ctx context.Context, mgr ctrl.Manager, t *tracker.Tracker) error {
	bindings, err := mgr.GetCache().GetInformer(ctx, &workv1alpha1.ResourceBinding{})
	if err != nil {
		return fmt.Errorf("informer of ResourceBindings: %w", err)
	}
	bindingsSeen, err := bindings.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observeBinding(t, obj) },
		UpdateFunc: func(_, obj any) { observeBinding(t, obj) },
		DeleteFunc: func(obj any) {
			if b, ok := unwrap(obj).(*workv1alpha1.ResourceBinding); ok {
				t.ForgetBinding(bindingKey(b), b.Namespace)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch ResourceBindings for quota: %w", err)
	}
	quotas, err := mgr.GetCache().GetInformer(ctx, &policyv1alpha1.FederatedResourceQuota{})
	if err != nil {
		return fmt.Errorf("informer of FederatedResourceQuotas: %w", err)
	}
	quotasSeen, err := quotas.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { observeQuota(t, obj) },
		UpdateFunc: func(_, obj any) { observeQuota(t, obj) },
		DeleteFunc: func(obj any) {
			if q, ok := unwrap(obj).(*policyv1alpha1.FederatedResourceQuota); ok {
				t.RemoveQuota(q.Namespace, q.Name)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch FederatedResourceQuotas: %w", err)
	}
	return mgr.Add(&syncMarker{tracker: t, seen: []toolscache.ResourceEventHandlerRegistration{bindingsSeen, quotasSeen}})
}

func observeBinding(t *tracker.Tracker, obj any) {
	b, ok := obj.(*workv1alpha1.ResourceBinding)
	if !ok {
		return
	}
	t.ObserveRenderedBinding(bindingKey(b), b.Namespace, quota.WorkloadOf(&b.Spec), b.Status.RenderedUsage, !b.DeletionTimestamp.IsZero())
}

// observeQuota records a quota's overall; one being deleted limits nothing.
func observeQuota(t *tracker.Tracker, obj any) {
	q, ok := obj.(*policyv1alpha1.FederatedResourceQuota)
	if !ok {
		return
	}
	if !q.DeletionTimestamp.IsZero() {
		t.RemoveQuota(q.Namespace, q.Name)
		return
	}
	t.SetQuota(q.Namespace, q.Name, q.Spec.Overall)
}

// bindingKey is the scheduler's key of a binding (its Input.Key).
func bindingKey(b client.Object) string { return b.GetNamespace() + "/" + b.GetName() }

func unwrap(obj any) any {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// syncMarker marks the tracker synced once every handler has seen its
// informer's initial list. It runs on every replica, leader or not: the
// tracker is fed everywhere, so a new leader answers at once.
type syncMarker struct {
	tracker *tracker.Tracker
	seen    []toolscache.ResourceEventHandlerRegistration
}

func (s *syncMarker) Start(ctx context.Context) error {
	synced := make([]toolscache.InformerSynced, len(s.seen))
	for i, reg := range s.seen {
		synced[i] = reg.HasSynced
	}
	if toolscache.WaitForCacheSync(ctx.Done(), synced...) {
		s.tracker.MarkSynced()
	}
	return nil
}

func (s *syncMarker) NeedLeaderElection() bool { return false }
