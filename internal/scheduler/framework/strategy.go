package framework

import (
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Strategy is how replicas are assigned to the selected members.
type Strategy int

const (
	// Duplicated gives every selected member all replicas.
	Duplicated Strategy = iota
	// StaticWeighted divides by the policy's static weights (equal without a list).
	StaticWeighted
	// DynamicWeighted divides by how many replicas each member can hold.
	DynamicWeighted
	// Aggregated uses as few members as can hold the replicas.
	Aggregated
)

func (s Strategy) String() string {
	switch s {
	case Duplicated:
		return "Duplicated"
	case StaticWeighted:
		return "Divided/StaticWeighted"
	case DynamicWeighted:
		return "Divided/DynamicWeighted"
	case Aggregated:
		return "Divided/Aggregated"
	}
	return fmt.Sprintf("Strategy(%d)", int(s))
}

// Divided says whether replicas are shared between members.
func (s Strategy) Divided() bool { return s != Duplicated }

// NeedsCapacity says whether the strategy cannot work without knowing each
// member's capacity.
func (s Strategy) NeedsCapacity() bool { return s == DynamicWeighted || s == Aggregated }

// StrategyOf reads a placement's replica scheduling the way Karmada does: no
// replicaScheduling means Duplicated; Divided without a preference, or
// Weighted without weights, means equal static weights.
func StrategyOf(rs *policyv1alpha1.ReplicaSchedulingStrategy) (Strategy, error) {
	if rs == nil {
		return Duplicated, nil
	}
	switch rs.ReplicaSchedulingType {
	case policyv1alpha1.ReplicaSchedulingTypeDuplicated:
		return Duplicated, nil
	case policyv1alpha1.ReplicaSchedulingTypeDivided, "":
	default:
		return 0, fmt.Errorf("unknown replicaSchedulingType %q", rs.ReplicaSchedulingType)
	}
	switch rs.ReplicaDivisionPreference {
	case policyv1alpha1.ReplicaDivisionPreferenceAggregated:
		return Aggregated, nil
	case policyv1alpha1.ReplicaDivisionPreferenceWeighted, "":
	default:
		return 0, fmt.Errorf("unknown replicaDivisionPreference %q", rs.ReplicaDivisionPreference)
	}
	wp := rs.WeightPreference
	switch {
	case wp == nil || (wp.DynamicWeight == "" && len(wp.StaticWeightList) == 0):
		return StaticWeighted, nil
	case wp.DynamicWeight == policyv1alpha1.DynamicWeightByAvailableReplicas:
		if len(wp.StaticWeightList) > 0 {
			return 0, fmt.Errorf("staticWeightList and dynamicWeight are mutually exclusive")
		}
		return DynamicWeighted, nil
	case wp.DynamicWeight != "":
		return 0, fmt.Errorf("unknown dynamicWeight %q", wp.DynamicWeight)
	default:
		return StaticWeighted, nil
	}
}
