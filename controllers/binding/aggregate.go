// The aggregate phase (Aggregator) writes the status of a binding's Works into the
// binding: per member, whether the Work is applied (and if not, why), the
// health of the template's object there and its status; summed over
// members, the replica counts a Deployment reports (status.replicas,
// readyReplicas, availableReplicas, updatedReplicas); and the FullyApplied
// condition, True when every member of spec.clusters has applied its Work.
// Members that fail to apply are also reported as events on the template.
//
// The template's own status on the hub is written only for kinds a
// ResourceInterpreterCustomization aggregates (statusAggregation): nothing
// on the hub owns a custom kind's status. A built-in kind's status belongs
// to the hub's kube-controller-manager (a hub Deployment's status counts
// the Pods the inert quota refused), and the two would fight; the binding's
// status and printer columns are where its fleet-wide status is read.

package binding

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/applier"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/interpreter"
	"github.com/flotilla-io/flotilla/internal/scheduler/assumed"
	"github.com/flotilla-io/flotilla/internal/statusapply"
)

// ApplyFailedReason is the event reason on a template whose Work a member
// did not apply.
const ApplyFailedReason = "ApplyFailed"

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings/status;clusterresourcebindings/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Aggregator writes bindings' aggregated status.
type Aggregator struct {
	Client   client.Client
	Recorder events.EventRecorder
	// APIReader reads templates of kinds the hub does not cache.
	APIReader client.Reader
	// Interpreter aggregates customized kinds' status into their
	// templates; nil aggregates into bindings only.
	Interpreter *interpreter.Interpreter
	// Now is the clock of health transitions; time.Now when nil.
	Now func() time.Time
	// Coalesce is how long a binding's change or its Works' waits for
	// the changes that follow it before the status is aggregated, so that
	// a burst is written once; DefaultCoalesce when 0, none when negative.
	Coalesce time.Duration
	// Reports paces status writes that only move progress (replica
	// counts); nil writes every change at once.
	Reports *pacing.Reports
	// Outcomes, when set, are the outcomes the Push members' executor is
	// writing to its Works: laid over the Works read from the cache, and
	// told through WorkReported, they are aggregated while their write is
	// under way rather than after it and its watch event (one hub write
	// less between a member's change and its binding's status).
	Outcomes *applier.Outcomes
	// Holds, when set, is told which members applied each binding's Works
	// (the scheduler's ledger: the grace of capacity held for them counts
	// from then).
	Holds *assumed.Ledger

	written  statusapply.LastWrites[aggregatedFields]
	once     sync.Once
	reported map[string]reports // by binding kind
}

// WorkReported has the binding of w aggregated again: an outcome of w is
// being written (applier.Outcomes.Reported) — at once when with it w turns
// Available and completes its binding (every Work of it Available), after
// the coalescing window otherwise. It never blocks: with its channel full,
// the watch of the Work's write brings the binding instead.
func (r *Aggregator) WorkReported(w *workv1alpha1.Work, becameAvailable bool) {
	// Only what WorkToBinding reads: the mapping runs later, elsewhere.
	e := event.GenericEvent{Object: &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{
		Namespace: w.Namespace, Name: w.Name, Annotations: maps.Clone(w.Annotations)}}}
	now := becameAvailable && r.completes(context.Background(), w)
	channels := r.reportedChannels()
	for kind := range channels {
		ch := channels[kind].coalesced
		if now {
			ch = channels[kind].now
		}
		select {
		case ch <- e:
		default:
		}
	}
}

// reports are the channels of one binding kind's Work reports.
type reports struct {
	coalesced, now chan event.GenericEvent
}

func (r *Aggregator) reportedChannels() map[string]reports {
	r.once.Do(func() {
		r.reported = map[string]reports{}
		for _, kind := range []string{KindResourceBinding, KindClusterResourceBinding} {
			r.reported[kind] = reports{coalesced: make(chan event.GenericEvent, 1024), now: make(chan event.GenericEvent, 1024)}
		}
	})
	return r.reported
}

// completesBinding picks the Work updates that turn it Available and with
// it every Work of its binding: the binding turns Ready, what its readers
// wait for, and is aggregated at once rather than after the coalescing
// window. A member turning Ready while another is not yet waits the window,
// as the rest of a burst's reports do, so that members turning together are
// still one status write.
func (r *Aggregator) completesBinding(ctx context.Context, before, after client.Object) bool {
	b, ok1 := before.(*workv1alpha1.Work)
	a, ok2 := after.(*workv1alpha1.Work)
	return ok1 && ok2 && applier.BecameAvailable(b.Status.Conditions, a.Status.Conditions) && r.completes(ctx, a)
}

// completes reports whether every Work of w's binding is Available, as the
// cache holds them with the outcomes being written laid over.
func (r *Aggregator) completes(ctx context.Context, w client.Object) bool {
	id := w.GetLabels()[workv1alpha1.BindingPermanentIDLabel]
	if id == "" || r.Client == nil {
		return true
	}
	works, err := listWorksOf(ctx, r.Client, id)
	if err != nil {
		return true
	}
	for i := range works.Items {
		r.Outcomes.Overlay(&works.Items[i])
		if !conditions.IsTrue(&works.Items[i], workv1alpha1.WorkAvailable) {
			return false
		}
	}
	return true
}

// DefaultCoalesce is the Aggregator's default wait for a burst's further
// changes: a binding's members apply and report within moments of each
// other, and each report was one status write of the binding.
const DefaultCoalesce = 100 * time.Millisecond

func (r *Aggregator) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// KeepHealthTransitions sets each item's healthTransitionTime: the
// previous one while the member's health is the same, now when it changed
// or the member is new.
func KeepHealthTransitions(items, previous []workv1alpha1.AggregatedStatusItem, now metav1.Time) {
	for i := range items {
		items[i].HealthTransitionTime = now.DeepCopy()
		for _, p := range previous {
			if p.ClusterName == items[i].ClusterName && p.Health == items[i].Health && p.HealthTransitionTime != nil {
				items[i].HealthTransitionTime = p.HealthTransitionTime.DeepCopy()
			}
		}
	}
}

// SetupWithManager registers one controller per binding kind.
func (r *Aggregator) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New("status: Client and Recorder must be set")
	}
	if r.Coalesce == 0 {
		r.Coalesce = DefaultCoalesce
	}
	if err := IndexWorksByBinding(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	// A new placement and the Works it makes, applied and reporting just
	// after, are one aggregation. With a ledger to tell, so is the
	// rendering of a decision (renderedAtANewGeneration).
	bindingChanged := predicate.Predicate(predicate.GenerationChangedPredicate{})
	if r.Holds != nil {
		bindingChanged = predicate.Or(bindingChanged, renderedAtANewGeneration())
	}
	for _, kind := range []string{KindResourceBinding, KindClusterResourceBinding} {
		kind := kind
		err := ctrl.NewControllerManagedBy(mgr).
			Named("status-"+strings.ToLower(kind)).
			Watches(NewBinding(kind), pacing.EnqueueCoalesced(self, r.Coalesce), builder.WithPredicates(bindingChanged)).
			// The Work turning Available that makes its binding Ready is
			// aggregated at once (completesBinding).
			Watches(&workv1alpha1.Work{}, pacing.EnqueueCoalescedUnless(WorkToBinding(kind), r.Coalesce, r.completesBinding)).
			WatchesRawSource(source.Channel(r.reportedChannels()[kind].coalesced, pacing.EnqueueCoalesced(WorkToBinding(kind), r.Coalesce))).
			WatchesRawSource(source.Channel(r.reportedChannels()[kind].now, handler.EnqueueRequestsFromMapFunc(WorkToBinding(kind)))).
			WithOptions(options).
			Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return r.Reconcile(ctx, kind, req)
			}))
		if err != nil {
			return fmt.Errorf("status controller for %s: %w", kind, err)
		}
	}
	return nil
}

// Reconcile aggregates one binding's Works into its status, in one write.
//
// The write carries no optimistic lock: the fields are this phase's alone,
// made from the Works in the cache (which only moves forward, and a binding
// is aggregated one reconcile at a time), so a write cannot put older
// values back — but for what is made from the binding's previous status:
// the members' health transition times and FullyApplied's transition time.
// Those are taken from what this phase last wrote (statusapply.LastWrites)
// while the cache may not show it yet. The lock it had was refused whenever
// the cache lagged this phase's own last write, as members report one after
// another.
//
// A status that only moves progress is written no sooner than Reports
// allows (see aggregatedProgressOnly); then the binding comes back when it
// is due.
func (r *Aggregator) Reconcile(ctx context.Context, kind string, req ctrl.Request) (ctrl.Result, error) {
	wait, err := r.aggregate(ctx, kind, req)
	if apierrors.IsConflict(err) {
		return ctrl.Result{RequeueAfter: conflictRequeue}, nil
	}
	return ctrl.Result{RequeueAfter: wait}, err
}

// aggregate reads the binding and its Works from the cache, and writes the
// binding's aggregated status, or says how long a report of progress only
// must wait.
func (r *Aggregator) aggregate(ctx context.Context, kind string, req ctrl.Request) (time.Duration, error) {
	b := NewBinding(kind)
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.written.Forget(req.NamespacedName)
		}
		return 0, client.IgnoreNotFound(err)
	}
	if !b.GetDeletionTimestamp().IsZero() {
		r.written.Forget(req.NamespacedName)
		return 0, nil
	}
	// The binding as this phase last wrote it, if the cache lags that write.
	if last, ok := r.written.Get(req.NamespacedName, b.GetUID()); ok {
		setAggregated(b, last)
	}
	before := b.DeepCopyObject().(workv1alpha1.Binding)
	previous := conditions.Get(b, workv1alpha1.ConditionFullyApplied).DeepCopy() // Get points into the list Set changes

	works, err := listWorksOf(ctx, r.Client, string(b.GetUID()))
	if err != nil {
		return 0, fmt.Errorf("list the Works of %s %s: %w", kind, req.NamespacedName, err)
	}
	for i := range works.Items {
		r.Outcomes.Overlay(&works.Items[i])
	}
	a := Aggregate(b.BindingSpec(), works.Items)
	if len(works.Items) == 0 && neverPlaced(b, a.Condition, workv1alpha1.ConditionFullyApplied) {
		return 0, nil
	}
	status := b.BindingStatus()
	KeepHealthTransitions(a.Items, status.AggregatedStatus, metav1.NewTime(r.now()))
	status.AggregatedStatus = a.Items
	status.Replicas, status.ReadyReplicas = a.Replicas, a.ReadyReplicas
	status.AvailableReplicas, status.UpdatedReplicas = a.AvailableReplicas, a.UpdatedReplicas
	a.Condition.ObservedGeneration = b.GetGeneration()
	conditions.Set(b, a.Condition)
	reportApplied(r.Holds, b, a.Items, r.now())

	templateErr := r.aggregateIntoTemplate(ctx, b, a.Items)
	wait, err := r.writeStatus(ctx, kind, before, b, a.Failed)
	if apierrors.IsConflict(err) {
		return 0, err
	} else if err != nil {
		return 0, kerrors.NewAggregate([]error{templateErr, fmt.Errorf("write the status of %s %s: %w", kind, req.NamespacedName, err)})
	}
	// Told once written. (A failure is a state: its report is never held
	// back.)
	if wait == 0 && a.Failed && (previous == nil || previous.Message != a.Condition.Message) {
		r.Recorder.Eventf(TemplateRef(b), b, corev1.EventTypeWarning, ApplyFailedReason, "Apply", "%s", a.Condition.Message)
	}
	return wait, templateErr
}

// AggregatorFieldManager is the field manager of the aggregate phase's
// status writes.
const AggregatorFieldManager = "flotilla-aggregator"

// aggregatedFields are the status fields the aggregate phase owns. Every
// one is written, zeros and empty lists included: a field it leaves out
// would be kept as it was if another manager ever shared it.
type aggregatedFields struct {
	AggregatedStatus  []workv1alpha1.AggregatedStatusItem `json:"aggregatedStatus"`
	Replicas          int32                               `json:"replicas"`
	ReadyReplicas     int32                               `json:"readyReplicas"`
	AvailableReplicas int32                               `json:"availableReplicas"`
	UpdatedReplicas   int32                               `json:"updatedReplicas"`
	Conditions        []metav1.Condition                  `json:"conditions"`
}

func aggregatedOf(b workv1alpha1.Binding) aggregatedFields {
	s := b.BindingStatus()
	f := aggregatedFields{
		AggregatedStatus: append([]workv1alpha1.AggregatedStatusItem{}, s.AggregatedStatus...),
		Replicas:         s.Replicas, ReadyReplicas: s.ReadyReplicas, AvailableReplicas: s.AvailableReplicas, UpdatedReplicas: s.UpdatedReplicas,
		Conditions: []metav1.Condition{},
	}
	for _, t := range []string{workv1alpha1.ConditionFullyApplied, workv1alpha1.ConditionStatusAggregated} {
		if c := conditions.Get(b, t); c != nil {
			f.Conditions = append(f.Conditions, *c)
		}
	}
	return f
}

// aggregatedProgressOnly reports whether now differs from was only in
// what moves while no state changes: the replica counts and what each
// member reports of its object's status. Which members applied, why not,
// their health and the conditions are states, written at once.
func aggregatedProgressOnly(was, now aggregatedFields) bool {
	strip := func(f aggregatedFields) aggregatedFields {
		f.Replicas, f.ReadyReplicas, f.AvailableReplicas, f.UpdatedReplicas = 0, 0, 0, 0
		items := make([]workv1alpha1.AggregatedStatusItem, 0, len(f.AggregatedStatus))
		for _, item := range f.AggregatedStatus {
			item.Status = nil
			items = append(items, item)
		}
		f.AggregatedStatus = items
		return f
	}
	return equality.Semantic.DeepEqual(strip(was), strip(now))
}

// aggregatedOnItsWay reports whether now only moves members on toward
// their Works applied and their objects healthy, without all of them
// getting there: the same members, each as far along as before or further
// (not created, not applied, applied, healthy), FullyApplied's status and
// reason and the other conditions unchanged. In a burst each member's Work
// is created, applied and healthy at its own moment; the binding's status
// passes through each. Arriving (every member healthy, FullyApplied
// turning), falling back (a member unhealthy again, a Work gone) and a
// failure are states, written at once.
func aggregatedOnItsWay(was, now aggregatedFields) bool {
	if len(was.AggregatedStatus) != len(now.AggregatedStatus) || len(was.Conditions) != len(now.Conditions) {
		return false
	}
	for i := range was.Conditions {
		w, n := was.Conditions[i], now.Conditions[i]
		if w.Type != n.Type || w.Status != n.Status || w.Reason != n.Reason || (w.Type != workv1alpha1.ConditionFullyApplied && w.Message != n.Message) {
			return false
		}
	}
	step := func(item workv1alpha1.AggregatedStatusItem) int {
		switch {
		case !item.Applied:
			return 0
		case item.Health != workv1alpha1.ResourceHealthy:
			return 1
		}
		return 2
	}
	arrived := true
	for i := range was.AggregatedStatus {
		w, n := was.AggregatedStatus[i], now.AggregatedStatus[i]
		if w.ClusterName != n.ClusterName || step(n) < step(w) {
			return false
		}
		arrived = arrived && step(n) == 2
	}
	return !arrived
}

// writeStatus writes what the aggregate phase owns of the binding's status
// in one request (applyStatus), and none when it did not change or when
// it only moves progress, or moves members on their way (and failed is
// false: no member refused its Work), and Reports holds it back (wait is
// then how long).
func (r *Aggregator) writeStatus(ctx context.Context, kind string, before, b workv1alpha1.Binding, failed bool) (wait time.Duration, err error) {
	owned, was := aggregatedOf(b), aggregatedOf(before)
	if equality.Semantic.DeepEqual(owned, was) {
		return 0, nil
	}
	key := client.ObjectKeyFromObject(b)
	if aggregatedProgressOnly(was, owned) || (!failed && aggregatedOnItsWay(was, owned)) {
		if wait := r.Reports.Wait(key); wait > 0 {
			return wait, nil
		}
	}
	if err := statusapply.Apply(ctx, r.Client, workv1alpha1.GroupVersion.WithKind(kind), key, "", AggregatorFieldManager, owned); err != nil {
		return 0, err
	}
	r.Reports.Written(key)
	r.written.Remember(key, b.GetUID(), owned)
	if conditions.Has(before, workv1alpha1.ConditionStatusAggregated) && !conditions.Has(b, workv1alpha1.ConditionStatusAggregated) {
		// Left out of the apply, a condition another manager also wrote (a
		// binding aggregated before the phase applied its status) stays:
		// take it out with an optimistic write of the conditions.
		gone := before.DeepCopyObject().(workv1alpha1.Binding)
		conditions.Delete(gone, workv1alpha1.ConditionStatusAggregated)
		helper, err := patch.NewHelper(before, r.Client)
		if err != nil {
			return 0, err
		}
		return 0, helper.Patch(ctx, gone, patch.WithOwnedConditions{Conditions: []string{workv1alpha1.ConditionStatusAggregated}})
	}
	return 0, nil
}

// aggregateIntoTemplate writes the template's status from the members'
// when a customization aggregates its kind, and says on the binding
// (condition StatusAggregated) when its script fails.
func (r *Aggregator) aggregateIntoTemplate(ctx context.Context, b workv1alpha1.Binding, items []workv1alpha1.AggregatedStatusItem) error {
	ref := TemplateRef(b)
	template := &unstructured.Unstructured{}
	template.SetGroupVersionKind(ref.GroupVersionKind())
	if r.Interpreter == nil || !r.Interpreter.AggregatesStatus(template) {
		conditions.Delete(b, workv1alpha1.ConditionStatusAggregated)
		return nil
	}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(ref), template); err != nil {
		return client.IgnoreNotFound(err)
	}
	aggregated, _, err := r.Interpreter.AggregateStatus(ctx, template, items)
	if err != nil {
		conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionStatusAggregated, Status: metav1.ConditionFalse,
			Reason: workv1alpha1.BindingReasonInterpreterFailed, Message: err.Error(), ObservedGeneration: b.GetGeneration()})
		return nil
	}
	conditions.Set(b, metav1.Condition{Type: workv1alpha1.ConditionStatusAggregated, Status: metav1.ConditionTrue,
		Reason: workv1alpha1.BindingReasonStatusAggregated, ObservedGeneration: b.GetGeneration(),
		Message: fmt.Sprintf("the status of %s %s is aggregated from its members", template.GetKind(), template.GetName())})
	if equality.Semantic.DeepEqual(template.Object["status"], aggregated.Object["status"]) {
		return nil
	}
	// Optimistic: a template changed since it was read is aggregated again
	// on the conflict's retry.
	if err := r.Client.Status().Patch(ctx, aggregated, client.MergeFromWithOptions(template, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the aggregated status of %s %s: %w", template.GetKind(), client.ObjectKeyFromObject(template), err)
	}
	return nil
}

// Aggregation is a binding's status computed from its Works.
type Aggregation struct {
	Items                                                       []workv1alpha1.AggregatedStatusItem
	Replicas, ReadyReplicas, AvailableReplicas, UpdatedReplicas int32
	Condition                                                   metav1.Condition
	// Failed is true when a member reported it could not apply its Work
	// (not merely that it has not yet).
	Failed bool
}

// Aggregate computes a binding's status from the Works of its members, one
// item per member of spec.clusters, in that order. A Work belongs to the
// member of its execution namespace flotilla-es-<member> — never to the one
// its labels name: a Pull member's agent writes its Works' status, and a
// label must not let one member's report stand for another's.
func Aggregate(spec *workv1alpha1.ResourceBindingSpec, works []workv1alpha1.Work) Aggregation {
	byMember := map[string]*workv1alpha1.Work{}
	for i := range works {
		if member, ok := strings.CutPrefix(works[i].Namespace, clusterv1alpha1.ExecutionNamespacePrefix); ok && member != "" {
			byMember[member] = &works[i]
		}
	}
	var a Aggregation
	var applied, notApplied []string
	for _, target := range spec.Clusters {
		item := itemOf(spec.Resource, target.Name, byMember[target.Name])
		a.Items = append(a.Items, item)
		if item.Applied {
			applied = append(applied, target.Name)
		} else {
			notApplied = append(notApplied, target.Name+": "+item.AppliedMessage)
			if w := byMember[target.Name]; w != nil && conditions.IsFalse(w, workv1alpha1.WorkApplied) {
				a.Failed = true
			}
		}
		counts := replicaCounts(item.Status)
		a.Replicas += counts.Replicas
		a.ReadyReplicas += counts.ReadyReplicas
		a.AvailableReplicas += counts.AvailableReplicas
		a.UpdatedReplicas += counts.UpdatedReplicas
	}
	c := metav1.Condition{Type: workv1alpha1.ConditionFullyApplied}
	switch {
	case len(spec.Clusters) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionFalse, workv1alpha1.BindingReasonNotScheduled, "not scheduled to any member yet"
	case len(notApplied) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, workv1alpha1.BindingReasonNotFullyApplied
		c.Message = "not applied on " + strings.Join(notApplied, "; ")
	default:
		c.Status, c.Reason = metav1.ConditionTrue, workv1alpha1.BindingReasonFullyApplied
		c.Message = "applied on " + strings.Join(applied, ", ")
	}
	a.Condition = c
	return a
}

// itemOf is one member's entry: whether its Work is applied and the
// template's object there (for an envelope, which carries several
// objects, the worst health of them and no status).
func itemOf(res workv1alpha1.ObjectReference, member string, w *workv1alpha1.Work) workv1alpha1.AggregatedStatusItem {
	item := workv1alpha1.AggregatedStatusItem{ClusterName: member, Health: workv1alpha1.ResourceUnknown}
	if w == nil {
		item.AppliedMessage = "Work not created yet"
		return item
	}
	if c := conditions.Get(w, workv1alpha1.WorkDispatching); c != nil && c.Status == metav1.ConditionFalse {
		item.AppliedMessage = c.Message
		return item
	}
	applied := conditions.Get(w, workv1alpha1.WorkApplied)
	switch {
	case applied == nil || applied.ObservedGeneration < w.Generation:
		item.AppliedMessage = "Work not applied yet"
		return item
	case applied.Status != metav1.ConditionTrue:
		item.AppliedMessage = applied.Message
	default:
		item.Applied = true
	}
	gv, _ := schema.ParseGroupVersion(res.APIVersion)
	worst := workv1alpha1.ResourceHealthy
	for _, st := range w.Status.ManifestStatuses {
		id := st.Identifier
		if id.Group == gv.Group && id.Kind == res.Kind && id.Namespace == res.Namespace && id.Name == res.Name {
			item.Health, item.Status = health(st), st.Status.DeepCopy()
			return item
		}
		worst = worse(worst, health(st))
	}
	if len(w.Status.ManifestStatuses) > 0 {
		item.Health = worst
	}
	return item
}

func health(st workv1alpha1.ManifestStatus) workv1alpha1.ResourceHealth {
	if st.Health == "" {
		return workv1alpha1.ResourceUnknown
	}
	return st.Health
}

func worse(a, b workv1alpha1.ResourceHealth) workv1alpha1.ResourceHealth {
	rank := map[workv1alpha1.ResourceHealth]int{workv1alpha1.ResourceHealthy: 0, workv1alpha1.ResourceUnknown: 1, workv1alpha1.ResourceUnhealthy: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

type counts struct {
	Replicas          int32 `json:"replicas"`
	ReadyReplicas     int32 `json:"readyReplicas"`
	AvailableReplicas int32 `json:"availableReplicas"`
	UpdatedReplicas   int32 `json:"updatedReplicas"`
}

// replicaCounts reads a workload's replica counts from its status; zero
// for kinds that report none.
func replicaCounts(status *runtime.RawExtension) counts {
	var c counts
	if status != nil {
		_ = json.Unmarshal(status.Raw, &c)
	}
	return c
}

// setAggregated sets the fields the aggregate phase owns in b's status to f.
func setAggregated(b workv1alpha1.Binding, f aggregatedFields) {
	s := b.BindingStatus()
	s.AggregatedStatus = nil
	for _, item := range f.AggregatedStatus {
		s.AggregatedStatus = append(s.AggregatedStatus, *item.DeepCopy())
	}
	s.Replicas, s.ReadyReplicas, s.AvailableReplicas, s.UpdatedReplicas = f.Replicas, f.ReadyReplicas, f.AvailableReplicas, f.UpdatedReplicas
	kept := s.Conditions[:0:0]
	for _, c := range s.Conditions {
		if c.Type != workv1alpha1.ConditionFullyApplied && c.Type != workv1alpha1.ConditionStatusAggregated {
			kept = append(kept, c)
		}
	}
	for _, c := range f.Conditions {
		kept = append(kept, *c.DeepCopy())
	}
	s.Conditions = kept
}
