package scheduler

import (
	"sort"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Decision turns the explanation into the binding's status.schedulingDecision,
// keeping at most MaxDecisionMembers rows: selected members, then other
// candidates, then filtered ones.
func (r *Result) Decision() *workv1alpha1.SchedulingDecision {
	if r == nil {
		return nil
	}
	e := &r.Explanation
	d := &workv1alpha1.SchedulingDecision{Strategy: e.Strategy, ScorePlugins: e.ScorePlugins}
	for _, t := range e.Terms {
		d.AffinityTerms = append(d.AffinityTerms, workv1alpha1.AffinityTermOutcome{Name: t.Name, Reason: t.Reason, Message: t.Message})
	}
	rows := e.Members()
	rank := func(m MemberExplanation) int {
		switch {
		case m.Selected:
			return 0
		case m.FilteredBy == "":
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rank(rows[i]) < rank(rows[j]) })
	for i, m := range rows {
		if i == workv1alpha1.MaxDecisionMembers {
			d.OmittedMembers = int32(len(rows) - i)
			break
		}
		d.Members = append(d.Members, workv1alpha1.MemberDecision{
			Name: m.Name, FilteredBy: m.FilteredBy, Reason: m.Reason,
			Score: m.Score, Scores: m.Scores, AvailableReplicas: m.Available,
			Selected: m.Selected, Replicas: m.Replicas,
		})
	}
	return d
}
