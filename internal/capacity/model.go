package capacity

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Model is a CapacityModel compiled for repeated fits. It is immutable: Place
// returns a new Model, so one Model may be read from many goroutines.
type Model struct {
	observedTime time.Time
	groups       []group
	// boundPods is shared by every Model placed from the same base: Place
	// changes free capacity, not what the estimator saw.
	boundPods map[string]int32
}

// group is count Nodes of one shape.
type group struct {
	count  int64
	labels map[string]string
	// taints keeps only the effects that keep a Pod off a Node.
	taints []corev1.Taint
	free   []amount
}

// NewModel compiles cm; a nil cm gives a nil Model, meaning "capacity unknown".
func NewModel(cm *clusterv1alpha1.CapacityModel) *Model {
	if cm == nil {
		return nil
	}
	m := &Model{observedTime: cm.ObservedTime.Time, groups: make([]group, 0, len(cm.NodeGroups)), boundPods: cm.BoundPods}
	for i := range cm.NodeGroups {
		ng := &cm.NodeGroups[i]
		if ng.Count <= 0 {
			continue
		}
		m.groups = append(m.groups, group{
			count:  int64(ng.Count),
			labels: ng.Labels,
			taints: repelling(ng.Taints),
			free:   amountsOf(ng.Free, false),
		})
	}
	return m
}

// ObservedTime is when the estimator computed the model.
func (m *Model) ObservedTime() time.Time { return m.observedTime }

// BoundPods is how many non-terminal Pods of namespace the estimator saw
// bound to a Node (0 for a namespace the model leaves out).
func (m *Model) BoundPods(namespace string) int64 { return int64(m.boundPods[namespace]) }

// repelling keeps the taints a Pod must tolerate to be scheduled:
// PreferNoSchedule only steers the member's scheduler, it never forbids.
func repelling(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}
