package scheduler

import (
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// Result is a placement and how it was reached. On failure Schedule still
// returns a Result whose Explanation says why.
type Result struct {
	// Clusters is the placement, sorted by member name (spec.clusters).
	Clusters []workv1alpha1.TargetCluster
	// AffinityName is the affinity term in force (status.schedulerObservingAffinityName).
	AffinityName string
	// UnknownMembers says which clusterNames of the placement name no
	// member (package membernames), or is "". A failure's message starts
	// with it; a success still carries it for the Scheduled condition.
	UnknownMembers string
	// Short lists the members the placement asked for and could not have
	// for capacity, sorted by name: a placement that succeeded with less
	// than the policy asks (Scheduled=False, PartiallyScheduled).
	Short       []ShortMember
	Explanation Explanation
}

// Explanation is everything a user needs to see why a placement is what it is.
type Explanation struct {
	// Strategy is how replicas were assigned, e.g. "Divided/StaticWeighted".
	Strategy string
	// Terms are the affinity terms tried, in order; the last is in force.
	Terms []TermOutcome
	// ScorePlugins names the columns of MemberExplanation.Scores.
	ScorePlugins []string

	// row builds member i's row from the decision's own data, and rank
	// says where it goes in a decision record, over size members. Rows
	// are built on demand: a controller placing thousands of bindings
	// reads only the placement, the reason and a few dozen rows, and a
	// row per member per decision would double what the scheduler
	// allocates.
	size int
	row  func(i int) MemberExplanation
	rank func(i int) int
}

// Members has one row per member of the snapshot, sorted by name, for the
// affinity term in force. Each call builds the rows anew.
func (e *Explanation) Members() []MemberExplanation {
	if e.row == nil {
		return nil
	}
	rows := make([]MemberExplanation, e.size)
	for i := range rows {
		rows[i] = e.row(i)
	}
	return rows
}

// TermOutcome is what trying one affinity term gave.
type TermOutcome struct {
	Name string
	// Reason is a binding condition reason: Success, NoClusterFit, Unschedulable.
	Reason  string
	Message string
}

// MemberExplanation is one member's part in the decision.
type MemberExplanation struct {
	Name string
	// FilteredBy is the plugin that dropped the member, empty when it was a candidate.
	FilteredBy string
	Reason     string
	// Score is the weighted total; Scores are each plugin's 0..100 score.
	Score  int64
	Scores []int64
	// Available is how many replicas of the binding the member can hold,
	// -1 when it has no capacity model.
	Available int64
	Selected  bool
	Replicas  int32
}

// Candidates names the members that passed every filter.
func (e *Explanation) Candidates() []string {
	var out []string
	for _, row := range e.Members() {
		if row.FilteredBy == "" {
			out = append(out, row.Name)
		}
	}
	return out
}

// Filtered lists the members dropped and why.
func (e *Explanation) Filtered() []MemberExplanation {
	var out []MemberExplanation
	for _, row := range e.Members() {
		if row.FilteredBy != "" {
			out = append(out, row)
		}
	}
	return out
}

// Member finds a member's row.
func (e *Explanation) Member(name string) (MemberExplanation, bool) {
	for _, row := range e.Members() {
		if row.Name == name {
			return row, true
		}
	}
	return MemberExplanation{}, false
}
