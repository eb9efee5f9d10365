package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// The aggregate phase looks at a binding again when a decision's rendering
// is recorded (Rendered True, or True at a newer generation), so that the
// ledger is told of Works applied before that record reached the cache;
// other status writes, the aggregate phase's own among them, are not passed.
func TestRenderedAtANewGenerationPassesOnlyANewRendering(t *testing.T) {
	rendered := func(status metav1.ConditionStatus, generation int64) *workv1alpha1.ResourceBinding {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", Generation: 3}}
		if status != "" {
			b.Status.Conditions = []metav1.Condition{{Type: workv1alpha1.ConditionRendered, Status: status, ObservedGeneration: generation, Reason: "R"}}
		}
		return b
	}
	withReady := func(b *workv1alpha1.ResourceBinding) *workv1alpha1.ResourceBinding {
		b.Status.ReadyReplicas = 2
		return b
	}
	tests := []struct {
		name          string
		before, after *workv1alpha1.ResourceBinding
		passes        bool
	}{
		{"no condition yet, then True", rendered("", 0), rendered(metav1.ConditionTrue, 3), true},
		{"False, then True", rendered(metav1.ConditionFalse, 3), rendered(metav1.ConditionTrue, 3), true},
		{"True at a newer generation", rendered(metav1.ConditionTrue, 2), rendered(metav1.ConditionTrue, 3), true},
		{"True at the same generation, other status moved", rendered(metav1.ConditionTrue, 3), withReady(rendered(metav1.ConditionTrue, 3)), false},
		{"True, then False", rendered(metav1.ConditionTrue, 3), rendered(metav1.ConditionFalse, 3), false},
		{"no condition either side", rendered("", 0), withReady(rendered("", 0)), false},
	}
	pred := renderedAtANewGeneration()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pred.Update(event.UpdateEvent{ObjectOld: tt.before, ObjectNew: tt.after}); got != tt.passes {
				t.Errorf("passes = %v, want %v", got, tt.passes)
			}
		})
	}
	if pred.Create(event.CreateEvent{Object: rendered(metav1.ConditionTrue, 3)}) {
		t.Error("a creation passed: the generation predicate covers it")
	}
}
