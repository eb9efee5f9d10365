package scheduling

import (
	"sort"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler"
)

// decisionOf turns the scheduler's explanation into the binding's
// status.schedulingDecision, keeping at most MaxDecisionMembers rows:
// selected members, then other candidates, then filtered ones.
func decisionOf(res *scheduler.Result) *workv1alpha1.SchedulingDecision {
	if res == nil {
		return nil
	}
	e := &res.Explanation
	d := &workv1alpha1.SchedulingDecision{Strategy: e.Strategy, ScorePlugins: e.ScorePlugins}
	for _, t := range e.Terms {
		d.AffinityTerms = append(d.AffinityTerms, workv1alpha1.AffinityTermOutcome{Name: t.Name, Reason: t.Reason, Message: t.Message})
	}
	rows := e.Members()
	rank := func(r scheduler.MemberExplanation) int {
		switch {
		case r.Selected:
			return 0
		case r.FilteredBy == "":
			return 1
		default:
			return 2
		}
	}
	sort.SliceStable(rows, func(i, j int) bool { return rank(rows[i]) < rank(rows[j]) })
	for i, r := range rows {
		if i == workv1alpha1.MaxDecisionMembers {
			d.OmittedMembers = int32(len(rows) - i)
			break
		}
		d.Members = append(d.Members, workv1alpha1.MemberDecision{
			Name: r.Name, FilteredBy: r.FilteredBy, Reason: r.Reason,
			Score: r.Score, Scores: r.Scores, AvailableReplicas: r.Available,
			Selected: r.Selected, Replicas: r.Replicas,
		})
	}
	return d
}
