package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A binding is decided again when what a decision reads changes, or when
// someone else moves its placement; a generation changed otherwise (the
// template's resourceVersion, rendering-only fields) is passed to be
// observed; status and the controller's own placement write are not passed.
func TestPlacementInputsChangedPassesOnlyWhatCanChangeAPlacement(t *testing.T) {
	base := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-deployment", UID: "u1", Generation: 4},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", ResourceVersion: "10"},
			Replicas: 3,
			Clusters: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 3}},
		},
	}
	r := &Placer{}
	pred := r.placementInputsChanged()
	next := func(change func(*workv1alpha1.ResourceBinding)) *workv1alpha1.ResourceBinding {
		b := base.DeepCopy()
		b.Generation++
		change(b)
		return b
	}
	tests := []struct {
		name   string
		after  *workv1alpha1.ResourceBinding
		passes bool
	}{
		{"status only", func() *workv1alpha1.ResourceBinding {
			b := base.DeepCopy()
			b.Status.ReadyReplicas = 3
			return b
		}(), false},
		// Passed to be observed (the reconciler does not decide them again).
		{"the template's resourceVersion", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Resource.ResourceVersion = "11" }), true},
		{"preserveResourcesOnDeletion", next(func(b *workv1alpha1.ResourceBinding) { t := true; b.Spec.PreserveResourcesOnDeletion = &t }), true},
		{"a generation observed already", next(func(b *workv1alpha1.ResourceBinding) {
			b.Spec.Resource.ResourceVersion = "11"
			b.Status.SchedulerObservedGeneration = b.Generation
		}), false},
		{"replicas", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Replicas = 4 }), true},
		{"an eviction task", next(func(b *workv1alpha1.ResourceBinding) {
			b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "a"}}
		}), true},
		{"reschedule asked", next(func(b *workv1alpha1.ResourceBinding) { now := metav1.Now(); b.Spec.RescheduleTriggeredAt = &now }), true},
		{"failback asked (an annotation: no new generation)", func() *workv1alpha1.ResourceBinding {
			b := base.DeepCopy()
			b.Annotations = map[string]string{workv1alpha1.FailbackTriggeredAtAnnotation: "2026-12-03T10:00:01Z"}
			return b
		}(), true},
		{"another annotation", func() *workv1alpha1.ResourceBinding {
			b := base.DeepCopy()
			b.Annotations = map[string]string{workv1alpha1.FailbackAnnotation: "a"}
			return b
		}(), false},
		{"placement moved by another writer", next(func(b *workv1alpha1.ResourceBinding) {
			b.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "b", Replicas: 3}}
		}), true},
	}
	for _, tt := range tests {
		if got := pred.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: tt.after}); got != tt.passes {
			t.Errorf("%s: passes %v, want %v", tt.name, got, tt.passes)
		}
	}

	// The controller's own write: the generation it recorded.
	own := next(func(b *workv1alpha1.ResourceBinding) {
		b.Spec.Clusters = []workv1alpha1.TargetCluster{{Name: "b", Replicas: 3}}
	})
	r.written.record(placementKey(own), own.UID, own.Generation)
	if pred.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: own}) {
		t.Error("the controller's own placement write is decided again")
	}
}
