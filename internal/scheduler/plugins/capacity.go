package plugins

import (
	"strconv"

	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// ReasonNoCapacityModel is given when a strategy needs a member's capacity
// and the member has no capacity model.
const ReasonNoCapacityModel = "no capacity model"

// StaticWeight drops members that no staticWeightList entry selects: their
// weight is 0, so they could never take a replica.
type StaticWeight struct{}

func (StaticWeight) Name() string { return "StaticWeight" }

func (StaticWeight) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if c.Strategy == framework.StaticWeighted && c.Weights != nil && c.Weights[m.Index] == 0 {
		return framework.Reject("matches no staticWeightList entry (weight 0)")
	}
	return framework.Status{}
}

// CapacityModel drops members without a capacity model when the strategy
// divides by capacity (dynamic weight, Aggregated).
type CapacityModel struct{}

func (CapacityModel) Name() string { return "CapacityModel" }

func (CapacityModel) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if c.Strategy.NeedsCapacity() && c.Replicas > 0 && m.Model == nil {
		return framework.Reject(ReasonNoCapacityModel)
	}
	return framework.Status{}
}

// DuplicatedCapacity drops members that cannot hold every replica of a
// Duplicated binding. A member without a model is let through: its capacity
// is unknown, not short.
type DuplicatedCapacity struct{}

func (DuplicatedCapacity) Name() string { return "DuplicatedCapacity" }

func (DuplicatedCapacity) Filter(c *framework.Cycle, m *framework.Member) framework.Status {
	if c.Strategy != framework.Duplicated || c.Replicas == 0 {
		return framework.Status{}
	}
	if avail := c.Available[m.Index]; avail != framework.CapacityUnknown && avail < c.Replicas {
		// Built without fmt: on a full fleet this runs for most members of
		// every Duplicated decision.
		reason := make([]byte, 0, 64)
		reason = append(reason, "insufficient capacity: "...)
		reason = strconv.AppendInt(reason, avail, 10)
		reason = append(reason, " of "...)
		reason = strconv.AppendInt(reason, c.Replicas, 10)
		reason = append(reason, " replicas fit"...)
		return framework.Short(string(reason))
	}
	return framework.Status{}
}
