package scheduler

import (
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/affinity"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// staticWeights gives each member the highest weight among the
// staticWeightList entries that select it, 0 when none does; every member
// weighs 1 without a list.
func staticWeights(snap *framework.Snapshot, prefs *policyv1alpha1.ClusterPreferences) ([]int64, error) {
	weights := make([]int64, snap.Len())
	if prefs == nil || len(prefs.StaticWeightList) == 0 {
		for i := range weights {
			weights[i] = 1
		}
		return weights, nil
	}
	for k := range prefs.StaticWeightList {
		entry := &prefs.StaticWeightList[k]
		if entry.Weight < 1 {
			return nil, fmt.Errorf("staticWeightList[%d]: weight %d, want at least 1", k, entry.Weight)
		}
		term, err := affinity.Compile(fmt.Sprintf("staticWeightList[%d]", k), &entry.TargetCluster)
		if err != nil {
			return nil, err
		}
		for i := range weights {
			if ok, _ := term.Match(snap.Member(i)); ok {
				weights[i] = max(weights[i], entry.Weight)
			}
		}
	}
	return weights, nil
}
