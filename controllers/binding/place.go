// The place phase (Placer) places ResourceBindings and
// ClusterResourceBindings on members with the pure scheduler library
// (internal/scheduler) and writes the result, spec.clusters, with a
// Scheduled condition and the decision's explanation.
//
// Triggers: a binding's placement inputs changing (replicas, placement,
// requirements, eviction tasks, rescheduleTriggeredAt, the failback
// annotation), any MemberCluster change that can change a placement (labels,
// taints, cordon, readiness, API enablements, deletion; capacity only for
// bindings still waiting), a periodic retry of bindings that could not be
// placed, and the Wakeups sources (bindings waiting on quota, re-queued
// oldest first when quota frees). Decisions are serialised inside the
// scheduler so that each sees the capacity the previous one assumed.

package binding

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/cluster-api/util/conditions"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/metrics"
	"github.com/flotilla-io/flotilla/internal/capacity"
	"github.com/flotilla-io/flotilla/internal/eviction"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// Placer places bindings.
type Placer struct {
	Client    client.Client
	Scheduler *scheduler.Scheduler
	Recorder  events.EventRecorder
	// RetryInterval is how often a binding that could not be placed is
	// tried again even when nothing it watches changes (assumed capacity
	// expires with time, not with an event).
	RetryInterval time.Duration
	// ShortRetryInterval is how often a binding placed short of what it
	// asks (PartiallyScheduled) is decided again when no member it was
	// denied reports room: a backstop for capacity held for other
	// bindings that expires without a new capacity model.
	ShortRetryInterval time.Duration
	// Wakeups are further sources of ResourceBindings to decide again at
	// once, e.g. those waiting on quota when quota frees (controllers/quota).
	Wakeups []source.TypedSource[reconcile.Request]

	snapshots *snapshots
	written   writtenGenerations
	decided   decidedInputs
	waiting   waitingBindings
	// placementEpoch counts the member changes that queue every binding to
	// be decided again (enqueueAll, not capacity reports): a decision made
	// at an older epoch may not hold, one made at the current epoch on the
	// same inputs does.
	placementEpoch atomic.Uint64

	// restore guards the one rebuild of the assumed ledger from the
	// bindings before this process's first decision (holds.go).
	restore  sync.Mutex
	restored atomic.Bool
}

// staleCacheRetry backs up the watch event a decision waits for when the
// cache has not seen the binding's last placement write yet.
const staleCacheRetry = time.Second

// placeConflictRetry is the place phase's retry after its placement write
// was refused for its optimistic lock, shorter than conflictRequeue: the
// render phase writes the binding right after every new generation, so a
// template change often finds the version it decided on gone, and every
// hop of a quota retry or a burst waits for the decision (BenchmarkQuotaRetry
// measured ~100 ms of its ~120 ms placement hop in half the runs). The
// cache brings the other write within milliseconds; a retry that comes too
// early only conflicts again.
const placeConflictRetry = 10 * time.Millisecond

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// SetupWithManager registers one controller for ResourceBindings and one for
// ClusterResourceBindings; both watch MemberClusters.
func (r *Placer) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.RetryInterval == 0 {
		r.RetryInterval = 30 * time.Second
	}
	if r.ShortRetryInterval == 0 {
		r.ShortRetryInterval = 5 * time.Minute
	}
	r.snapshots = &snapshots{reader: mgr.GetClient(), sched: r.Scheduler}

	b := ctrl.NewControllerManagedBy(mgr).
		Named("scheduling-resourcebinding").
		For(&workv1alpha1.ResourceBinding{}, builder.WithPredicates(r.placementInputsChanged())).
		Watches(&clusterv1alpha1.MemberCluster{},
			handler.EnqueueRequestsFromMapFunc(r.enqueueAll(&workv1alpha1.ResourceBindingList{})),
			builder.WithPredicates(memberPlacementChanged())).
		Watches(&clusterv1alpha1.MemberCluster{}, r.capacityFreed(false), builder.WithPredicates(memberCapacityChanged())).
		// Every member event, unfiltered, tells the snapshot shared by
		// both controllers to compile the fleet again (also those that
		// queue no binding; enqueueAll tells it before it queues).
		Watches(&clusterv1alpha1.MemberCluster{}, r.snapshots.changes()).
		WithOptions(options)
	for _, src := range r.Wakeups {
		b = b.WatchesRawSource(src)
	}
	err := b.Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		return r.reconcile(ctx, req, &workv1alpha1.ResourceBinding{})
	}))
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("scheduling-clusterresourcebinding").
		For(&workv1alpha1.ClusterResourceBinding{}, builder.WithPredicates(r.placementInputsChanged())).
		Watches(&clusterv1alpha1.MemberCluster{},
			handler.EnqueueRequestsFromMapFunc(r.enqueueAll(&workv1alpha1.ClusterResourceBindingList{})),
			builder.WithPredicates(memberPlacementChanged())).
		Watches(&clusterv1alpha1.MemberCluster{}, r.capacityFreed(true), builder.WithPredicates(memberCapacityChanged())).
		WithOptions(options).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			return r.reconcile(ctx, req, &workv1alpha1.ClusterResourceBinding{})
		}))
}

// enqueueAll maps a member change that can change a placement to every
// binding of a kind. A change of capacity alone queues only the bindings
// waiting for room (capacityFreed, place_waiting.go): placed bindings keep
// their replicas where they are (least movement), so re-deciding them on
// every capacity report would only churn their status.
func (r *Placer) enqueueAll(list client.ObjectList) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		// The informer's handlers run in no fixed order: were the
		// snapshot told of this change only by its own handler, a binding
		// queued here could be decided on the snapshot from before it.
		// Told first here, every binding this change queues is decided on
		// a snapshot listed after it.
		r.snapshots.memberChanged()
		r.placementEpoch.Add(1)
		l := list.DeepCopyObject().(client.ObjectList)
		if err := r.Client.List(ctx, l); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "list bindings to reschedule after a member change")
			return nil
		}
		var reqs []reconcile.Request
		add := func(b workv1alpha1.Binding) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: b.GetNamespace(), Name: b.GetName()}})
		}
		switch items := l.(type) {
		case *workv1alpha1.ResourceBindingList:
			for i := range items.Items {
				add(&items.Items[i])
			}
		case *workv1alpha1.ClusterResourceBindingList:
			for i := range items.Items {
				add(&items.Items[i])
			}
		}
		return reqs
	}
}

func placementKey(b workv1alpha1.Binding) string {
	if b.GetNamespace() == "" {
		return b.GetName()
	}
	return b.GetNamespace() + "/" + b.GetName()
}

func (r *Placer) reconcile(ctx context.Context, req reconcile.Request, b workv1alpha1.Binding) (res reconcile.Result, reterr error) {
	if err := r.Client.Get(ctx, req.NamespacedName, b.(client.Object)); err != nil {
		if client.IgnoreNotFound(err) == nil {
			r.Scheduler.Forget(keyOf(req))
			r.written.forget(keyOf(req))
			r.decided.forget(keyOf(req))
			r.waiting.forget(keyOf(req))
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.GetDeletionTimestamp().IsZero() {
		r.Scheduler.Forget(placementKey(b))
		r.written.forget(placementKey(b))
		r.decided.forget(placementKey(b))
		r.waiting.forget(placementKey(b))
		return reconcile.Result{}, nil
	}
	if r.written.stale(placementKey(b), b.GetUID(), b.GetGeneration()) {
		return reconcile.Result{RequeueAfter: staleCacheRetry}, nil
	}

	original := b.(client.Object).DeepCopyObject().(client.Object)
	epoch := r.placementEpoch.Load()
	decided := false
	var waits *waitingEntry
	defer func() {
		if err := r.write(ctx, original, b); err != nil {
			if apierrors.IsConflict(err) {
				// Decided on a version someone changed meanwhile: decide
				// again on the new one.
				res, reterr = reconcile.Result{RequeueAfter: placeConflictRetry}, nil
				return
			}
			reterr = fmt.Errorf("write placement of %s: %w", placementKey(b), err)
			return
		}
		if decided {
			// The Works carrying what the decision holds are rendered
			// from the generation it was written at.
			r.Scheduler.Ledger().Decided(placementKey(b), b.GetGeneration())
			r.waiting.set(placementKey(b), waits)
			r.reportShort(original, b)
		}
		if decided && conditions.IsTrue(b, workv1alpha1.ConditionScheduled) {
			r.decided.record(placementKey(b), b, epoch)
		}
	}()

	// Members the binding is being evicted from leave the placement here,
	// whatever else happens: the eviction only records their tasks, so that
	// spec.clusters has one writer, this controller.
	spec := b.BindingSpec()
	leaving := len(spec.Clusters)
	spec.Clusters = scheduler.Staying(spec)
	leaving -= len(spec.Clusters)

	if s := spec.Suspension; s != nil && s.Scheduling != nil && *s.Scheduling {
		return reconcile.Result{}, nil
	}
	if eviction.PurgingDirectly(spec) {
		// Purge mode Directly: the evicted copy goes before its replacement
		// is placed; removing the task (the purge phase, purge.go) brings
		// the binding back here.
		return reconcile.Result{}, nil
	}
	if leaving == 0 && conditions.IsTrue(b, workv1alpha1.ConditionScheduled) && r.decided.unchanged(placementKey(b), b, epoch) {
		// A new generation that changed nothing a decision reads (the
		// template's resourceVersion, rendering fields): it is observed,
		// not decided again, so that purging, which waits for the
		// scheduler to have seen the binding's generation, is not held.
		observeGeneration(b.BindingStatus(), b.GetGeneration())
		return reconcile.Result{}, nil
	}

	decided = true
	start := time.Now()
	snap, err := r.snapshots.get(ctx)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("snapshot of members: %w", err)
	}
	if err := r.restoreOnce(ctx, snap); err != nil {
		return reconcile.Result{}, fmt.Errorf("restore assumed capacity from bindings: %w", err)
	}
	result, waits := r.schedule(ctx, snap, b)
	reason := conditions.GetReason(b, workv1alpha1.ConditionScheduled)
	metrics.SchedulingDecisionDuration.WithLabelValues(reason).Observe(metrics.Since(start))
	if reason == workv1alpha1.BindingReasonQuotaExceeded {
		metrics.QuotaRefusals.WithLabelValues(b.GetNamespace()).Inc()
	}
	return result, nil
}

// write records a decision: a new placement (spec.clusters) with an
// optimistic lock, so that a decision made on a binding someone changed
// meanwhile is made again rather than written over the change; then the
// place phase's status fields and the Scheduled condition, in one request.
func (r *Placer) write(ctx context.Context, original client.Object, b workv1alpha1.Binding) error {
	obj := b.(client.Object)
	decided := b.BindingStatus().DeepCopy()
	if !equality.Semantic.DeepEqual(original.(workv1alpha1.Binding).BindingSpec().Clusters, b.BindingSpec().Clusters) {
		if err := r.Client.Patch(ctx, obj, client.MergeFromWithOptions(original, client.MergeFromWithOptimisticLock{})); err != nil {
			return err
		}
		r.written.record(placementKey(b), obj.GetUID(), obj.GetGeneration())
		// The patch answered with the stored status: the status write
		// compares with it. The decision covers the generation its own
		// write made (the write changed nothing else: it was made on the
		// resourceVersion decided on), which is not decided again.
		original = obj.DeepCopyObject().(client.Object)
		observeGeneration(decided, obj.GetGeneration())
		*b.BindingStatus() = *decided
	}
	owned := placedOf(b)
	if equality.Semantic.DeepEqual(owned, placedOf(original.(workv1alpha1.Binding))) {
		return nil
	}
	return applyStatus(ctx, r.Client, kindOf(b), b, PlacerFieldManager, owned)
}

// PlacerFieldManager is the field manager of the place phase's status writes.
const PlacerFieldManager = "flotilla-scheduler"

// placedFields are the status fields the place phase owns, written together
// (applyStatus): a new leader reads a decision whole or not at all.
type placedFields struct {
	SchedulerObservedGeneration   int64                            `json:"schedulerObservedGeneration"`
	SchedulerObservedAffinityName string                           `json:"schedulerObservingAffinityName"`
	LastScheduledTime             *metav1.Time                     `json:"lastScheduledTime,omitempty"`
	SchedulingDecision            *workv1alpha1.SchedulingDecision `json:"schedulingDecision,omitempty"`
	Conditions                    []metav1.Condition               `json:"conditions"`
}

func placedOf(b workv1alpha1.Binding) placedFields {
	s := b.BindingStatus()
	f := placedFields{
		SchedulerObservedGeneration: s.SchedulerObservedGeneration, SchedulerObservedAffinityName: s.SchedulerObservedAffinityName,
		LastScheduledTime: s.LastScheduledTime, SchedulingDecision: s.SchedulingDecision, Conditions: []metav1.Condition{},
	}
	if c := conditions.Get(b, workv1alpha1.ConditionScheduled); c != nil {
		f.Conditions = append(f.Conditions, *c)
	}
	return f
}

// schedule runs one decision and records it on the binding. It returns
// what the binding waits for, nil when it has everything it asks.
func (r *Placer) schedule(ctx context.Context, snap *scheduler.Snapshot, b workv1alpha1.Binding) (reconcile.Result, *waitingEntry) {
	spec, status := b.BindingSpec(), b.BindingStatus()
	in := scheduler.InputFromBinding(placementKey(b), spec, status)
	// Failback asks as a user does with spec.rescheduleTriggeredAt, which
	// stays the user's; the decision is recorded no earlier than the ask,
	// so that it is answered once (times are kept to the second).
	failbackAt, failback := scheduler.FailbackTriggeredAt(b.GetAnnotations())
	failback = failback && (status.LastScheduledTime == nil || failbackAt.After(status.LastScheduledTime.Time))
	in.Rebalance = in.Rebalance || failback
	res, err := r.Scheduler.Schedule(snap, in)
	status.SchedulingDecision = res.Decision()
	waits := &waitingEntry{reason: scheduler.ReasonOf(err), req: capacity.NewRequirement(spec.ReplicaRequirements), need: int64(spec.Replicas)}
	waits.capacityHelps = waits.reason != workv1alpha1.BindingReasonQuotaExceeded

	if err != nil {
		reason := scheduler.ReasonOf(err)
		message := messageOf(err)
		// The placement in force stays: a binding that cannot be placed anew
		// keeps running where it runs rather than being torn down.
		conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: reason, Message: message})
		r.Recorder.Eventf(b, nil, corev1.EventTypeWarning, reason, "Schedule", "%s", message)
		ctrl.LoggerFrom(ctx).V(1).Info("not scheduled", "reason", reason, "message", message)
		return reconcile.Result{RequeueAfter: r.RetryInterval}, waits
	}

	now := metav1.Now()
	if failback && failbackAt.After(now.Time) {
		now = metav1.NewTime(failbackAt)
	}
	changed := !equality.Semantic.DeepEqual(spec.Clusters, res.Clusters) && !(len(spec.Clusters) == 0 && len(res.Clusters) == 0)
	if changed || in.Rebalance || status.LastScheduledTime == nil {
		spec.Clusters = res.Clusters
		status.LastScheduledTime = &now
	}
	status.SchedulerObservedGeneration = b.GetGeneration()
	status.SchedulerObservedAffinityName = res.AffinityName
	placement := describePlacement(res.Clusters)
	message := placement
	if res.UnknownMembers != "" {
		message += "; " + res.UnknownMembers
	}
	if changed {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, "Scheduled", "Schedule", "%s", placement)
	}
	if len(res.Short) > 0 {
		// Placed where it fits, and honest about the rest: the binding
		// runs on the members it got and is decided again as soon as one
		// it was denied has room (capacityFreed), or at the backstop.
		for _, m := range res.Short {
			waits.short = append(waits.short, m.Name)
		}
		waits.reason = workv1alpha1.BindingReasonPartiallyScheduled
		message += "; " + scheduler.ShortMessage(res.Short) + "; placed there as soon as it has room"
		conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionFalse, Reason: waits.reason, Message: message})
		return reconcile.Result{RequeueAfter: r.ShortRetryInterval}, waits
	}
	conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionScheduled, Status: metav1.ConditionTrue, Reason: workv1alpha1.BindingReasonSuccess, Message: message})
	return reconcile.Result{}, nil
}

// reportShort tells the template's readers, with an event on the template,
// when a decision leaves its binding short of what it asks, when the
// members it is short of change, and when it is complete again. The
// binding's Scheduled condition says the same at every decision.
func (r *Placer) reportShort(before client.Object, after workv1alpha1.Binding) {
	was := conditions.Get(before.(workv1alpha1.Binding), workv1alpha1.ConditionScheduled)
	now := conditions.Get(after, workv1alpha1.ConditionScheduled)
	if now == nil {
		return
	}
	wasShort := was != nil && was.Reason == workv1alpha1.BindingReasonPartiallyScheduled
	switch {
	case now.Reason == workv1alpha1.BindingReasonPartiallyScheduled && (!wasShort || shortPart(was.Message) != shortPart(now.Message)):
		r.Recorder.Eventf(TemplateRef(after), after, corev1.EventTypeWarning, workv1alpha1.BindingReasonPartiallyScheduled, "Schedule", "%s", now.Message)
	case wasShort && now.Reason == workv1alpha1.BindingReasonSuccess:
		r.Recorder.Eventf(TemplateRef(after), after, corev1.EventTypeNormal, "Scheduled", "Schedule", "placement complete: %s", now.Message)
	}
}

// shortPart is the "short of …" part of a PartiallyScheduled message.
func shortPart(message string) string {
	if i := strings.Index(message, "short of "); i >= 0 {
		return message[i:]
	}
	return ""
}

func messageOf(err error) string {
	if e, ok := err.(*scheduler.Error); ok {
		return e.Message
	}
	return err.Error()
}

func describePlacement(clusters []workv1alpha1.TargetCluster) string {
	if len(clusters) == 0 {
		return "placed on no member"
	}
	var b strings.Builder
	b.WriteString("placed on ")
	for i, c := range clusters {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.Name)
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(int(c.Replicas)))
	}
	return b.String()
}

func keyOf(req reconcile.Request) string {
	if req.Namespace == "" {
		return req.Name
	}
	return req.Namespace + "/" + req.Name
}
