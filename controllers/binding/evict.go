// The evict phase (Evictor) takes bindings off members, paced: the taint manager —
// a binding placed on a member with a NoExecute taint it does not tolerate
// (or no longer tolerates: its tolerationSeconds, counted from the taint's
// timeAdded, have passed) — and application failover — a workload Unhealthy
// on a member past failover.application's tolerationSeconds. An eviction
// is a graceful eviction task on the binding, which keeps the member's copy
// as the failover policy's purge mode says; the scheduler, the only writer
// of spec.clusters, takes the member out and places the evicted replicas on
// other members. Evictions go one binding at a time through a pacing.Queue
// at the eviction rate, slowed or stopped during a storm (Storm): bindings
// waiting then carry the EvictionThrottled condition, and the unhealthy
// members an event. The same controller purges the tasks (purge.go), so
// that spec.gracefulEvictionTasks has one writer.

package binding

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/metrics"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/eviction"
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// PlacedOnIndex indexes bindings by the members of their spec.clusters.
const PlacedOnIndex = "flotilla.io/placed-on"

// Evictor evicts bindings from members with untolerated NoExecute taints.
type Evictor struct {
	Client client.Client
	// APIReader reads a binding fresh just before it is evicted.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Queue paces evictions; its Due, Act and Mark are set by SetupWithManager.
	Queue *pacing.Queue
	// Failbacks paces failback rebalances (failback.go); its Due and Act
	// are set by SetupWithManager.
	Failbacks *pacing.Queue
	// GracePeriod is the gracePeriodSeconds written into eviction tasks,
	// and the grace of a task without one (--graceful-eviction-timeout).
	GracePeriod time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers one controller per binding kind and the queue.
func (t *Evictor) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if t.Client == nil {
		t.Client = mgr.GetClient()
	}
	if t.APIReader == nil {
		t.APIReader = mgr.GetAPIReader()
	}
	if t.Recorder == nil {
		t.Recorder = mgr.GetEventRecorder("flotilla-taint-manager")
	}
	if t.Now == nil {
		t.Now = time.Now
	}
	t.Queue.Name = "eviction"
	t.Queue.Due, t.Queue.Act, t.Queue.Mark = t.due, t.evict, t.markThrottled
	if err := mgr.Add(t.Queue); err != nil {
		return err
	}
	t.Failbacks.Name = "failback"
	t.Failbacks.Due, t.Failbacks.Act = t.failbackDue, t.failBack
	if err := mgr.Add(t.Failbacks); err != nil {
		return err
	}
	for _, kind := range []string{KindResourceBinding, KindClusterResourceBinding} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, NewBinding(kind), PlacedOnIndex, placedOn); err != nil {
			return fmt.Errorf("index %s by member: %w", kind, err)
		}
		if err := mgr.GetFieldIndexer().IndexField(ctx, NewBinding(kind), FailbackIndex, failbackMembers); err != nil {
			return fmt.Errorf("index %s by failback member: %w", kind, err)
		}
		kind := kind
		err := ctrl.NewControllerManagedBy(mgr).
			Named("eviction-"+strings.ToLower(kind)).
			For(NewBinding(kind), builder.WithPredicates(predicate.Or[client.Object](
				predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, applicationHealthChanged(), holdsTasks()))).
			Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(t.bindingsOn(kind)),
				builder.WithPredicates(predicate.GenerationChangedPredicate{})).
			Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(t.bindingsFailingBackTo(kind)),
				builder.WithPredicates(memberMayHaveRecovered())).
			Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(WorkToBinding(kind)),
				builder.WithPredicates(workGoing())).
			WithOptions(options).
			Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return t.Reconcile(ctx, kind, req)
			}))
		if err != nil {
			return fmt.Errorf("eviction controller for %s: %w", kind, err)
		}
	}
	return nil
}

func placedOn(o client.Object) []string {
	b, ok := o.(workv1alpha1.Binding)
	if !ok {
		return nil
	}
	var out []string
	for _, c := range b.BindingSpec().Clusters {
		out = append(out, c.Name)
	}
	return out
}

// Reconcile runs the phases of a binding's failover, whose fields
// (spec.gracefulEvictionTasks, the failback annotations) this controller
// alone writes: purge releases the tasks whose purge mode allows; evict
// queues a binding whose eviction from some member is due (the queue's Act,
// evict, adds the tasks at the eviction rate); fail back queues a binding
// one of whose failback members recovered (failBack, at the same rate). It
// comes back when the next toleration or grace period runs out.
func (t *Evictor) Reconcile(ctx context.Context, kind string, req ctrl.Request) (ctrl.Result, error) {
	b := NewBinding(kind)
	if err := t.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.GetDeletionTimestamp().IsZero() {
		return ctrl.Result{}, nil
	}
	var next time.Time
	later := func(at time.Time) {
		if !at.IsZero() && (next.IsZero() || at.Before(next)) {
			next = at
		}
	}

	recheck, err := t.purge(ctx, kind, b)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	later(recheck)

	now := t.Now()
	dues, err := t.duesOf(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, d := range dues {
		switch {
		case d.at.After(now):
			later(d.at)
		case d.causeErr != nil:
			// As Karmada's: the eviction waits until the state it must
			// carry can be read, and is tried again.
			t.Recorder.Eventf(b, nil, corev1.EventTypeWarning, workv1alpha1.StatePreservationFailedEvent, "Evict",
				"the eviction from member %s waits for its statePreservation, tried again every %s: %v", d.member, StatePreservationRetry, d.causeErr)
			later(now.Add(StatePreservationRetry))
		default:
			t.Queue.Add(pacing.Key{Kind: kind, Namespace: req.Namespace, Name: req.Name})
		}
	}

	if back, gone, err := t.recovered(ctx, b); err != nil {
		return ctrl.Result{}, err
	} else if len(back)+len(gone) > 0 {
		t.Failbacks.Add(pacing.Key{Kind: kind, Namespace: req.Namespace, Name: req.Name})
	}
	if !next.IsZero() {
		return ctrl.Result{RequeueAfter: max(next.Sub(now), 0) + 50*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// StatePreservationRetry is how often an application failover eviction
// whose statePreservation cannot be read yet is tried again.
const StatePreservationRetry = 5 * time.Second

// memberDue is when a binding must leave one member, and why.
type memberDue struct {
	member string
	at     time.Time
	cause  eviction.Cause
	// causeErr holds the eviction back: the statePreservation of an
	// application failover cannot be read from the failed copy's status.
	causeErr error
}

// ready tells whether the eviction can be done now.
func (d memberDue) ready(now time.Time) bool {
	return !d.at.After(now) && d.causeErr == nil
}

// duesOf lists the members of spec.clusters the binding must leave, and
// when: a NoExecute taint it does not tolerate (cluster failover), or its
// workload Unhealthy there past failover.application's tolerationSeconds
// (application failover). The earlier decides, except that an application
// failover waiting for its statePreservation does not hold back a taint's
// eviction that is due now. Members evicted already, which the scheduler
// has yet to take out of spec.clusters, are not due again.
func (t *Evictor) duesOf(ctx context.Context, b workv1alpha1.Binding) ([]memberDue, error) {
	spec, status := b.BindingSpec(), b.BindingStatus()
	now := t.Now()
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	view := eviction.Binding{Generation: b.GetGeneration(), Spec: spec, Status: status}
	var out []memberDue
	for _, c := range spec.Clusters {
		if eviction.AwaitingScheduler(view, c.Name) {
			continue // evicted already; the scheduler has yet to take it out
		}
		m := &clusterv1alpha1.MemberCluster{}
		if err := t.Client.Get(ctx, client.ObjectKey{Name: c.Name}, m); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, fmt.Errorf("read member %s: %w", c.Name, err)
		}
		if d, ok := eviction.DueOf(tolerations, m.Spec.Taints); ok {
			out = append(out, memberDue{member: c.Name, at: d.At, cause: eviction.TaintCause(spec, d, t.GracePeriod)})
		}
	}
	for _, d := range eviction.ApplicationDuesOf(spec, status) {
		i := slices.IndexFunc(out, func(o memberDue) bool { return o.member == d.Member })
		if i >= 0 && !d.At.Before(out[i].at) {
			continue
		}
		due := memberDue{member: d.Member, at: d.At}
		due.cause, due.causeErr = eviction.ApplicationCause(spec, status, d)
		if i >= 0 && due.causeErr != nil && !out[i].at.After(now) {
			// The taint's eviction is due and can be made now: it does not
			// wait for the application's state to be readable.
			continue
		}
		if i >= 0 {
			out[i] = due
		} else {
			out = append(out, due)
		}
	}
	return out, nil
}

// due is the queue's last check before a slot is taken.
func (t *Evictor) due(ctx context.Context, k pacing.Key) (bool, error) {
	b := NewBinding(k.Kind)
	if err := t.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	dues, err := t.duesOf(ctx, b)
	if err != nil {
		return false, err
	}
	now := t.Now()
	return slices.ContainsFunc(dues, func(d memberDue) bool { return d.ready(now) }), nil
}

// evict records the binding's eviction from every member it is due to
// leave now, in one write with an optimistic lock, read fresh from the API
// server.
func (t *Evictor) evict(ctx context.Context, k pacing.Key) error {
	for attempt := 0; ; attempt++ {
		err := t.evictOnce(ctx, k)
		if !apierrors.IsConflict(err) || attempt == 3 {
			return err
		}
	}
}

func (t *Evictor) evictOnce(ctx context.Context, k pacing.Key) error {
	b := NewBinding(k.Kind)
	if err := t.APIReader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	if !b.GetDeletionTimestamp().IsZero() {
		return nil
	}
	dues, err := t.duesOf(ctx, b)
	if err != nil {
		return err
	}
	now := t.Now()
	before := b.DeepCopyObject().(client.Object)
	spec := b.BindingSpec()
	var evicted []eviction.Cause
	var members []string
	for _, d := range dues {
		if !d.ready(now) {
			continue
		}
		cause := d.cause
		if !eviction.Evict(spec, d.member, cause, now) {
			continue
		}
		evicted, members = append(evicted, cause), append(members, d.member)
		if eviction.FailbackOf(spec.Failover) && cause.Reason == workv1alpha1.EvictionReasonTaintUntolerated {
			addFailback(b, d.member)
		}
	}
	if len(evicted) == 0 {
		return nil
	}
	if err := t.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("evict %s: %w", k, err)
	}
	for i, cause := range evicted {
		metrics.Evictions.WithLabelValues(cause.Reason, string(cause.PurgeMode)).Inc()
		t.Recorder.Eventf(b, nil, corev1.EventTypeNormal, workv1alpha1.EvictedEvent, "Evict",
			"Evicted from member %s (%s, purge mode %s): %s", members[i], cause.Reason, cause.PurgeMode, cause.Message)
		ctrl.LoggerFrom(ctx).V(1).Info("Evicted", "binding", k.String(), "member", members[i], "reason", cause.Reason, "purgeMode", cause.PurgeMode)
	}
	return nil
}

// applicationHealthChanged passes status updates that change a member's
// workload health on a binding under failover.application: application
// failover counts from them.
func applicationHealthChanged() predicate.Funcs {
	health := func(o client.Object) (map[string]workv1alpha1.ResourceHealth, bool) {
		b, ok := o.(workv1alpha1.Binding)
		if !ok || b.BindingSpec().Failover == nil || b.BindingSpec().Failover.Application == nil {
			return nil, false
		}
		out := map[string]workv1alpha1.ResourceHealth{}
		for _, item := range b.BindingStatus().AggregatedStatus {
			out[item.ClusterName] = item.Health
		}
		return out, true
	}
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			now, ok := health(e.ObjectNew)
			if !ok {
				return false
			}
			old, _ := health(e.ObjectOld)
			return !maps.Equal(old, now)
		},
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// markThrottled writes the EvictionThrottled condition of a waiting binding.
func (t *Evictor) markThrottled(ctx context.Context, k pacing.Key, throttled bool, why string) error {
	b := NewBinding(k.Kind)
	if err := t.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	previous := conditions.Get(b, workv1alpha1.ConditionEvictionThrottled).DeepCopy()
	c := metav1.Condition{Type: workv1alpha1.ConditionEvictionThrottled, Status: metav1.ConditionFalse, Reason: workv1alpha1.EvictionNotThrottledReason, Message: why}
	if throttled {
		c.Status, c.Reason = metav1.ConditionTrue, workv1alpha1.EvictionThrottledReason
		c.Message = "an eviction is due and waits: " + why
	}
	conditions.Set(b, c)
	if err := writeCondition(ctx, t.Client, k.Kind, previous, b, EvictorFieldManager, workv1alpha1.ConditionEvictionThrottled); err != nil {
		return fmt.Errorf("write EvictionThrottled of %s: %w", k, err)
	}
	return nil
}

// EvictorFieldManager is the field manager of the evict phase's status
// writes.
const EvictorFieldManager = "flotilla-evictor"

// bindingsOn maps a member to the bindings placed on it.
func (t *Evictor) bindingsOn(kind string) handler.MapFunc {
	return func(ctx context.Context, m client.Object) []reconcile.Request {
		return Requests(ctx, t.Client, kind, client.MatchingFields{PlacedOnIndex: m.GetName()})
	}
}
