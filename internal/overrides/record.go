package overrides

import (
	"fmt"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Policy kinds, as they appear in records and errors.
const (
	KindClusterOverridePolicy = "ClusterOverridePolicy"
	KindOverridePolicy        = "OverridePolicy"
)

// PolicyRef names one override policy.
type PolicyRef struct {
	Kind      string // KindClusterOverridePolicy or KindOverridePolicy
	Namespace string // empty for a ClusterOverridePolicy
	Name      string
}

// String is "ClusterOverridePolicy name" or "OverridePolicy namespace/name".
func (p PolicyRef) String() string {
	if p.Namespace == "" {
		return p.Kind + " " + p.Name
	}
	return p.Kind + " " + p.Namespace + "/" + p.Name
}

// RuleIndex is the index of a rule in spec.overrideRules, or DeprecatedRule.
type RuleIndex int

// DeprecatedRule stands for the spec.targetCluster/spec.overriders pair.
const DeprecatedRule RuleIndex = -1

// String is "rule N", or "spec.overriders" for the deprecated pair.
func (r RuleIndex) String() string {
	if r == DeprecatedRule {
		return "spec.overriders"
	}
	return fmt.Sprintf("rule %d", int(r))
}

// AppliedRule records one rule that selected the member and was applied.
type AppliedRule struct {
	Policy PolicyRef
	Rule   RuleIndex
	// Overriders is a copy of what the rule applied, for status and for
	// explaining a rendered object.
	Overriders policyv1alpha1.Overriders
}

// String is e.g. "OverridePolicy ns/p rule 0".
func (a AppliedRule) String() string {
	return a.Policy.String() + " " + a.Rule.String()
}
