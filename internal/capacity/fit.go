package capacity

import (
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Fit is how many replicas of rr fit in cm, node by node. A nil cm has no
// answer: callers must treat it as "unknown", which Fit cannot express, so it
// returns 0 and callers check for a model first.
func Fit(cm *clusterv1alpha1.CapacityModel, rr *workv1alpha1.ReplicaRequirements) int64 {
	return NewModel(cm).Fit(NewRequirement(rr))
}

// Fit is how many replicas of r fit in m: the sum over groups whose Nodes
// admit r of count times the per-node fit. It saturates at math.MaxInt64.
func (m *Model) Fit(r *Requirement) int64 {
	if m == nil {
		return 0
	}
	var total int64
	for i := range m.groups {
		g := &m.groups[i]
		if !g.admits(r) {
			continue
		}
		total = saturatingAdd(total, saturatingMul(g.count, perNode(g.free, r.requests)))
	}
	return total
}
