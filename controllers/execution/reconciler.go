// Package execution applies Works to Push-mode members (Pull-mode members'
// flotilla-agents apply their own) with the hub's scoped identity in each
// member. What applying a Work means — server-side apply under the field
// manager "flotilla", conflict resolution, removal of what a Work no longer
// carries, suspension, per-manifest health and status — is
// controllers/applier's, shared with flotilla-agent.
//
// With a Watcher, the objects a Work applied are watched in the member and
// the Work is applied again as soon as one changes (controllers/memberwatch);
// besides, a Work is applied again, and its status refreshed, every
// ResyncUnhealthy while some object is not applied or not healthy, and every
// ResyncHealthy otherwise (drift repair).
//
// One member cannot hold up the others: at most MaxInFlightPerMember of a
// member's Works are applied at once (the rest wait without holding a
// worker), and as many read back (a Work the member holds as applied, whose
// object changed there: its status does not wait behind applies); each
// apply is bounded by MemberTimeout, and a member that did not answer is
// left alone for a growing backoff (memberclient.Health) — its
// Works say Applied=False MemberUnreachable — and caught up at once when it
// answers again. A Work the member rejects (invalid, denied by its
// admission) is retried with a doubling backoff up to 5 minutes, and at
// once when it changes; the member's message is in the Work's Applied
// condition and the binding's FullyApplied condition.
//
// Deletion is bounded: a deleted Work whose member has not answered (or, in
// Pull mode, whose agent's Lease has expired) for WithdrawTimeout since the
// deletion began is released without its objects being removed; what may
// remain in the member is named in LeftInMember events on the Work and the
// MemberCluster and in the MemberCluster's ObjectsLeftBehind condition.
package execution

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/finalizers"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/memberclient"
	"github.com/flotilla-io/flotilla/controllers/memberwatch"
	"github.com/flotilla-io/flotilla/controllers/metrics"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/interpreter"
)

// Defaults of the member isolation settings.
const (
	DefaultMaxInFlightPerMember = 4
	DefaultMemberTimeout        = 15 * time.Second
	DefaultWithdrawTimeout      = 10 * time.Minute
)

// LeftInMemberReason is the event reason of a Work released without its
// objects removed from an unreachable member.
const LeftInMemberReason = "LeftInMember"

// waitingRequeue is when a Work waiting for its member's slot is looked at
// again if no slot's release handed it back first.
const waitingRequeue = 30 * time.Second

// MemberClients hands out a client of a member that acts as the hub's
// scoped identity there; see applier.MemberClients.
type MemberClients = applier.MemberClients

// Access grants the hub's identity in a member what a Work needs before it
// is applied; see applier.Access.
type Access = applier.Access

// Options tune how often Works are applied again; see applier.Options.
type Options = applier.Options

// Event reasons on Works and the conflict message, as the applier writes them.
const (
	ApplyFailedReason  = applier.ApplyFailedReason
	RemoveFailedReason = applier.RemoveFailedReason
	ConflictMessage    = applier.ConflictMessage
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works/finalizers,verbs=update
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler applies Works to Push-mode members.
type Reconciler struct {
	Client        client.Client
	MemberClients MemberClients
	// Access, when set, extends the member identity's rights (namespaces,
	// cluster-scoped kinds) before a Work is applied.
	Access   Access
	Recorder events.EventRecorder
	Options
	// Health, when set, is what the hub's requests have shown of each
	// member (the MemberClients' connections must report to it): a member
	// that did not answer is not tried before its backoff ends.
	Health *memberclient.Health
	// MaxInFlightPerMember bounds how many Works of one member are applied
	// at once, and, apart, how many are read back (refreshed) at once.
	// Default DefaultMaxInFlightPerMember.
	MaxInFlightPerMember int
	// MemberTimeout bounds one Work's apply or removal in its member.
	// Default DefaultMemberTimeout.
	MemberTimeout time.Duration
	// WithdrawTimeout is how long a deleted Work waits for its unreachable
	// member before it is released anyway. Default DefaultWithdrawTimeout.
	WithdrawTimeout time.Duration
	// Watcher, when set, watches the objects Works applied in their members
	// and has a Work looked at again as soon as one of them changes (its
	// Changed is set here; it runs as one of the manager's runnables).
	Watcher *memberwatch.Watcher
	// Interpreter judges health, reflects status and retains member values
	// of the objects applied; nil knows the built-in kinds only.
	Interpreter *interpreter.Interpreter
	// Reports paces status writes that only move progress
	// (applier.WriteOutcome); Options.ProgressInterval when nil.
	Reports *pacing.Reports
	// Outcomes remembers the outcome last written to each Work (and tells
	// who else reads them, the aggregate phase); one of its own when nil.
	Outcomes *applier.Outcomes

	applier    *applier.Applier
	applied    *applier.Applied
	outcomes   *applier.Outcomes
	applying   *inFlight
	reading    *inFlight
	rejections rejections
	wakeups    chan event.GenericEvent
}

// SetupWithManager watches Works in execution namespaces, and the
// MemberClusters whose sync mode changes (their Works change hands).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.MemberClients == nil || r.Recorder == nil {
		return errors.New("execution: Client, MemberClients and Recorder must be set")
	}
	r.Options.Default()
	if r.MaxInFlightPerMember <= 0 {
		r.MaxInFlightPerMember = DefaultMaxInFlightPerMember
	}
	if r.MemberTimeout <= 0 {
		r.MemberTimeout = DefaultMemberTimeout
	}
	if r.WithdrawTimeout <= 0 {
		r.WithdrawTimeout = DefaultWithdrawTimeout
	}
	if r.Reports == nil {
		r.Reports = &pacing.Reports{Interval: r.ProgressInterval}
	}
	r.applier = &applier.Applier{Works: r.Client, Members: r.MemberClients, Access: r.Access, Recorder: r.Recorder, Options: r.Options,
		Interpreter: r.Interpreter}
	r.applied = applier.NewApplied(r.ResyncHealthy)
	r.outcomes = r.Outcomes
	if r.outcomes == nil {
		r.outcomes = &applier.Outcomes{}
	}
	r.wakeups = make(chan event.GenericEvent, 1024)
	r.applying = newInFlight(r.MaxInFlightPerMember, r.wakeups)
	r.reading = newInFlight(r.MaxInFlightPerMember, r.wakeups)
	if r.Health != nil {
		if err := mgr.Add(manager.RunnableFunc(r.catchUp)); err != nil {
			return err
		}
	}
	if r.Watcher != nil {
		r.Watcher.Changed = func(key types.NamespacedName, edited bool) {
			if edited {
				r.applied.Forget(key) // an object's spec was changed there: apply in full
			}
			r.wakeups <- workEvent(key)
		}
		if err := mgr.Add(r.Watcher); err != nil {
			return err
		}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("execution").
		For(&workv1alpha1.Work{}, builder.WithPredicates(
			InExecutionNamespace(),
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, deletionStarted()),
		)).
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.worksOfMember),
			builder.WithPredicates(syncModeChanged())).
		WatchesRawSource(source.Channel(r.wakeups, &handler.EnqueueRequestForObject{})).
		WithOptions(options).
		Complete(r)
}

// InExecutionNamespace passes events of objects in a flotilla-es-<member> namespace.
func InExecutionNamespace() predicate.Predicate {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		_, ok := memberOf(o.GetNamespace())
		return ok
	})
}

func memberOf(namespace string) (string, bool) {
	member, ok := strings.CutPrefix(namespace, clusterv1alpha1.ExecutionNamespacePrefix)
	return member, ok && member != ""
}

func deletionStarted() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// syncModeChanged passes updates of a MemberCluster whose spec.syncMode
// changed: a member switched to Push has its Works applied by the hub at once.
func syncModeChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			before, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			after, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && before.Spec.SyncMode != after.Spec.SyncMode
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// catchUp applies, as soon as a member answers again, every Work of it
// that waited out its backoff.
func (r *Reconciler) catchUp(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case member := <-r.Health.Recovered():
			for _, req := range r.worksOfMember(ctx, &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: member}}) {
				select {
				case r.wakeups <- workEvent(req.NamespacedName):
				case <-ctx.Done():
					return nil
				}
			}
		}
	}
}

func (r *Reconciler) worksOfMember(ctx context.Context, o client.Object) []reconcile.Request {
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(o.GetName()))); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List the Works of a member", "member", o.GetName())
		return nil
	}
	out := make([]reconcile.Request, 0, len(works.Items))
	for i := range works.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&works.Items[i])})
	}
	return out
}

// Reconcile applies a Work to its member, or removes its objects from the
// member when it is being deleted; its status is written in one request.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (res ctrl.Result, reterr error) {
	memberName, ok := memberOf(req.Namespace)
	if !ok {
		return ctrl.Result{}, nil
	}
	work := &workv1alpha1.Work{}
	if err := r.Client.Get(ctx, req.NamespacedName, work); err != nil {
		if apierrors.IsNotFound(err) {
			r.rejections.forget(req.NamespacedName)
			r.unwatch(memberName, req.NamespacedName)
			r.outcomes.Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	member := &clusterv1alpha1.MemberCluster{}
	memberErr := r.Client.Get(ctx, client.ObjectKey{Name: memberName}, member)
	if memberErr != nil && !apierrors.IsNotFound(memberErr) {
		return ctrl.Result{}, fmt.Errorf("read MemberCluster %s: %w", memberName, memberErr)
	}
	if memberErr == nil && member.Spec.SyncMode == clusterv1alpha1.Pull {
		// The member's flotilla-agent applies its Works with the same
		// applier and field manager, and owns the execution finalizer: it
		// removes what it applied when a Work is deleted, including a Work
		// the hub applied before the member switched to Pull. An agent
		// gone for good does not hold the Work forever.
		r.unwatch(memberName, req.NamespacedName)
		r.outcomes.Forget(req.NamespacedName)
		if work.DeletionTimestamp.IsZero() || !controllerutil.ContainsFinalizer(work, workv1alpha1.ExecutionFinalizer) {
			return ctrl.Result{}, nil
		}
		if conditions.IsTrue(member, clusterv1alpha1.ConditionReachable) {
			return ctrl.Result{}, nil
		}
		if wait := r.withdrawWait(work); wait > 0 {
			return ctrl.Result{RequeueAfter: wait}, nil
		}
		before := work.DeepCopy()
		if err := r.abandon(ctx, work, member, clusterv1alpha1.ObjectsLeftBehindReason, unanswered(work, member, "its agent's Lease expired")); err != nil {
			return ctrl.Result{}, err
		}
		// The agent may have come back meanwhile: never overwrite its write.
		return ctrl.Result{}, r.Client.Patch(ctx, work, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	}

	if work.DeletionTimestamp.IsZero() {
		if _, err := finalizers.EnsureFinalizer(ctx, r.Client, work, workv1alpha1.ExecutionFinalizer); err != nil {
			return ctrl.Result{}, err
		}
	}
	// As this controller last wrote it, if the cache has not seen that yet.
	r.outcomes.Overlay(work)
	read := work.DeepCopy()
	defer func() {
		// Refused because the renderer changed the Work meanwhile, this
		// outcome was of the version before: it comes back for the new one.
		wait, err := applier.WriteOutcome(ctx, r.Client, read, work, FieldManager, r.Reports, r.outcomes)
		res, reterr = applier.AfterOutcome(req.NamespacedName, res, reterr, wait, err)
	}()

	if !work.DeletionTimestamp.IsZero() || apierrors.IsNotFound(memberErr) {
		r.unwatch(memberName, req.NamespacedName)
	}
	if apierrors.IsNotFound(memberErr) {
		if !work.DeletionTimestamp.IsZero() {
			// The member is gone: nothing left to remove the objects from.
			controllerutil.RemoveFinalizer(work, workv1alpha1.ExecutionFinalizer)
			return ctrl.Result{}, nil
		}
		conditions.Set(work, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse,
			Reason: workv1alpha1.WorkReasonMemberUnavailable, Message: fmt.Sprintf("MemberCluster %s not found", memberName), ObservedGeneration: work.Generation})
		return ctrl.Result{RequeueAfter: r.ResyncUnhealthy}, nil
	}

	if r.Health != nil {
		if err := r.Health.Check(memberName); err != nil {
			if !work.DeletionTimestamp.IsZero() && r.withdrawWait(work) <= 0 {
				return ctrl.Result{}, r.abandon(ctx, work, member, clusterv1alpha1.ObjectsLeftBehindReason, unanswered(work, member, err.Error()))
			}
			return r.unreachable(work, err), nil
		}
	}
	// A Work the member holds as last applied is only read back (a change
	// its watch saw): that read does not wait behind the member's applies,
	// which in a burst would hold a Deployment's Ready behind every Work
	// queued for the member.
	slots := r.applying
	if work.DeletionTimestamp.IsZero() && r.applied.FreshFor(work, time.Now()) > 0 {
		slots = r.reading
	}
	if !slots.acquire(memberName, req.NamespacedName) {
		return ctrl.Result{RequeueAfter: waitingRequeue}, nil
	}
	defer slots.release(memberName)
	memberCtx, cancel := context.WithTimeout(ctx, r.MemberTimeout)
	defer cancel()

	if !work.DeletionTimestamp.IsZero() {
		if applier.KeepsWhatRuns(member) {
			return ctrl.Result{}, r.abandon(ctx, work, member, clusterv1alpha1.ObjectsKeptReason, fmt.Sprintf(
				"Work %s was deleted while member %s leaves the fleet (its Cluster no longer opts in): its objects stay there",
				work.Name, member.Name))
		}
		err := r.applier.Withdraw(memberCtx, memberName, work)
		if err != nil && r.Health != nil {
			if herr := r.Health.Check(memberName); herr != nil {
				if r.withdrawWait(work) <= 0 {
					return ctrl.Result{}, r.abandon(ctx, work, member, clusterv1alpha1.ObjectsLeftBehindReason, unanswered(work, member, herr.Error()))
				}
				return r.unreachable(work, herr), nil
			}
		}
		return ctrl.Result{}, err
	}
	before := work.DeepCopy()
	started := time.Now()
	// A Work applied in full at this generation is only read back: a watch
	// event for a Deployment rolling out is a status change, not a reason
	// to apply every manifest again.
	out, err := r.applier.ApplyOrRefresh(memberCtx, memberName, work, r.applied, started)
	metrics.WorkApplyDuration.WithLabelValues(memberName).Observe(metrics.Since(started))
	if r.Health != nil {
		if herr := r.Health.Check(memberName); herr != nil {
			// The member stopped answering during the apply: what the
			// manifests' statuses say is the timeout, not the member.
			return r.unreachable(work, herr), nil
		}
	}
	observeApply(memberName, before, work)
	if r.Watcher != nil {
		if err := r.Watcher.Track(ctx, memberName, work); err != nil {
			// The periodic refresh still comes: a watch is a speed-up.
			ctrl.LoggerFrom(ctx).V(1).Info("Could not watch the Work's objects in its member", "member", memberName, "error", err.Error())
		}
	}
	rejected := conditions.GetReason(work, workv1alpha1.WorkApplied) == workv1alpha1.WorkReasonApplyFailed
	return ctrl.Result{RequeueAfter: r.rejections.retryAfter(req.NamespacedName, work.Generation, rejected, out.RequeueAfter)}, err
}

// unwatch stops watching a Work's objects (deleted, or applied by an agent)
// and forgets that it was applied.
func (r *Reconciler) unwatch(member string, key types.NamespacedName) {
	if r.applied != nil {
		r.applied.Forget(key)
	}
	if r.Watcher != nil {
		r.Watcher.Forget(member, key)
	}
}

// withdrawWait is how much longer a deleted Work waits for its member.
func (r *Reconciler) withdrawWait(work *workv1alpha1.Work) time.Duration {
	return time.Until(work.DeletionTimestamp.Add(r.WithdrawTimeout))
}

// unanswered says why a deleted Work is released when its member did not
// answer for WithdrawTimeout.
func unanswered(work *workv1alpha1.Work, member *clusterv1alpha1.MemberCluster, why string) string {
	return fmt.Sprintf("Work %s was deleted %s ago and member %s did not answer (%s): its objects were not removed and may remain there",
		work.Name, time.Since(work.DeletionTimestamp.Time).Round(time.Second), member.Name, why)
}

// abandon releases a deleted Work without withdrawing its objects from the
// member (which did not answer, or leaves the fleet keeping what runs
// there), and says what remains there: an event on the Work and the member
// and the member's ObjectsLeftBehind condition.
func (r *Reconciler) abandon(ctx context.Context, work *workv1alpha1.Work, member *clusterv1alpha1.MemberCluster, reason, why string) error {
	left := applier.Abandon(work)
	if len(left) == 0 {
		return nil
	}
	msg := why + ": " + strings.Join(left, ", ")
	r.Recorder.Eventf(work, nil, corev1.EventTypeWarning, LeftInMemberReason, "Withdraw", "%s", msg)
	r.Recorder.Eventf(member, nil, corev1.EventTypeWarning, LeftInMemberReason, "Withdraw", "%s", msg)
	helper, err := patch.NewHelper(member, r.Client)
	if err != nil {
		return err
	}
	conditions.Set(member, metav1.Condition{Type: clusterv1alpha1.ConditionObjectsLeftBehind, Status: metav1.ConditionTrue,
		Reason: reason, Message: truncate(msg, 2048)})
	if err := helper.Patch(ctx, member, patch.WithOwnedConditions{Conditions: []string{clusterv1alpha1.ConditionObjectsLeftBehind}}); err != nil {
		return fmt.Errorf("report on MemberCluster %s what Work %s left behind: %w", member.Name, work.Name, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}

// observeApply records an apply's outcome: an error by reason, or the
// latency from the manifests' rendering to their first being applied, and
// healthy, at this generation.
func observeApply(member string, before, after *workv1alpha1.Work) {
	applied := conditions.Get(after, workv1alpha1.WorkApplied)
	if applied != nil && applied.Status == metav1.ConditionFalse {
		metrics.MemberApplyErrors.WithLabelValues(member, applied.Reason).Inc()
	}
	renderedAt, err := time.Parse(time.RFC3339Nano, after.Annotations[workv1alpha1.RenderedAtAnnotation])
	if err != nil {
		return
	}
	firstTrue := func(condType string) bool {
		now, was := conditions.Get(after, condType), conditions.Get(before, condType)
		return now != nil && now.Status == metav1.ConditionTrue && now.ObservedGeneration == after.Generation &&
			(was == nil || was.Status != metav1.ConditionTrue || was.ObservedGeneration != after.Generation)
	}
	if firstTrue(workv1alpha1.WorkApplied) {
		metrics.RenderToApplied.WithLabelValues(member).Observe(metrics.Since(renderedAt))
	}
	if firstTrue(workv1alpha1.WorkAvailable) {
		metrics.RenderToHealthy.WithLabelValues(member).Observe(metrics.Since(renderedAt))
	}
}

// unreachable marks a Work whose member did not answer, and says when it
// is tried again (at the latest: a member that answers earlier wakes it).
func (r *Reconciler) unreachable(work *workv1alpha1.Work, err error) ctrl.Result {
	if member, ok := memberOf(work.Namespace); ok {
		metrics.MemberApplyErrors.WithLabelValues(member, workv1alpha1.WorkReasonMemberUnreachable).Inc()
	}
	if work.DeletionTimestamp.IsZero() {
		conditions.Set(work, metav1.Condition{Type: workv1alpha1.WorkApplied, Status: metav1.ConditionFalse,
			Reason: workv1alpha1.WorkReasonMemberUnreachable, Message: err.Error(), ObservedGeneration: work.Generation})
	}
	retry := r.ResyncUnhealthy
	var u *memberclient.UnreachableError
	if errors.As(err, &u) {
		retry = u.RetryIn
	}
	return ctrl.Result{RequeueAfter: retry}
}

// FieldManager is the field manager of the execution controller's writes of
// a Work's status.
const FieldManager = "flotilla-execution"
