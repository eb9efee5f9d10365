package binding

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// A generation that changed nothing a decision reads is only observed; any
// input, the placement, the binding's identity or a member change since the
// decision makes it decided again.
func TestDecidedInputsTellAGenerationToObserveFromOneToDecide(t *testing.T) {
	decided := &workv1alpha1.ResourceBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "u1", Generation: 4},
		Spec: workv1alpha1.ResourceBindingSpec{
			Resource: workv1alpha1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "shop", Name: "web", ResourceVersion: "10"},
			Replicas: 3,
			Clusters: []workv1alpha1.TargetCluster{{Name: "a", Replicas: 3}},
		},
	}
	var d decidedInputs
	d.record("shop/web", decided, 7)
	next := func(change func(*workv1alpha1.ResourceBinding)) *workv1alpha1.ResourceBinding {
		b := decided.DeepCopy()
		b.Generation++
		change(b)
		return b
	}
	tests := []struct {
		name      string
		b         *workv1alpha1.ResourceBinding
		epoch     uint64
		unchanged bool
	}{
		{"the template's resourceVersion", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Resource.ResourceVersion = "11" }), 7, true},
		{"a rendering-only field", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.PreserveResourcesOnDeletion = new(true) }), 7, true},
		{"the same, after a member change", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Resource.ResourceVersion = "11" }), 8, false},
		{"replicas", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Replicas = 4 }), 7, false},
		{"an eviction task", next(func(b *workv1alpha1.ResourceBinding) {
			b.Spec.GracefulEvictionTasks = []workv1alpha1.GracefulEvictionTask{{FromCluster: "a"}}
		}), 7, false},
		{"failback asked", next(func(b *workv1alpha1.ResourceBinding) {
			b.Annotations = map[string]string{workv1alpha1.FailbackTriggeredAtAnnotation: "2026-12-03T10:00:01Z"}
		}), 7, false},
		{"the placement", next(func(b *workv1alpha1.ResourceBinding) { b.Spec.Clusters[0].Name = "b" }), 7, false},
		{"another binding of the same name", next(func(b *workv1alpha1.ResourceBinding) { b.UID = "u2" }), 7, false},
	}
	for _, tt := range tests {
		if got := d.unchanged("shop/web", tt.b, tt.epoch); got != tt.unchanged {
			t.Errorf("%s: unchanged = %v, want %v", tt.name, got, tt.unchanged)
		}
	}
	d.forget("shop/web")
	if d.unchanged("shop/web", decided, 7) {
		t.Error("a forgotten binding is unchanged")
	}
}
