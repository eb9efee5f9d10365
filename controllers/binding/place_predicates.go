package binding

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// memberPlacementChanged passes member events that can change a placement:
// creation and deletion, labels, spec (taints, cordon, region…), deletion
// start, readiness and API enablements — not the heartbeats that touch a
// member's status every few seconds, nor capacity reports.
func memberPlacementChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			if !ok1 || !ok2 {
				return true
			}
			return oldM.Generation != newM.Generation ||
				!equality.Semantic.DeepEqual(oldM.Labels, newM.Labels) ||
				oldM.DeletionTimestamp.IsZero() != newM.DeletionTimestamp.IsZero() ||
				readiness(oldM) != readiness(newM) ||
				!equality.Semantic.DeepEqual(oldM.Status.APIEnablements, newM.Status.APIEnablements)
		},
	}
}

// memberCapacityChanged passes updates that carry a new capacity model.
func memberCapacityChanged() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		DeleteFunc: func(event.DeleteEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldM, ok1 := e.ObjectOld.(*clusterv1alpha1.MemberCluster)
			newM, ok2 := e.ObjectNew.(*clusterv1alpha1.MemberCluster)
			return ok1 && ok2 && !equality.Semantic.DeepEqual(oldM.Status.CapacityModel, newM.Status.CapacityModel)
		},
	}
}

func readiness(m *clusterv1alpha1.MemberCluster) string {
	if c := conditions.Get(m, clusterv1alpha1.ConditionReady); c != nil {
		return string(c.Status)
	}
	return ""
}

// placementInputs is what a decision reads from a binding's spec
// (scheduler.InputFromBinding, the suspension and purge checks) and
// failback's trigger; the placement itself is compared apart.
type placementInputs struct {
	APIVersion, Kind, Namespace string
	Replicas                    int32
	Requirements                *workv1alpha1.ReplicaRequirements
	Placement                   *policyv1alpha1.Placement
	Evictions                   []workv1alpha1.GracefulEvictionTask
	RescheduleTriggeredAt       *metav1.Time
	Suspension                  *workv1alpha1.Suspension
	FailbackTriggeredAt         string
}

func inputsOf(b workv1alpha1.Binding) placementInputs {
	spec := b.BindingSpec()
	return placementInputs{
		FailbackTriggeredAt: b.GetAnnotations()[workv1alpha1.FailbackTriggeredAtAnnotation],
		APIVersion:          spec.Resource.APIVersion, Kind: spec.Resource.Kind, Namespace: spec.Resource.Namespace,
		Replicas: spec.Replicas, Requirements: spec.ReplicaRequirements, Placement: spec.Placement,
		Evictions: spec.GracefulEvictionTasks, RescheduleTriggeredAt: spec.RescheduleTriggeredAt, Suspension: spec.Suspension,
	}
}

// placementInputsChanged passes binding updates that can change its
// placement: a changed input, or spec.clusters changed by another writer;
// and a new generation not yet observed (the template's resourceVersion the
// detector records, fields only rendering reads), which the reconciler
// observes without deciding again when the inputs are those of its last
// decision. Not the controller's own placement write (which records the
// generation it produced).
func (r *Placer) placementInputsChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldB, ok1 := e.ObjectOld.(workv1alpha1.Binding)
			newB, ok2 := e.ObjectNew.(workv1alpha1.Binding)
			if !ok1 || !ok2 {
				return true
			}
			if !equality.Semantic.DeepEqual(inputsOf(oldB), inputsOf(newB)) {
				return true
			}
			if e.ObjectOld.GetGeneration() == e.ObjectNew.GetGeneration() {
				return false
			}
			if r.written.wrote(placementKey(newB), e.ObjectNew.GetUID(), e.ObjectNew.GetGeneration()) {
				return false
			}
			return !equality.Semantic.DeepEqual(oldB.BindingSpec().Clusters, newB.BindingSpec().Clusters) ||
				newB.BindingStatus().SchedulerObservedGeneration < e.ObjectNew.GetGeneration()
		},
	}
}
