package execution

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

func TestAMemberSwitchingSyncModeHasItsWorksReconciled(t *testing.T) {
	member := func(mode clusterv1alpha1.SyncMode, labels map[string]string) *clusterv1alpha1.MemberCluster {
		return &clusterv1alpha1.MemberCluster{ObjectMeta: metav1.ObjectMeta{Name: "edge", Labels: labels}, Spec: clusterv1alpha1.MemberClusterSpec{SyncMode: mode}}
	}
	tests := []struct {
		name        string
		old, update *clusterv1alpha1.MemberCluster
		want        bool
	}{
		{"Push to Pull", member(clusterv1alpha1.Push, nil), member(clusterv1alpha1.Pull, nil), true},
		{"Pull to Push", member(clusterv1alpha1.Pull, nil), member(clusterv1alpha1.Push, nil), true},
		{"unset (Push) to Pull", member("", nil), member(clusterv1alpha1.Pull, nil), true},
		{"a label changes, the mode does not", member(clusterv1alpha1.Pull, nil), member(clusterv1alpha1.Pull, map[string]string{"a": "b"}), false},
	}
	p := syncModeChanged()
	for _, tt := range tests {
		if got := p.Update(event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.update}); got != tt.want {
			t.Errorf("%s: syncModeChanged = %v, want %v", tt.name, got, tt.want)
		}
	}
	if p.Create(event.CreateEvent{Object: member(clusterv1alpha1.Pull, nil)}) {
		t.Error("a new member passes: its Works are reconciled when they are created")
	}
}

func TestOnlyWorksOfExecutionNamespacesAreExecuted(t *testing.T) {
	p := InExecutionNamespace()
	for ns, want := range map[string]bool{"flotilla-es-edge": true, "flotilla-es-": false, "shop": false} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "w"}}
		if got := p.Generic(event.GenericEvent{Object: obj}); got != want {
			t.Errorf("namespace %q: InExecutionNamespace = %v, want %v", ns, got, want)
		}
	}
}
