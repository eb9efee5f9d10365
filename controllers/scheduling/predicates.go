package scheduling

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
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
