package scheduler

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/flotilla-io/flotilla/internal/scheduler/division"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// assign gives the selected members their replicas. Divided strategies keep
// the current placement and move as little as possible unless a rebalance
// is asked for; replicas on members no longer selected are redistributed.
func (d *decision) assign(o *termOutcome) *Error {
	total := d.cycle.Replicas
	o.replicas = make([]int64, len(o.selected))
	if d.cycle.Strategy == framework.Duplicated || total == 0 {
		if d.cycle.Strategy == framework.Duplicated {
			for k := range o.replicas {
				o.replicas[k] = total
			}
		}
		return nil
	}

	members := make([]division.Member, len(o.selected))
	var held int64
	for k, i := range o.selected {
		m := d.snap.Member(i)
		dm := division.Member{Name: m.Name, Capacity: d.capacityOf(i, division.Unlimited)}
		if !d.in.Rebalance {
			dm.Current = d.cycle.Current[m.Name]
		}
		switch d.cycle.Strategy {
		case framework.StaticWeighted:
			dm.Weight = d.cycle.Weights[i]
		case framework.DynamicWeighted:
			dm.Weight = dm.Capacity
		}
		held += dm.Current
		members[k] = dm
	}

	var seats []int64
	var err error
	switch {
	case d.cycle.Strategy == framework.Aggregated:
		seats, err = division.Aggregate(total, members, d.mandatory)
	case held == 0:
		seats, err = division.Apportion(total, members)
	default:
		seats, err = division.Adjust(total, members)
	}
	if err != nil {
		var short *division.InsufficientCapacityError
		if errors.As(err, &short) {
			return unschedulable("%s", capacitySummary(total, short.Have, members))
		}
		return schedulerError("divide %d replicas: %v", total, err)
	}
	o.replicas = seats
	return nil
}

// maxListed bounds how many members a message names.
const maxListed = 10

// capacitySummary says how many replicas each member can hold, roomiest
// first, e.g. "insufficient capacity for 100 replicas: members hold 60 (b: 40, a: 20)".
// Only the roomiest maxListed are named; they are found without sorting the
// fleet, since this message is built on every refusal when the fleet is full.
func capacitySummary(total, have int64, members []division.Member) string {
	roomier := func(a, b *division.Member) bool {
		if a.Capacity != b.Capacity {
			return a.Capacity > b.Capacity
		}
		return a.Name < b.Name
	}
	top := make([]*division.Member, 0, maxListed+1)
	for i := range members {
		m := &members[i]
		if len(top) == maxListed && !roomier(m, top[len(top)-1]) {
			continue
		}
		at := len(top)
		for at > 0 && roomier(m, top[at-1]) {
			at--
		}
		top = slices.Insert(top, at, m)
		if len(top) > maxListed {
			top = top[:maxListed]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "insufficient capacity for %d replicas: members hold %d (", total, have)
	for i, m := range top {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s: %d", m.Name, m.Capacity)
	}
	if more := len(members) - len(top); more > 0 {
		fmt.Fprintf(&b, ", %d more", more)
	}
	b.WriteString(")")
	return b.String()
}
