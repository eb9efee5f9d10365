package scheduler

import (
	"errors"
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
	"github.com/flotilla-io/flotilla/internal/scheduler/spread"
)

// groupKey is a member's group for one spread constraint, if it has one.
type groupKey func(m *framework.Member) (string, bool)

// spreadConstraints converts the placement's constraints for package spread.
func spreadConstraints(p *policyv1alpha1.Placement) ([]spread.Constraint, []groupKey, error) {
	if p == nil {
		return nil, nil, nil
	}
	cons := make([]spread.Constraint, 0, len(p.SpreadConstraints))
	keys := make([]groupKey, 0, len(p.SpreadConstraints))
	for i, sc := range p.SpreadConstraints {
		if sc.MinGroups < 0 || sc.MaxGroups < 0 || (sc.MaxGroups > 0 && sc.MaxGroups < sc.MinGroups) {
			return nil, nil, fmt.Errorf("spreadConstraints[%d]: minGroups %d, maxGroups %d", i, sc.MinGroups, sc.MaxGroups)
		}
		c := spread.Constraint{MinGroups: sc.MinGroups, MaxGroups: sc.MaxGroups}
		var key groupKey
		switch {
		case sc.SpreadByField != "" && sc.SpreadByLabel != "":
			return nil, nil, fmt.Errorf("spreadConstraints[%d]: spreadByField and spreadByLabel are mutually exclusive", i)
		case sc.SpreadByLabel != "":
			label := sc.SpreadByLabel
			c.Name = "spreadByLabel=" + label
			key = func(m *framework.Member) (string, bool) { v, ok := m.Labels[label]; return v, ok }
		case sc.SpreadByField == policyv1alpha1.SpreadByFieldCluster:
			c.Name, c.ByMember = "spreadByField=cluster", true
		case sc.SpreadByField == policyv1alpha1.SpreadByFieldRegion:
			c.Name = "spreadByField=region"
			key = func(m *framework.Member) (string, bool) { return m.Region, m.Region != "" }
		case sc.SpreadByField == policyv1alpha1.SpreadByFieldZone:
			c.Name = "spreadByField=zone"
			key = func(m *framework.Member) (string, bool) { return m.Zone, m.Zone != "" }
		case sc.SpreadByField == policyv1alpha1.SpreadByFieldProvider:
			c.Name = "spreadByField=provider"
			key = func(m *framework.Member) (string, bool) { return m.Provider, m.Provider != "" }
		default:
			return nil, nil, fmt.Errorf("spreadConstraints[%d]: spreadByField %q is not cluster, region, zone or provider", i, sc.SpreadByField)
		}
		cons = append(cons, c)
		keys = append(keys, key)
	}
	return cons, keys, nil
}

// selectMembers chooses among the term's candidates under the spread constraints.
func (d *decision) selectMembers(o *termOutcome) *Error {
	if len(d.constraints) == 0 {
		o.selected = o.feasible // nothing to choose: every candidate
		return nil
	}
	cands := make([]spread.Candidate, len(o.feasible))
	for k, i := range o.feasible {
		cands[k] = spread.Candidate{Name: d.snap.Member(i).Name, Score: o.scores[k], Capacity: d.capacityOf(i, spread.Unlimited)}
	}
	req := spread.Request{
		Candidates:  cands,
		Constraints: d.constraints,
		GroupOf: func(c, k int) (string, bool) {
			return d.groupKeys[k](d.snap.Member(o.feasible[c]))
		},
	}
	if d.cycle.Strategy.Divided() {
		req.Need = d.cycle.Replicas
	}
	sel, err := spread.Select(req)
	for _, ex := range sel.Excluded {
		if o.excluded == nil {
			o.excluded = map[int]string{}
		}
		o.excluded[o.feasible[ex.Candidate]] = ex.Reason
	}
	if err != nil {
		var f *spread.Failure
		if errors.As(err, &f) && f.Insufficient {
			return unschedulable("%s", f.Message)
		}
		return noClusterFit("%s", err.Error())
	}
	o.selected = make([]int, len(sel.Members))
	for k, c := range sel.Members {
		o.selected[k] = o.feasible[c]
	}
	if len(o.selected) == 0 {
		return noClusterFit("%s", d.unfitSummary(o))
	}
	d.mandatory = sel.Mandatory
	return nil
}

// capacityOf is member i's available replicas, or unknown when it has no
// model. A held member's room is at most the replicas it holds.
func (d *decision) capacityOf(i int, unknown int64) int64 {
	a := d.cycle.Available[i]
	if a == framework.CapacityUnknown {
		a = unknown
	}
	if d.base[i].code == framework.Held {
		return min(a, d.cycle.Current[d.snap.Member(i).Name])
	}
	return a
}
