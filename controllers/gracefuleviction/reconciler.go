// Package gracefuleviction removes a binding's graceful eviction tasks when
// their purge mode allows (internal/eviction.PurgeOf), so that
// controllers/binding deletes the evicted member's Work:
//
//   - Gracefully: once the binding is healthy on its new members (scheduled
//     for its generation, every Work applied and Healthy, readyReplicas at
//     spec.replicas), or the grace period passes;
//   - Directly: this controller deletes the evicted member's Work first and
//     removes the task once the Work is gone (the scheduling controller does
//     not place the binding while such a task is held), or when the grace
//     period passes;
//   - Never (suppressDeletion): the task stays until an operator sets
//     suppressDeletion to false.
package gracefuleviction

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/internal/eviction"
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// conflictRequeue is the fixed retry after a write conflict: the binding's
// spec is also written by the scheduler and the detector.
const conflictRequeue = 200 * time.Millisecond

// Reconciler purges graceful eviction tasks.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// GracePeriod bounds a task without gracePeriodSeconds (--graceful-eviction-timeout).
	GracePeriod time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers one controller per binding kind: bindings with
// tasks, on any change (their status says when the replacement is healthy),
// and the deletion of their Works.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("flotilla-graceful-eviction")
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	for _, kind := range []string{binding.KindResourceBinding, binding.KindClusterResourceBinding} {
		kind := kind
		err := ctrl.NewControllerManagedBy(mgr).
			Named("graceful-eviction-"+strings.ToLower(kind)).
			For(binding.NewBinding(kind), builder.WithPredicates(hasTasks())).
			Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(binding.WorkToBinding(kind)),
				builder.WithPredicates(workGoing())).
			WithOptions(options).
			Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return r.Reconcile(ctx, kind, req)
			}))
		if err != nil {
			return fmt.Errorf("graceful eviction controller for %s: %w", kind, err)
		}
	}
	return nil
}

// Reconcile decides every task of one binding and writes the survivors.
func (r *Reconciler) Reconcile(ctx context.Context, kind string, req ctrl.Request) (ctrl.Result, error) {
	b := binding.NewBinding(kind)
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	spec := b.BindingSpec()
	if !b.GetDeletionTimestamp().IsZero() || len(spec.GracefulEvictionTasks) == 0 {
		return ctrl.Result{}, nil
	}
	now := r.Now()
	view := eviction.Binding{Generation: b.GetGeneration(), Spec: spec, Status: b.BindingStatus()}
	before := b.DeepCopyObject().(client.Object)
	var keep []workv1alpha1.GracefulEvictionTask
	var removed []string
	var recheck time.Time
	for i := range spec.GracefulEvictionTasks {
		task := &spec.GracefulEvictionTasks[i]
		work, err := r.workOf(ctx, kind, b, task.FromCluster)
		if err != nil {
			return ctrl.Result{}, err
		}
		p := eviction.PurgeOf(task, view, work == nil, r.GracePeriod, now)
		if p.DeleteWork && work != nil && work.DeletionTimestamp.IsZero() {
			if err := r.Client.Delete(ctx, work); err != nil && !apierrors.IsNotFound(err) {
				return ctrl.Result{}, fmt.Errorf("delete Work %s/%s of evicted member %s: %w", work.Namespace, work.Name, task.FromCluster, err)
			}
			ctrl.LoggerFrom(ctx).V(1).Info("Deleting the evicted copy first", "member", task.FromCluster)
		}
		if p.Remove {
			removed = append(removed, task.FromCluster+": "+p.Why)
			continue
		}
		keep = append(keep, *task)
		if !p.RecheckAt.IsZero() && (recheck.IsZero() || p.RecheckAt.Before(recheck)) {
			recheck = p.RecheckAt
		}
	}
	if len(removed) > 0 {
		spec.GracefulEvictionTasks = keep
		if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if apierrors.IsConflict(err) {
				return ctrl.Result{RequeueAfter: conflictRequeue}, nil
			}
			return ctrl.Result{}, fmt.Errorf("remove graceful eviction tasks of %s %s: %w", kind, req.NamespacedName, err)
		}
		slices.Sort(removed)
		for _, why := range removed {
			r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, workv1alpha1.PurgedEvent, "Purge", "Released the evicted copy on %s", why)
		}
	}
	if !recheck.IsZero() {
		return ctrl.Result{RequeueAfter: max(recheck.Sub(now), 0) + 50*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// workOf is the binding's Work on member; nil when it is gone.
func (r *Reconciler) workOf(ctx context.Context, kind string, b workv1alpha1.Binding, member string) (*workv1alpha1.Work, error) {
	w := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: binding.WorkName(kind, b.GetNamespace(), b.GetName())}
	if err := r.Client.Get(ctx, key, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Work %s: %w", key, err)
	}
	return w, nil
}

// hasTasks passes bindings that hold graceful eviction tasks, on any change.
func hasTasks() predicate.Funcs {
	with := func(o client.Object) bool {
		b, ok := o.(workv1alpha1.Binding)
		return ok && len(b.BindingSpec().GracefulEvictionTasks) > 0
	}
	return predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return with(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return with(e.ObjectNew) && e.ObjectOld.GetResourceVersion() != e.ObjectNew.GetResourceVersion()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// workGoing passes Work deletions and deletion starts.
func workGoing() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
