package agent

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"sigs.k8s.io/cluster-api/util/finalizers"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/pacing"
)

// workReconciler applies the Works of the agent's execution namespace to
// its member with the applier Push execution uses, and writes their status
// back to the hub. It owns the execution finalizer of its member's Works.
type workReconciler struct {
	// hub reads Works from the agent's cache and writes them to the hub.
	hub     client.Client
	member  string
	applier *applier.Applier
	applied *applier.Applied
	// watcher watches the objects the agent applied, so that their changes
	// reach the Work's status at once.
	watcher *memberwatch.Watcher
	mode    *syncModeGate
	clock   clock.PassiveClock
	// reports paces status writes that only move progress, as the hub's
	// execution controller does.
	reports *pacing.Reports
	// outcomes is what the agent last wrote of each Work's status.
	outcomes *applier.Outcomes
}

// FieldManager is the field manager of the agent's writes of a Work's
// status on the hub.
const FieldManager = "flotilla-agent"

func (r *workReconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	w := &workv1alpha1.Work{}
	if err := r.hub.Get(ctx, req.NamespacedName, w); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	pull, err := r.mode.pull(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !pull {
		// The hub applies the member's Works in Push mode; look again later
		// in case the member switches back.
		r.forget(req.NamespacedName)
		return ctrl.Result{RequeueAfter: r.applier.ResyncHealthy}, nil
	}

	if w.DeletionTimestamp.IsZero() {
		if _, err := finalizers.EnsureFinalizer(ctx, r.hub, w, workv1alpha1.ExecutionFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	} else if !controllerutil.ContainsFinalizer(w, workv1alpha1.ExecutionFinalizer) {
		return ctrl.Result{}, nil // nothing of the agent's to remove
	}
	// As the agent last wrote it, if the hub's cache has not seen that yet.
	r.outcomes.Overlay(w)
	read := w.DeepCopy()
	defer func() {
		// When the hub is down this fails and the Work is retried with
		// backoff; what was applied stays, and is not applied again.
		// Refused because the hub changed the Work meanwhile, this outcome
		// was of the version before: it comes back for the new one.
		wait, err := applier.WriteOutcome(ctx, r.hub, read, w, FieldManager, r.reports, r.outcomes)
		res, reterr = applier.AfterOutcome(req.NamespacedName, res, reterr, wait, err)
	}()

	if !w.DeletionTimestamp.IsZero() {
		if keep, err := r.memberKeepsWhatRuns(ctx); err != nil {
			return ctrl.Result{}, err
		} else if keep {
			if left := applier.Abandon(w); len(left) > 0 {
				ctrl.LoggerFrom(ctx).Info("The member leaves the fleet and keeps the objects of a deleted Work", "objects", left)
			}
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		if err := r.applier.Withdraw(ctx, r.member, w); err != nil {
			return ctrl.Result{}, err
		}
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	out, err := r.execute(ctx, w)
	if werr := r.watcher.Track(ctx, r.member, w); werr != nil {
		ctrl.LoggerFrom(ctx).V(1).Info("Could not watch the Work's objects", "error", werr.Error())
	}
	return ctrl.Result{RequeueAfter: out.RequeueAfter}, err
}

// forget drops what the agent knows of a Work it no longer applies.
func (r *workReconciler) forget(key types.NamespacedName) {
	r.applied.Forget(key)
	r.watcher.Forget(r.member, key)
	r.outcomes.Forget(key)
}

// memberKeepsWhatRuns reads the agent's MemberCluster (deletions are rare,
// so uncached) and says whether it leaves the fleet keeping what runs in it
// (applier.KeepsWhatRuns).
func (r *workReconciler) memberKeepsWhatRuns(ctx context.Context) (bool, error) {
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.hub.Get(ctx, client.ObjectKey{Name: r.member}, m); err != nil {
		if apierrors.IsNotFound(err) {
			return true, nil // removed from the fleet: nothing asks for withdrawal any more
		}
		return false, fmt.Errorf("read MemberCluster %s before withdrawing a Work: %w", r.member, err)
	}
	return applier.KeepsWhatRuns(m), nil
}

// execute applies a Work the member does not hold yet; one it holds is only
// read back, unless an object went missing meanwhile.
func (r *workReconciler) execute(ctx context.Context, w *workv1alpha1.Work) (applier.Outcome, error) {
	return r.applier.ApplyOrRefresh(ctx, r.member, w, r.applied, r.clock.Now())
}
