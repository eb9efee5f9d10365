package plugins

import "github.com/flotilla-io/flotilla/internal/scheduler/framework"

// Locality prefers members where the binding already runs, so reschedules
// keep replicas where they are.
type Locality struct{}

func (Locality) Name() string { return "Locality" }

func (Locality) Score(c *framework.Cycle, m *framework.Member) int64 {
	if _, ok := c.Current[m.Name]; ok {
		return framework.MaxScore
	}
	return 0
}

// Capacity prefers members that can hold more replicas of the binding,
// relative to the roomiest candidate. Unknown capacity scores 0: a member
// whose room is known is preferred to one whose room is a guess.
type Capacity struct{}

func (Capacity) Name() string { return "Capacity" }

func (Capacity) Score(c *framework.Cycle, m *framework.Member) int64 {
	return c.Available[m.Index] // raw; rescaled by NormalizeScores
}

func (Capacity) NormalizeScores(_ *framework.Cycle, _ []int, scores []int64) {
	var most int64
	for _, s := range scores {
		most = max(most, s)
	}
	for i, s := range scores {
		if s <= 0 || most <= 0 {
			scores[i] = 0
			continue
		}
		// s*MaxScore/most without overflow for very large capacities.
		scores[i] = int64(float64(s) / float64(most) * float64(framework.MaxScore))
	}
}
