package binding

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/cluster-api/util/conditions"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// renderedAtANewGeneration passes binding updates whose Rendered condition
// turns True, or is True at a newer generation than before: the render
// phase's status write. The held-capacity ledger is told a member applied a
// decision only once Rendered is True at that decision's generation
// (reportApplied), and a Work can be applied, and its last report
// aggregated, before that write reaches the cache; without this the hold
// would last to its maximum.
func renderedAtANewGeneration() predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldB, ok1 := e.ObjectOld.(workv1alpha1.Binding)
			newB, ok2 := e.ObjectNew.(workv1alpha1.Binding)
			if !ok1 || !ok2 {
				return false
			}
			after := conditions.Get(newB, workv1alpha1.ConditionRendered)
			if after == nil || after.Status != metav1.ConditionTrue {
				return false
			}
			before := conditions.Get(oldB, workv1alpha1.ConditionRendered)
			return before == nil || before.Status != metav1.ConditionTrue || before.ObservedGeneration < after.ObservedGeneration
		},
	}
}
