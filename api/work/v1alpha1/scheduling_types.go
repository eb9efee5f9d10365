package v1alpha1

// MaxDecisionMembers bounds the member rows a SchedulingDecision keeps, so
// that a binding's status stays small in a fleet of thousands: selected
// members first, then other candidates, then filtered members.
const MaxDecisionMembers = 64

// SchedulingDecision explains the scheduler's last decision for a binding.
type SchedulingDecision struct {
	// Strategy is how replicas were assigned, e.g. Divided/StaticWeighted.
	// +optional
	Strategy string `json:"strategy,omitempty"`

	// AffinityTerms are the clusterAffinities terms tried, in order; the last
	// is the one in force.
	// +optional
	AffinityTerms []AffinityTermOutcome `json:"affinityTerms,omitempty"`

	// ScorePlugins names the entries of each member's scores.
	// +optional
	ScorePlugins []string `json:"scorePlugins,omitempty"`

	// Members are the members considered, at most MaxDecisionMembers of them.
	// +optional
	Members []MemberDecision `json:"members,omitempty"`

	// OmittedMembers counts the members left out of Members.
	// +optional
	OmittedMembers int32 `json:"omittedMembers,omitempty"`
}

// AffinityTermOutcome is what trying one affinity term gave.
type AffinityTermOutcome struct {
	// Name of the term; empty for a placement with a single clusterAffinity.
	// +optional
	Name string `json:"name,omitempty"`

	// Reason is Success, NoClusterFit or Unschedulable.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says why.
	// +optional
	Message string `json:"message,omitempty"`
}

// MemberDecision is one member's part in the decision.
type MemberDecision struct {
	// Name of the member.
	// +required
	Name string `json:"name"`

	// FilteredBy is the filter plugin that dropped the member; empty for a candidate.
	// +optional
	FilteredBy string `json:"filteredBy,omitempty"`

	// Reason says why it was dropped or not selected.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Score is the weighted total of Scores.
	// +optional
	Score int64 `json:"score,omitempty"`

	// Scores are each score plugin's 0..100 score, in ScorePlugins order.
	// +optional
	Scores []int64 `json:"scores,omitempty"`

	// AvailableReplicas is how many replicas of the binding the member can
	// hold; -1 when it has no capacity model.
	// +optional
	AvailableReplicas int64 `json:"availableReplicas,omitempty"`

	// Selected is true when the member is part of the placement.
	// +optional
	Selected bool `json:"selected,omitempty"`

	// Replicas placed on the member.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
}
