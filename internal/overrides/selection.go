package overrides

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// priority is how specifically a policy selects a template (Karmada's
// ImplicitPriority in pkg/util/selector.go): policies apply in ascending
// priority, so the most specific one applies last and wins.
type priority int

const (
	priorityMismatch      priority = iota // no selector matches
	priorityMatchAll                      // no selectors, or one with neither name nor labelSelector
	priorityLabelSelector                 // a labelSelector matches
	priorityName                          // the name matches
)

// selectedPolicy is a policy that selects the template, with its priority.
type selectedPolicy struct {
	ref      PolicyRef
	spec     *policyv1alpha1.OverrideSpec
	priority priority
}

// selectPolicies returns the ClusterOverridePolicies, then the
// OverridePolicies, that select the template, each kind in precedence order.
func selectPolicies(template *unstructured.Unstructured,
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy, policies []policyv1alpha1.OverridePolicy,
) ([]selectedPolicy, error) {
	var cluster, namespaced []selectedPolicy
	for i := range clusterPolicies {
		p := &clusterPolicies[i]
		ref := PolicyRef{Kind: KindClusterOverridePolicy, Name: p.Name}
		sp, err := selectedBy(ref, &p.Spec, template, true)
		if err != nil {
			return nil, err
		}
		if sp != nil {
			cluster = append(cluster, *sp)
		}
	}
	// An OverridePolicy customises templates of its own namespace only.
	for i := range policies {
		p := &policies[i]
		if template.GetNamespace() == "" || p.Namespace != template.GetNamespace() {
			continue
		}
		ref := PolicyRef{Kind: KindOverridePolicy, Namespace: p.Namespace, Name: p.Name}
		sp, err := selectedBy(ref, &p.Spec, template, false)
		if err != nil {
			return nil, err
		}
		if sp != nil {
			namespaced = append(namespaced, *sp)
		}
	}
	sortByPrecedence(cluster)
	sortByPrecedence(namespaced)
	return append(cluster, namespaced...), nil
}

// sortByPrecedence orders by priority, then name (Karmada's order), then
// namespace so that the order never depends on the order of the input.
func sortByPrecedence(ps []selectedPolicy) {
	slices.SortStableFunc(ps, func(a, b selectedPolicy) int {
		return cmp.Or(
			cmp.Compare(a.priority, b.priority),
			cmp.Compare(a.ref.Name, b.ref.Name),
			cmp.Compare(a.ref.Namespace, b.ref.Namespace),
		)
	})
}

// selectedBy returns the policy with its priority, or nil when it does not
// select the template. useNamespace is false for OverridePolicy, whose
// selectors' namespace is ignored in favour of its own.
func selectedBy(ref PolicyRef, spec *policyv1alpha1.OverrideSpec, template *unstructured.Unstructured, useNamespace bool) (*selectedPolicy, error) {
	best := priorityMismatch
	if len(spec.ResourceSelectors) == 0 {
		best = priorityMatchAll
	}
	for i, rs := range spec.ResourceSelectors {
		p, err := selectorPriority(&rs, template, useNamespace)
		if err != nil {
			return nil, &Error{Policy: ref, Rule: NoRule, Overrider: "resourceSelectors", Index: i, Err: err}
		}
		best = max(best, p)
	}
	if best == priorityMismatch {
		return nil, nil
	}
	return &selectedPolicy{ref: ref, spec: spec, priority: best}, nil
}

// selectorPriority matches one selector: apiVersion and kind must equal the
// template's, namespace too when set and used; then a name, when set, must
// equal the template's (a labelSelector beside it is ignored, as in Karmada);
// else a labelSelector, when set, must match its labels.
func selectorPriority(rs *policyv1alpha1.ResourceSelector, template *unstructured.Unstructured, useNamespace bool) (priority, error) {
	if rs.APIVersion != template.GetAPIVersion() || rs.Kind != template.GetKind() ||
		(useNamespace && rs.Namespace != "" && rs.Namespace != template.GetNamespace()) {
		return priorityMismatch, nil
	}
	switch {
	case rs.Name != "":
		if rs.Name == template.GetName() {
			return priorityName, nil
		}
		return priorityMismatch, nil
	case rs.LabelSelector != nil:
		selector, err := metav1.LabelSelectorAsSelector(rs.LabelSelector)
		if err != nil {
			return priorityMismatch, fmt.Errorf("labelSelector: %w", err)
		}
		if selector.Matches(labels.Set(template.GetLabels())) {
			return priorityLabelSelector, nil
		}
		return priorityMismatch, nil
	default:
		return priorityMatchAll, nil
	}
}

// Selected is an override policy that selects a template.
type Selected struct {
	Ref  PolicyRef
	Spec *policyv1alpha1.OverrideSpec
}

// Selecting lists the policies that select template in the order they
// apply (ClusterOverridePolicies first, the most specific last): for
// explanations, which show what customises a template before any member
// is considered.
func Selecting(template *unstructured.Unstructured,
	clusterPolicies []policyv1alpha1.ClusterOverridePolicy, policies []policyv1alpha1.OverridePolicy,
) ([]Selected, error) {
	ps, err := selectPolicies(template, clusterPolicies, policies)
	if err != nil {
		return nil, err
	}
	out := make([]Selected, len(ps))
	for i, p := range ps {
		out[i] = Selected{Ref: p.ref, Spec: p.spec}
	}
	return out, nil
}
