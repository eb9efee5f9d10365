package scheduler

import (
	"slices"
	"strings"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// statusOf is why member i is not a candidate of term outcome o: the plugin
// and reason, both empty when it is one. Affinity is reported first: "not
// selected by the policy" is the answer a user looks for before "not Ready".
func (d *decision) statusOf(o *termOutcome, i int) (string, string) {
	if r := o.affinityReason[i]; r != "" {
		return PluginClusterAffinity, r
	}
	if v := d.base[i]; v.code != framework.Fits && v.code != framework.Held {
		return d.s.filters[v.plugin].Name(), v.reason
	}
	if r, ok := o.excluded[i]; ok {
		return PluginSpreadConstraint, r
	}
	return "", ""
}

// result builds the Result for the term in force.
func (d *decision) result() *Result {
	res := &Result{Explanation: Explanation{Strategy: d.cycle.Strategy.String()}}
	for _, o := range d.tried {
		res.Explanation.Terms = append(res.Explanation.Terms, TermOutcome{Name: o.term.Name, Reason: reasonOf(o.err), Message: messageOf(o.err)})
	}
	o := d.outcome
	if o == nil {
		return res
	}
	res.AffinityName = o.term.Name
	for _, ws := range d.s.scorers {
		res.Explanation.ScorePlugins = append(res.Explanation.ScorePlugins, ws.Plugin.Name())
	}
	res.Explanation.size = d.snap.Len()
	res.Explanation.row, res.Explanation.rank = d.explainer(o)
	if o.err == nil && !d.quotaRefused {
		res.Clusters = d.targetClusters(o)
		res.Short = d.shortMembers(o)
	}
	return res
}

// explainer gives member i's row of the explanation of term outcome o, and
// its rank for the decision record (0 selected, 1 another candidate, 2
// filtered), each for one member at a time: the record keeps a few dozen
// rows, and building all of a 10,000-member fleet's to keep those cost a
// third of a decision.
func (d *decision) explainer(o *termOutcome) (row func(i int) MemberExplanation, rank func(i int) int) {
	n, ns := d.snap.Len(), len(d.s.scorers)
	// Member index → position+1 in o.feasible and o.selected, 0 when absent.
	feasibleAt, selectedAt := make([]int32, n), make([]int32, n)
	for k, i := range o.feasible {
		feasibleAt[i] = int32(k + 1)
	}
	if o.err == nil {
		for k, i := range o.selected {
			selectedAt[i] = int32(k + 1)
		}
	}
	row = func(i int) MemberExplanation {
		r := MemberExplanation{Name: d.snap.Member(i).Name, Available: d.cycle.Available[i]}
		r.FilteredBy, r.Reason = d.statusOf(o, i)
		if v := d.base[i]; v.code == framework.Held && r.Reason == "" {
			r.Reason = "keeps the replicas it holds, takes no more: " + v.reason
		}
		if k := int(feasibleAt[i]) - 1; k >= 0 {
			r.Score = o.scores[k]
			r.Scores = slices.Clone(o.pluginScores[k*ns : (k+1)*ns])
		}
		if k := int(selectedAt[i]) - 1; k >= 0 {
			r.Selected = true
			r.Replicas = int32(o.replicas[k])
		}
		return r
	}
	rank = func(i int) int {
		switch plugin, _ := d.statusOf(o, i); {
		case selectedAt[i] > 0:
			return 0
		case plugin == "":
			return 1
		default:
			return 2
		}
	}
	return row, rank
}

// targetClusters is the placement sorted by name. Divided placements list
// only members with replicas, except that a binding without replicas goes
// to every selected member (the object itself must exist there).
func (d *decision) targetClusters(o *termOutcome) []workv1alpha1.TargetCluster {
	listed := func(k int) bool {
		return o.replicas[k] > 0 || d.cycle.Strategy == framework.Duplicated || d.cycle.Replicas == 0
	}
	count := 0
	for k := range o.selected {
		if listed(k) {
			count++
		}
	}
	out := make([]workv1alpha1.TargetCluster, 0, count)
	for k, i := range o.selected {
		if listed(k) {
			out = append(out, workv1alpha1.TargetCluster{Name: d.snap.Member(i).Name, Replicas: int32(o.replicas[k])})
		}
	}
	slices.SortFunc(out, func(a, b workv1alpha1.TargetCluster) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func messageOf(e *Error) string {
	if e == nil {
		return ""
	}
	return e.Message
}
