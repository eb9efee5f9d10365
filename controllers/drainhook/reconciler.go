// Package drainhook makes the drain of a deleted Cluster's workloads a
// guarantee, not a race with Cluster API tearing its Machines down. While a
// Cluster is enrolled, every one of its Machines carries Cluster API's
// pre-drain deletion hook (annotation DrainHookAnnotation): a Machine being
// deleted is not drained, nor its node removed, while the hook is there.
// Cluster API skips drain, and with it pre-drain hooks, when the whole
// Cluster is being deleted (core/reconcilers/machine: isDeleteNodeAllowed),
// so the Machines also carry the pre-terminate hook (TerminateHookAnnotation),
// which Cluster API honours then too: the Machine's infrastructure is not
// deleted, and the Cluster's control plane is deleted only after its worker
// Machines, so the member's API keeps answering while its workloads leave.
//
// The hook is released from a deleting Machine:
//   - at once when the deletion is routine (the Cluster is neither being
//     deleted nor leaving the fleet: a rollout or scale-down);
//   - when the member leaves the fleet, once its execution namespace holds no
//     Work — the taint manager evicted every binding from it and the purge
//     modes let the old copies go, i.e. Gracefully: the workloads are Ready
//     elsewhere — or once --member-drain-timeout has passed since the
//     Cluster's deletion (or the member's Terminating condition) began;
//   - when the Cluster is no longer enrolled.
//
// Machines of Clusters that are not enrolled lose the hook.
package drainhook

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/conditions"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/capiref"
)

// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=machines,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=work.flotilla.io,resources=works,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Event reasons on Machines.
const (
	HookReleasedReason = "DrainHookReleased"
)

// drainPoll backs up the Work watch while a member drains.
const drainPoll = 5 * time.Second

// Reconciler keeps the pre-drain hook on members' Machines.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// DrainTimeout bounds how long a leaving member's Machines are held
	// (--member-drain-timeout, shared with enrolment).
	DrainTimeout time.Duration
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager watches Machines, and maps to them their Cluster's
// deletion and enrolment, their member's Terminating condition and the
// deletion of the member's Works.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("flotilla-drain-hook")
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("drain-hook").
		For(&capiv1.Machine{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.AnnotationChangedPredicate{}, predicate.GenerationChangedPredicate{}, deletionStarted()))).
		Watches(&capiv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfCluster),
			builder.WithPredicates(predicate.Or[client.Object](deletionStarted(), finalizersChanged()))).
		Watches(&clusterv1alpha1.MemberCluster{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfMember),
			builder.WithPredicates(terminatingChanged())).
		Watches(&workv1alpha1.Work{}, handler.EnqueueRequestsFromMapFunc(r.machinesOfWorkMember),
			builder.WithPredicates(workDeleted())).
		WithOptions(options).
		Complete(r)
}

// Reconcile adds, keeps or releases one Machine's hook.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	machine := &capiv1.Machine{}
	if err := r.Client.Get(ctx, req.NamespacedName, machine); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	cluster := &capiv1.Cluster{}
	clusterName := machine.Labels[capiv1.ClusterNameLabel]
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: machine.Namespace, Name: clusterName}, cluster)
	if client.IgnoreNotFound(err) != nil {
		return ctrl.Result{}, fmt.Errorf("read Cluster %s/%s of Machine %s: %w", machine.Namespace, clusterName, machine.Name, err)
	}
	enrolled := err == nil && clusterName != "" && controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.ClusterFinalizer)
	hooked := hasHook(machine)
	_, bothHooks := machine.Annotations[clusterv1alpha1.TerminateHookAnnotation]
	bothHooks = bothHooks && machine.Annotations[clusterv1alpha1.DrainHookAnnotation] != ""

	if machine.DeletionTimestamp.IsZero() {
		switch {
		case enrolled && !bothHooks:
			return ctrl.Result{}, r.setHook(ctx, machine, true)
		case !enrolled && hooked:
			return ctrl.Result{}, r.setHook(ctx, machine, false)
		}
		return ctrl.Result{}, nil
	}
	if !hooked {
		return ctrl.Result{}, nil
	}
	if !enrolled {
		return ctrl.Result{}, r.release(ctx, machine, "the Cluster is not enrolled")
	}
	m := &clusterv1alpha1.MemberCluster{}
	memberName := capiref.MemberName(cluster)
	if err := r.Client.Get(ctx, client.ObjectKey{Name: memberName}, m); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return ctrl.Result{}, r.release(ctx, machine, "member "+memberName+" is gone")
		}
		return ctrl.Result{}, fmt.Errorf("read member %s: %w", memberName, err)
	}
	start, leaving := leavingSince(cluster, m)
	if !leaving {
		return ctrl.Result{}, r.release(ctx, machine, "routine deletion: the Cluster stays in the fleet")
	}
	works, err := r.countWorks(ctx, memberName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if works == 0 {
		return ctrl.Result{}, r.release(ctx, machine, "member "+memberName+" is drained: no Work is left")
	}
	deadline := start.Add(r.DrainTimeout)
	now := r.Now()
	if !now.Before(deadline) {
		return ctrl.Result{}, r.release(ctx, machine, fmt.Sprintf("the drain timeout of %s passed with %d Works left on member %s", r.DrainTimeout, works, memberName))
	}
	return ctrl.Result{RequeueAfter: min(deadline.Sub(now), drainPoll)}, nil
}

// leavingSince: the member leaves the fleet (its Cluster is being deleted,
// or enrolment drains it), and since when.
func leavingSince(cluster *capiv1.Cluster, m *clusterv1alpha1.MemberCluster) (time.Time, bool) {
	if t := conditions.Get(m, clusterv1alpha1.ConditionTerminating); t != nil && t.Status == metav1.ConditionTrue {
		return t.LastTransitionTime.Time, true
	}
	if !cluster.DeletionTimestamp.IsZero() {
		return cluster.DeletionTimestamp.Time, true
	}
	return time.Time{}, false
}

func (r *Reconciler) countWorks(ctx context.Context, member string) (int, error) {
	works := &workv1alpha1.WorkList{}
	if err := r.Client.List(ctx, works, client.InNamespace(clusterv1alpha1.ExecutionNamespace(member))); err != nil {
		return 0, fmt.Errorf("list Works of member %s: %w", member, err)
	}
	return len(works.Items), nil
}

// hooks are the Machine deletion hooks this controller keeps.
var hooks = []string{clusterv1alpha1.DrainHookAnnotation, clusterv1alpha1.TerminateHookAnnotation}

func hasHook(m *capiv1.Machine) bool {
	for _, h := range hooks {
		if _, ok := m.Annotations[h]; ok {
			return true
		}
	}
	return false
}

func (r *Reconciler) setHook(ctx context.Context, machine *capiv1.Machine, on bool) error {
	before := machine.DeepCopy()
	for _, h := range hooks {
		if on {
			if machine.Annotations == nil {
				machine.Annotations = map[string]string{}
			}
			machine.Annotations[h] = clusterv1alpha1.DrainHookOwner
		} else {
			delete(machine.Annotations, h)
		}
	}
	if err := r.Client.Patch(ctx, machine, client.MergeFrom(before)); err != nil {
		return client.IgnoreNotFound(fmt.Errorf("set the pre-drain hook of Machine %s/%s to %v: %w", machine.Namespace, machine.Name, on, err))
	}
	return nil
}

func (r *Reconciler) release(ctx context.Context, machine *capiv1.Machine, why string) error {
	if err := r.setHook(ctx, machine, false); err != nil {
		return err
	}
	ctrl.LoggerFrom(ctx).Info("Released the deletion hooks", "machine", client.ObjectKeyFromObject(machine), "why", why)
	r.Recorder.Eventf(machine, nil, corev1.EventTypeNormal, HookReleasedReason, "Drain", "Released Flotilla's pre-drain and pre-terminate hooks: %s", why)
	return nil
}

func (r *Reconciler) machinesOfCluster(ctx context.Context, c client.Object) []reconcile.Request {
	list := &capiv1.MachineList{}
	if err := r.Client.List(ctx, list, client.InNamespace(c.GetNamespace()), client.MatchingLabels{capiv1.ClusterNameLabel: c.GetName()}); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List Machines of a Cluster", "cluster", client.ObjectKeyFromObject(c))
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
	return out
}

func (r *Reconciler) machinesOfMember(ctx context.Context, o client.Object) []reconcile.Request {
	m, ok := o.(*clusterv1alpha1.MemberCluster)
	if !ok {
		return nil
	}
	ref := m.Spec.ClusterRef
	return r.machinesOfCluster(ctx, &capiv1.Cluster{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}})
}

func (r *Reconciler) machinesOfWorkMember(ctx context.Context, w client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, req := range capiref.ExecutionNamespaceToMember(ctx, w) {
		m := &clusterv1alpha1.MemberCluster{}
		if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
			continue
		}
		cluster, err := capiref.ClusterOf(ctx, r.Client, m)
		if err != nil || cluster == nil {
			continue
		}
		if _, leaving := leavingSince(cluster, m); leaving {
			out = append(out, r.machinesOfMember(ctx, m)...)
		}
	}
	return out
}

func deletionStarted() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		CreateFunc: func(event.CreateEvent) bool { return true },
	}
}

func finalizersChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return controllerutil.ContainsFinalizer(e.ObjectOld, clusterv1alpha1.ClusterFinalizer) != controllerutil.ContainsFinalizer(e.ObjectNew, clusterv1alpha1.ClusterFinalizer)
		},
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

func terminatingChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && conditions.IsTrue(oldM, clusterv1alpha1.ConditionTerminating) != conditions.IsTrue(newM, clusterv1alpha1.ConditionTerminating)
		},
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return true },
	}
}

func workDeleted() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
