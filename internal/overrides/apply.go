package overrides

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusteraffinity"
)

// Result is a template rendered for one member.
type Result struct {
	// Object is the overridden copy; the template itself is never changed.
	Object *unstructured.Unstructured
	// Applied lists the rules that selected the member, in the order they
	// were applied (see the package doc for the order).
	Applied []AppliedRule
}

// Apply renders template for member: it applies, in Karmada's order, every
// rule of every ClusterOverridePolicy and OverridePolicy that selects the
// template and whose targetCluster selects the member. Callers may pass all
// policies they hold; those of other namespaces are skipped.
//
// The template must hold JSON values only, as objects read from the API do.
// A failure is an *Error naming the policy, rule, overrider and path; no
// partial result is returned.
func Apply(template *unstructured.Unstructured, member *clusterv1alpha1.MemberCluster,
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy, policies []policyv1alpha1.OverridePolicy,
) (*Result, error) {
	if template == nil {
		return nil, errors.New("no template given")
	}
	if member == nil {
		return nil, errors.New("no member cluster given")
	}
	selected, err := selectPolicies(template, clusterPolicies, policies)
	if err != nil {
		return nil, err
	}
	result := &Result{Object: template.DeepCopy()}
	for _, policy := range selected {
		for _, r := range policyRules(policy.spec) {
			ok, err := clusteraffinity.Matches(r.targetCluster, member)
			if err != nil {
				return nil, &Error{Policy: policy.ref, Rule: r.index, Overrider: "targetCluster", Index: -1, Err: err}
			}
			if !ok {
				continue
			}
			if failed := applyOverriders(result.Object, r.overriders); failed != nil {
				return nil, overriderError(policy.ref, r.index, failed.name, failed.index, failed.err)
			}
			result.Applied = append(result.Applied, AppliedRule{
				Policy: policy.ref, Rule: r.index, Overriders: *r.overriders.DeepCopy(),
			})
		}
	}
	return result, nil
}
