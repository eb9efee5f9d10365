package plugins

import "github.com/flotilla-io/flotilla/internal/scheduler/framework"

// DefaultFilters are the filters in the order they run: the cheapest and most
// fundamental first, so a member's reported reason is the most basic one.
// Cluster affinity is not among them: it depends on the affinity term being
// tried, and the engine applies it first, per term.
func DefaultFilters() []framework.FilterPlugin {
	return []framework.FilterPlugin{
		MemberDeleting{},
		GracefulEviction{},
		MemberReady{},
		Cordon{},
		TaintToleration{},
		APIEnablement{},
		StaticWeight{},
		CapacityModel{},
		DuplicatedCapacity{},
	}
}

// DefaultScorers are the score plugins and their weights. Locality weighs
// twice capacity so that a member already running the binding stays ahead of
// an emptier one: moving replicas costs more than a less even spread.
func DefaultScorers() []framework.WeightedScorer {
	return []framework.WeightedScorer{
		{Plugin: Locality{}, Weight: 2},
		{Plugin: Capacity{}, Weight: 1},
	}
}
