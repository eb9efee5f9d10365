package binding

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/eviction"
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;delete

// purge is the phase that releases the binding's graceful eviction tasks
// when their purge mode allows (internal/eviction.PurgeOf), so that
// controllers/binding deletes the evicted member's Work:
//
//   - Gracefully: once the binding is healthy on its new members (scheduled
//     for its generation, every Work applied and Healthy, readyReplicas at
//     spec.replicas), or the grace period passes;
//   - Directly: the evicted member's Work is deleted first and the task
//     removed once the Work is gone (the scheduler does not place the
//     binding while such a task is held), or when the grace period passes;
//   - Never (suppressDeletion): the task stays until an operator sets
//     suppressDeletion to false.
//
// It writes the surviving tasks with an optimistic lock and says when to
// look again (a grace period ending); zero when nothing is waiting on time.
// The binding is the cached one: a conflict is retried by the caller.
func (t *Evictor) purge(ctx context.Context, kind string, b client.Object) (time.Time, error) {
	bb := b.(workv1alpha1.Binding)
	spec := bb.BindingSpec()
	if len(spec.GracefulEvictionTasks) == 0 {
		return time.Time{}, nil
	}
	now := t.Now()
	view := eviction.Binding{Generation: b.GetGeneration(), Spec: spec, Status: bb.BindingStatus()}
	before := b.DeepCopyObject().(client.Object)
	var keep []workv1alpha1.GracefulEvictionTask
	var removed []string
	var recheck time.Time
	for i := range spec.GracefulEvictionTasks {
		task := &spec.GracefulEvictionTasks[i]
		work, err := t.workOf(ctx, kind, bb, task.FromCluster)
		if err != nil {
			return time.Time{}, err
		}
		p := eviction.PurgeOf(task, view, work == nil, t.GracePeriod, now)
		if p.DeleteWork && work != nil && work.DeletionTimestamp.IsZero() {
			if err := t.Client.Delete(ctx, work); err != nil && !apierrors.IsNotFound(err) {
				return time.Time{}, fmt.Errorf("delete Work %s/%s of evicted member %s: %w", work.Namespace, work.Name, task.FromCluster, err)
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
	if len(removed) == 0 {
		return recheck, nil
	}
	spec.GracefulEvictionTasks = keep
	if err := t.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return time.Time{}, fmt.Errorf("remove graceful eviction tasks: %w", err)
	}
	slices.Sort(removed)
	for _, why := range removed {
		t.Recorder.Eventf(b, nil, corev1.EventTypeNormal, workv1alpha1.PurgedEvent, "Purge", "Released the evicted copy on %s", why)
	}
	return recheck, nil
}

// workOf is the binding's Work on member; nil when it is gone.
func (t *Evictor) workOf(ctx context.Context, kind string, b workv1alpha1.Binding, member string) (*workv1alpha1.Work, error) {
	w := &workv1alpha1.Work{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(member), Name: WorkName(kind, b.GetNamespace(), b.GetName())}
	if err := t.Client.Get(ctx, key, w); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read Work %s: %w", key, err)
	}
	return w, nil
}

// holdsTasks passes any change of a binding that holds graceful eviction
// tasks: its status says when the replacement is healthy.
func holdsTasks() predicate.Funcs {
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
