package overrides

import (
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// rule is one member-targeted set of overriders of a policy.
type rule struct {
	index         RuleIndex
	targetCluster *policyv1alpha1.ClusterAffinity
	overriders    *policyv1alpha1.Overriders
}

// policyRules lists a policy's rules in application order: the deprecated
// spec.targetCluster/spec.overriders pair, when it overrides anything, then
// spec.overrideRules. Karmada reads the pair only when overrideRules is
// empty, relying on its webhook to forbid both; applying both keeps a policy
// that has both from losing half of it silently.
func policyRules(spec *policyv1alpha1.OverrideSpec) []rule {
	rules := make([]rule, 0, len(spec.OverrideRules)+1)
	if !isEmpty(&spec.Overriders) {
		rules = append(rules, rule{index: DeprecatedRule, targetCluster: spec.TargetCluster, overriders: &spec.Overriders})
	}
	for i := range spec.OverrideRules {
		r := &spec.OverrideRules[i]
		rules = append(rules, rule{index: RuleIndex(i), targetCluster: r.TargetCluster, overriders: &r.Overriders})
	}
	return rules
}
