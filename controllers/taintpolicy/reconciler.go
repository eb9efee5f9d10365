// Package taintpolicy is the ClusterTaintPolicy controller: for each member
// it evaluates every policy (internal/taintpolicy) against the member's
// conditions and its CAPI Cluster's, and adds or removes the policies' taints
// on the member's spec, recording which taints it added in the member's
// PolicyTaintsAnnotation so that it never touches a taint it does not own.
// A forSeconds wait is honoured by requeueing the member when it runs out.
// defaults.go keeps the default policy set.
package taintpolicy

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/capiref"
	"github.com/flotilla-io/flotilla/internal/taintpolicy"
)

// +kubebuilder:rbac:groups=policy.flotilla.io,resources=clustertaintpolicies,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// conflictRequeue is the fixed retry interval after a write conflict: the
// member is written by enrolment and health too, and a taint is due now.
const conflictRequeue = 200 * time.Millisecond

// Reconciler keeps members' policy taints.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock forSeconds is measured by; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager reconciles members on any change of their conditions,
// taints or annotations, of their Cluster's conditions, and of any policy.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorder("flotilla-taint-policy")
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("cluster-taint-policy").
		For(&clusterv1alpha1.MemberCluster{}, builder.WithPredicates(memberChanged())).
		Watches(&policyv1alpha1.ClusterTaintPolicy{}, handler.EnqueueRequestsFromMapFunc(r.allMembers),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&capiv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(capiref.ClusterToMember),
			builder.WithPredicates(clusterConditionsChanged())).
		WithOptions(options).
		Complete(r)
}

// Reconcile evaluates every policy against one member and writes its taints.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	policies := &policyv1alpha1.ClusterTaintPolicyList{}
	if err := r.Client.List(ctx, policies); err != nil {
		return ctrl.Result{}, fmt.Errorf("list ClusterTaintPolicies: %w", err)
	}
	cluster, err := capiref.ClusterOf(ctx, r.Client, m)
	if err != nil {
		return ctrl.Result{}, err
	}
	in := taintpolicy.Input{Member: m, Policies: policies.Items, Now: r.Now()}
	if cluster != nil {
		in.CAPI = cluster.Status.Conditions
	}
	plan := taintpolicy.Compute(in)
	for _, e := range plan.Errors {
		ctrl.LoggerFrom(ctx).Info("Skipping a ClusterTaintPolicy", "member", m.Name, "error", e)
	}

	if err := r.write(ctx, m, &plan); err != nil {
		if apierrors.IsConflict(err) {
			return ctrl.Result{RequeueAfter: conflictRequeue}, nil
		}
		return ctrl.Result{}, err
	}
	if !plan.RecheckAt.IsZero() {
		return ctrl.Result{RequeueAfter: max(plan.RecheckAt.Sub(in.Now), 0) + 50*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// write patches the member's taints and ownership annotation with an
// optimistic lock, so that a taint another writer just set is not lost.
func (r *Reconciler) write(ctx context.Context, m *clusterv1alpha1.MemberCluster, plan *taintpolicy.Plan) error {
	before := m.DeepCopy()
	if plan.Managed == "" {
		delete(m.Annotations, clusterv1alpha1.PolicyTaintsAnnotation)
	} else {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[clusterv1alpha1.PolicyTaintsAnnotation] = plan.Managed
	}
	m.Spec.Taints = plan.Taints
	if equality.Semantic.DeepEqual(before.Spec.Taints, m.Spec.Taints) && equality.Semantic.DeepEqual(before.Annotations, m.Annotations) {
		return nil
	}
	if err := r.Client.Patch(ctx, m, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("write the taints of member %s: %w", m.Name, err)
	}
	for _, c := range plan.Added {
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, clusterv1alpha1.TaintAddedReason, "Taint",
			"ClusterTaintPolicy %s added taint %s", c.Policy, c.Taint.ToString())
	}
	for _, c := range plan.Removed {
		why := "ClusterTaintPolicy " + c.Policy
		if c.Policy == "" {
			why = "no ClusterTaintPolicy lists it any more:"
		}
		r.Recorder.Eventf(m, nil, corev1.EventTypeNormal, clusterv1alpha1.TaintRemovedReason, "Taint",
			"%s removed taint %s", why, c.Taint.ToString())
	}
	return nil
}

func (r *Reconciler) allMembers(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &clusterv1alpha1.MemberClusterList{}
	if err := r.Client.List(ctx, list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List members after a ClusterTaintPolicy change")
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
	}
	return out
}

// memberChanged passes creations and changes of what policies read or
// write: conditions, taints (generation), labels and annotations.
func memberChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			if !ok1 || !ok2 {
				return false
			}
			return oldM.Generation != newM.Generation ||
				!equality.Semantic.DeepEqual(oldM.Labels, newM.Labels) ||
				oldM.Annotations[clusterv1alpha1.PolicyTaintsAnnotation] != newM.Annotations[clusterv1alpha1.PolicyTaintsAnnotation] ||
				!sameConditions(oldM.Status.Conditions, newM.Status.Conditions)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// clusterConditionsChanged passes Cluster updates that change a condition's
// status (capi: match conditions read them).
func clusterConditionsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldC, ok1 := e.ObjectOld.(*capiv1.Cluster)
			newC, ok2 := e.ObjectNew.(*capiv1.Cluster)
			return ok1 && ok2 && !sameConditions(oldC.Status.Conditions, newC.Status.Conditions)
		},
		CreateFunc: func(event.CreateEvent) bool { return true },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// sameConditions compares types, statuses and transition times.
func sameConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Type != b[i].Type || a[i].Status != b[i].Status || !a[i].LastTransitionTime.Equal(&b[i].LastTransitionTime) {
			return false
		}
	}
	return true
}
