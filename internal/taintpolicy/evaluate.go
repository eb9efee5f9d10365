// Package taintpolicy evaluates ClusterTaintPolicies against a member: which
// of the policies' taints the member should carry, given its conditions and
// its CAPI Cluster's, and when to look again because a forSeconds wait runs
// out. It is pure: controllers/taintpolicy reads the objects and writes the
// result.
//
// Rules, per policy that targets the member (targetClusters, nil = all):
//   - A list of match conditions matches when it is not empty and every
//     condition matches: the named condition exists, its status is In (or
//     NotIn) statusValues, and it has had that status for forSeconds (since
//     its lastTransitionTime). A condition the member does not report
//     matches neither In nor NotIn.
//   - conditionType names a MemberCluster condition, or with the prefix
//     "capi:" a condition of the member's CAPI Cluster.
//   - addOnConditions matching asks for the policy's taints; otherwise
//     removeOnConditions matching asks for their removal; otherwise the
//     policy leaves them as they are.
//
// Across policies, per taint (key and effect): any policy asking for it adds
// it; otherwise any policy asking for its removal removes it. Policies only
// ever remove taints a policy added (the member's PolicyTaintsAnnotation
// lists them); such a taint that no policy targeting the member lists any
// more (the policy was deleted or edited) is removed too. A taint of the
// same key and effect set by someone else is never touched nor taken over.
package taintpolicy

import (
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// CAPIPrefix prefixes a conditionType that names a CAPI Cluster condition.
const CAPIPrefix = "capi:"

// Conditions are what a policy's match conditions are read from.
type Conditions struct {
	// Member are the MemberCluster's conditions.
	Member []metav1.Condition
	// CAPI are the CAPI Cluster's conditions; nil when there is no Cluster.
	CAPI []metav1.Condition
}

// Get returns the condition a conditionType names, or nil.
func (c Conditions) Get(conditionType string) *metav1.Condition {
	list := c.Member
	if t, ok := strings.CutPrefix(conditionType, CAPIPrefix); ok {
		list, conditionType = c.CAPI, t
	}
	for i := range list {
		if list[i].Type == conditionType {
			return &list[i]
		}
	}
	return nil
}

// Verdict is what one policy asks of its taints.
type Verdict int

const (
	// Keep: neither list matches; the taints stay as they are.
	Keep Verdict = iota
	// Add: addOnConditions match.
	Add
	// Remove: removeOnConditions match (and addOnConditions do not).
	Remove
)

func (v Verdict) String() string { return [...]string{"Keep", "Add", "Remove"}[v] }

// Evaluate is one policy's verdict at now, and the earliest later time at
// which it can change without any condition changing (a forSeconds wait
// running out); zero when none.
func Evaluate(spec *policyv1alpha1.ClusterTaintPolicySpec, conds Conditions, now time.Time) (Verdict, time.Time) {
	add, addAt := matches(spec.AddOnConditions, conds, now)
	if add {
		return Add, time.Time{}
	}
	remove, removeAt := matches(spec.RemoveOnConditions, conds, now)
	if remove {
		return Remove, addAt
	}
	return Keep, earliest(addAt, removeAt)
}

// matches says whether every condition of list matches at now. When every
// status matches but some forSeconds have not passed, pending is when the
// last of them will have.
func matches(list []policyv1alpha1.MatchCondition, conds Conditions, now time.Time) (ok bool, pending time.Time) {
	if len(list) == 0 {
		return false, time.Time{}
	}
	var waitUntil time.Time
	for _, mc := range list {
		c := conds.Get(mc.ConditionType)
		if c == nil || !statusMatches(mc, c.Status) {
			return false, time.Time{}
		}
		if mc.ForSeconds != nil && *mc.ForSeconds > 0 {
			due := c.LastTransitionTime.Add(time.Duration(*mc.ForSeconds) * time.Second)
			if due.After(waitUntil) {
				waitUntil = due
			}
		}
	}
	if waitUntil.After(now) {
		return false, waitUntil
	}
	return true, time.Time{}
}

func statusMatches(mc policyv1alpha1.MatchCondition, status metav1.ConditionStatus) bool {
	in := slices.Contains(mc.StatusValues, status)
	if mc.Operator == policyv1alpha1.MatchConditionOpNotIn {
		return !in
	}
	return in
}

// earliest is the earlier of two times, ignoring zero ones.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}
