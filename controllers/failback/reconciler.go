// Package failback returns workloads to a member that recovered. The taint
// manager lists, in a binding's FailbackAnnotation, the members it evicted
// the binding from under a policy with failover.cluster.failback: true. Once
// such a member is Ready again, carries no NoSchedule or NoExecute taint the
// binding does not tolerate, is not cordoned, and no eviction task for it is
// left on the binding, the binding is rebalanced (spec.rescheduleTriggeredAt
// = now: the scheduler places it from scratch, as its policy asks) and the
// member leaves the list. Rebalances go one binding at a time through a
// pacing.Queue at the eviction rate.
package failback

import (
	"context"
	"fmt"
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
	"github.com/flotilla-io/flotilla/controllers/binding"
	"github.com/flotilla-io/flotilla/controllers/pacing"
	"github.com/flotilla-io/flotilla/internal/capacity"
)

// +kubebuilder:rbac:groups=work.flotilla.io,resources=resourcebindings;clusterresourcebindings,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// FailbackIndex indexes bindings by the members of their FailbackAnnotation.
const FailbackIndex = "flotilla.io/failback-from"

// Reconciler triggers failback rebalances.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Queue paces rebalances; its Due and Act are set by SetupWithManager.
	Queue *pacing.Queue
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager registers one controller per binding kind and the queue.
func (r *Reconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("flotilla-failback")
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	r.Queue.Name = "failback"
	r.Queue.Due, r.Queue.Act = r.due, r.rebalance
	if err := mgr.Add(r.Queue); err != nil {
		return err
	}
	for _, kind := range []string{binding.KindResourceBinding, binding.KindClusterResourceBinding} {
		if err := mgr.GetFieldIndexer().IndexField(ctx, binding.NewBinding(kind), FailbackIndex, failbackMembers); err != nil {
			return fmt.Errorf("index %s by failback member: %w", kind, err)
		}
		kind := kind
		err := ctrl.NewControllerManagedBy(mgr).
			Named("failback-"+strings.ToLower(kind)).
			For(binding.NewBinding(kind), builder.WithPredicates(withFailback())).
			Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.bindingsFailingBackTo(kind)),
				builder.WithPredicates(memberMayHaveRecovered())).
			WithOptions(options).
			Complete(reconcile.Func(func(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
				return r.Reconcile(ctx, kind, req)
			}))
		if err != nil {
			return fmt.Errorf("failback controller for %s: %w", kind, err)
		}
	}
	return nil
}

func failbackMembers(o client.Object) []string {
	return membersOf(o)
}

func membersOf(o client.Object) []string {
	v := o.GetAnnotations()[workv1alpha1.FailbackAnnotation]
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// Reconcile queues a binding one of whose failback members has recovered.
func (r *Reconciler) Reconcile(ctx context.Context, kind string, req ctrl.Request) (ctrl.Result, error) {
	due, err := r.due(ctx, pacing.Key{Kind: kind, Namespace: req.Namespace, Name: req.Name})
	if err != nil || !due {
		return ctrl.Result{}, err
	}
	r.Queue.Add(pacing.Key{Kind: kind, Namespace: req.Namespace, Name: req.Name})
	return ctrl.Result{}, nil
}

func (r *Reconciler) due(ctx context.Context, k pacing.Key) (bool, error) {
	b := binding.NewBinding(k.Kind)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	back, gone, err := r.recovered(ctx, r.Client, b)
	return len(back)+len(gone) > 0, err
}

// recovered sorts the binding's failback members into those it may go back
// to now and those that no longer exist.
func (r *Reconciler) recovered(ctx context.Context, c client.Reader, b workv1alpha1.Binding) (back, gone []string, err error) {
	if !b.GetDeletionTimestamp().IsZero() {
		return nil, nil, nil
	}
	spec := b.BindingSpec()
	var tolerations []corev1.Toleration
	if spec.Placement != nil {
		tolerations = spec.Placement.ClusterTolerations
	}
	for _, name := range membersOf(b) {
		m := &clusterv1alpha1.MemberCluster{}
		if err := c.Get(ctx, client.ObjectKey{Name: name}, m); err != nil {
			if apierrors.IsNotFound(err) {
				gone = append(gone, name)
				continue
			}
			return nil, nil, fmt.Errorf("read member %s: %w", name, err)
		}
		held := slices.ContainsFunc(spec.GracefulEvictionTasks, func(t workv1alpha1.GracefulEvictionTask) bool { return t.FromCluster == name })
		if !held && Welcoming(m, tolerations) {
			back = append(back, name)
		}
	}
	return back, gone, nil
}

// Welcoming: the member is Ready, not cordoned, and has no NoSchedule or
// NoExecute taint that tolerations do not tolerate.
func Welcoming(m *clusterv1alpha1.MemberCluster, tolerations []corev1.Toleration) bool {
	if !m.DeletionTimestamp.IsZero() || m.Spec.Unschedulable || !conditions.IsTrue(m, clusterv1alpha1.ConditionReady) {
		return false
	}
	for i := range m.Spec.Taints {
		t := &m.Spec.Taints[i]
		if (t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute) && !capacity.Tolerates(tolerations, t) {
			return false
		}
	}
	return true
}

// rebalance asks the scheduler for a placement from scratch and takes the
// recovered members off the list, in one write with an optimistic lock.
func (r *Reconciler) rebalance(ctx context.Context, k pacing.Key) error {
	b := binding.NewBinding(k.Kind)
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: k.Namespace, Name: k.Name}, b); err != nil {
		return client.IgnoreNotFound(err)
	}
	back, gone, err := r.recovered(ctx, r.Client, b)
	if err != nil || len(back)+len(gone) == 0 {
		return err
	}
	before := b.DeepCopyObject().(client.Object)
	left := slices.DeleteFunc(membersOf(b), func(n string) bool { return slices.Contains(back, n) || slices.Contains(gone, n) })
	a := b.GetAnnotations()
	if len(left) == 0 {
		delete(a, workv1alpha1.FailbackAnnotation)
	} else {
		a[workv1alpha1.FailbackAnnotation] = strings.Join(left, ",")
	}
	b.SetAnnotations(a)
	if len(back) > 0 {
		now := metav1.NewTime(r.Now())
		b.BindingSpec().RescheduleTriggeredAt = &now
	}
	if err := r.Client.Patch(ctx, b, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("trigger failback of %s: %w", k, err)
	}
	if len(back) > 0 {
		r.Recorder.Eventf(b, nil, corev1.EventTypeNormal, clusterv1alpha1.FailbackReason, "Failback",
			"Member %s recovered: rebalancing to the placement the policy asks for", strings.Join(back, ", "))
	}
	return nil
}

// bindingsFailingBackTo maps a member to the bindings that list it.
func (r *Reconciler) bindingsFailingBackTo(kind string) handler.MapFunc {
	return func(ctx context.Context, m client.Object) []reconcile.Request {
		var list client.ObjectList = &workv1alpha1.ResourceBindingList{}
		if kind == binding.KindClusterResourceBinding {
			list = &workv1alpha1.ClusterResourceBindingList{}
		}
		if err := r.Client.List(ctx, list, client.MatchingFields{FailbackIndex: m.GetName()}); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "List bindings failing back to a member", "member", m.GetName())
			return nil
		}
		var out []reconcile.Request
		switch l := list.(type) {
		case *workv1alpha1.ResourceBindingList:
			for i := range l.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
			}
		case *workv1alpha1.ClusterResourceBindingList:
			for i := range l.Items {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l.Items[i])})
			}
		}
		return out
	}
}

// withFailback passes bindings that list failback members.
func withFailback() predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool { return len(membersOf(o)) > 0 })
}

// memberMayHaveRecovered passes member changes of taints, cordon,
// readiness and deletion.
func memberMayHaveRecovered() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && (oldM.Generation != newM.Generation ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionReady) != conditions.IsTrue(newM, clusterv1alpha1.ConditionReady))
		},
		CreateFunc: func(event.CreateEvent) bool { return false },
	}
}
