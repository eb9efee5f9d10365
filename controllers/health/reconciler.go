// Package health is the member health controller: it owns a MemberCluster's
// Reachable, ControlPlaneAvailable, WorkersAvailable and Ready conditions and
// computes them (with internal/health) from the member's CAPI Cluster's
// v1beta2 conditions, its Machines' conditions and, for a Pull-mode member,
// its agent's Lease flotilla-es-<member>/flotilla-agent. Enrolment owns the
// Enrolled and Terminating conditions; taint policies read these.
package health

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	capiv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/annotations"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/cluster-api/util/patch"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/controllers/capiref"
	"github.com/flotilla-io/flotilla/internal/health"
)

// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters,verbs=get;list;watch
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=memberclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=cluster.x-k8s.io,resources=clusters;machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch

// OwnedConditions are the member conditions this controller writes.
var OwnedConditions = []string{
	clusterv1alpha1.ConditionReachable, clusterv1alpha1.ConditionControlPlaneAvailable,
	clusterv1alpha1.ConditionWorkersAvailable, clusterv1alpha1.ConditionReady,
}

// Reconciler writes members' health conditions.
type Reconciler struct {
	Client client.Client
	// WorkersThreshold is the share of healthy worker Machines below which
	// WorkersAvailable is False; health.DefaultWorkersThreshold when 0.
	WorkersThreshold float64
	// Now is the clock Lease expiry is judged by; time.Now when nil.
	Now func() time.Time
}

// SetupWithManager watches members (creation, spec, the Enrolled
// condition), their Clusters, Machines and agents' Leases.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, options controller.Options) error {
	if r.Client == nil {
		r.Client = mgr.GetClient()
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("member-health").
		For(&clusterv1alpha1.MemberCluster{}, builder.WithPredicates(memberInputsChanged())).
		Watches(&capiv1.Cluster{}, handler.EnqueueRequestsFromMapFunc(capiref.ClusterToMember),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&capiv1.Machine{}, handler.EnqueueRequestsFromMapFunc(capiref.MachineToMember(mgr.GetClient())),
			builder.WithPredicates(predicate.ResourceVersionChangedPredicate{})).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(capiref.ExecutionNamespaceToMember),
			builder.WithPredicates(agentLease())).
		WithOptions(options).
		Complete(r)
}

// Reconcile computes one member's health conditions and writes them in one patch.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (_ ctrl.Result, reterr error) {
	m := &clusterv1alpha1.MemberCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, m); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !m.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	cluster, err := capiref.ClusterOf(ctx, r.Client, m)
	if err != nil || cluster == nil {
		// A member without its Cluster is being removed by enrolment.
		return ctrl.Result{}, err
	}
	in, err := r.input(ctx, m, cluster)
	if err != nil {
		return ctrl.Result{}, err
	}
	helper, err := patch.NewHelper(m, r.Client)
	if err != nil {
		return ctrl.Result{}, err
	}
	for _, c := range health.Conditions(in) {
		conditions.Set(m, c)
	}
	if err := helper.Patch(ctx, m, patch.WithOwnedConditions{Conditions: OwnedConditions}); err != nil {
		return ctrl.Result{}, fmt.Errorf("patch health conditions of member %s: %w", m.Name, err)
	}
	if at := health.RecheckAt(in); !at.IsZero() {
		return ctrl.Result{RequeueAfter: at.Sub(in.Now) + 100*time.Millisecond}, nil
	}
	return ctrl.Result{}, nil
}

// input gathers what health is computed from.
func (r *Reconciler) input(ctx context.Context, m *clusterv1alpha1.MemberCluster, cluster *capiv1.Cluster) (health.Input, error) {
	in := health.Input{
		RemoteConnectionProbe: conditions.Get(cluster, capiv1.ClusterRemoteConnectionProbeCondition),
		ControlPlaneAvailable: conditions.Get(cluster, capiv1.ClusterControlPlaneAvailableCondition),
		RollingOut:            conditions.Get(cluster, capiv1.ClusterRollingOutCondition),
		Paused:                annotations.IsPaused(cluster, cluster),
		Enrolled:              conditions.IsTrue(m, clusterv1alpha1.ConditionEnrolled),
		Pull:                  m.Spec.SyncMode == clusterv1alpha1.Pull,
		Now:                   r.Now(),
		WorkersThreshold:      r.WorkersThreshold,
	}
	machines, err := capiref.MachinesOf(ctx, r.Client, m)
	if err != nil {
		return in, err
	}
	for i := range machines {
		in.Machines = append(in.Machines, machineOf(&machines[i]))
	}
	if in.Pull {
		lease := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ExecutionNamespace(m.Name), Name: clusterv1alpha1.AgentLeaseName}, lease)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			return in, fmt.Errorf("read the agent Lease of member %s: %w", m.Name, err)
		default:
			in.Lease = leaseOf(lease)
		}
	}
	return in, nil
}

func machineOf(m *capiv1.Machine) health.Machine {
	status := func(t string) metav1.ConditionStatus {
		if c := conditions.Get(m, t); c != nil {
			return c.Status
		}
		return ""
	}
	_, cp := m.Labels[capiv1.MachineControlPlaneLabel]
	return health.Machine{
		Name: m.Name, ControlPlane: cp, Deleting: !m.DeletionTimestamp.IsZero(),
		NodeHealthy:          status(capiv1.MachineNodeHealthyCondition),
		Ready:                status(capiv1.MachineReadyCondition),
		HealthCheckSucceeded: status(capiv1.MachineHealthCheckSucceededCondition),
	}
}

// leaseOf reads renewTime (else acquireTime) and leaseDurationSeconds; a
// Lease that was never renewed counts as expired.
func leaseOf(l *coordinationv1.Lease) *health.Lease {
	out := &health.Lease{}
	switch {
	case l.Spec.RenewTime != nil:
		out.RenewTime = l.Spec.RenewTime.Time
	case l.Spec.AcquireTime != nil:
		out.RenewTime = l.Spec.AcquireTime.Time
	}
	if l.Spec.LeaseDurationSeconds != nil {
		out.Duration = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return out
}

// memberInputsChanged passes member creations, spec changes (sync mode) and
// changes of the Enrolled condition — not this controller's own writes.
func memberInputsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			if !ok1 || !ok2 {
				return false
			}
			return oldM.Generation != newM.Generation ||
				conditions.IsTrue(oldM, clusterv1alpha1.ConditionEnrolled) != conditions.IsTrue(newM, clusterv1alpha1.ConditionEnrolled) ||
				missingOwned(newM)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
}

// missingOwned: another writer dropped one of the health conditions.
func missingOwned(m *clusterv1alpha1.MemberCluster) bool {
	for _, t := range OwnedConditions {
		if conditions.Get(m, t) == nil {
			return true
		}
	}
	return false
}

// agentLease passes the flotilla-agent Lease of execution namespaces.
func agentLease() predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetName() == clusterv1alpha1.AgentLeaseName && len(capiref.ExecutionNamespaceToMember(context.Background(), o)) == 1
	})
}
