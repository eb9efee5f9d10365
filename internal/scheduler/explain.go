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
	res.Explanation.rows = func() []MemberExplanation { return d.rows(o) }
	if o.err == nil && !d.quotaRefused {
		res.Clusters = d.targetClusters(o)
	}
	return res
}

// rows is the per-member explanation of term outcome o.
func (d *decision) rows(o *termOutcome) []MemberExplanation {
	n, ns := d.snap.Len(), len(d.s.scorers)
	rows := make([]MemberExplanation, n)
	for i := range n {
		rows[i] = MemberExplanation{Name: d.snap.Member(i).Name, Available: d.cycle.Available[i]}
		rows[i].FilteredBy, rows[i].Reason = d.statusOf(o, i)
		if v := d.base[i]; v.code == framework.Held && rows[i].Reason == "" {
			rows[i].Reason = "keeps the replicas it holds, takes no more: " + v.reason
		}
	}
	for k, i := range o.feasible {
		rows[i].Score = o.scores[k]
		rows[i].Scores = slices.Clone(o.pluginScores[k*ns : (k+1)*ns])
	}
	if o.err == nil {
		for k, i := range o.selected {
			rows[i].Selected = true
			rows[i].Replicas = int32(o.replicas[k])
		}
	}
	return rows
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
