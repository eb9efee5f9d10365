// Package policymatch decides which PropagationPolicy or
// ClusterPropagationPolicy claims a resource template. It is pure: callers
// pass the template's identity and labels and the policies they listed.
//
// Precedence, as Karmada's detector (pkg/detector, read for semantics):
//
//  1. a template already claimed keeps its policy while that policy exists
//     and still selects it (spec.preemption is not acted upon yet);
//  2. otherwise a PropagationPolicy of the template's namespace wins over
//     any ClusterPropagationPolicy;
//  3. then the higher spec.priority (unset is 0);
//  4. then the more specific selector that matches: by name, over by
//     labelSelector, over by kind alone;
//  5. then the policy name, ascending.
//
// A PropagationPolicy selects only templates of its own namespace (its
// selectors' namespace field is ignored) and never cluster-scoped ones; a
// ClusterPropagationPolicy selector with a namespace selects only that
// namespace. A selector with a name ignores its labelSelector.
package policymatch

import (
	"cmp"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Template is what matching needs of a resource template.
type Template struct {
	APIVersion string
	Kind       string
	// Namespace is empty for cluster-scoped templates.
	Namespace string
	Name      string
	Labels    map[string]string
}

// Ref names one propagation policy.
type Ref struct {
	// Cluster is true for a ClusterPropagationPolicy.
	Cluster bool
	// Namespace is empty for a ClusterPropagationPolicy.
	Namespace string
	Name      string
	UID       types.UID
}

// String is "PropagationPolicy ns/name" or "ClusterPropagationPolicy name".
func (r Ref) String() string {
	if r.Cluster {
		return "ClusterPropagationPolicy " + r.Name
	}
	return "PropagationPolicy " + r.Namespace + "/" + r.Name
}

// Policy is a propagation policy to match against.
type Policy struct {
	Ref
	Spec *policyv1alpha1.PropagationSpec
}

// Specificity is how specifically a policy selects a template.
type Specificity int

const (
	// NotSelected: no selector of the policy matches.
	NotSelected Specificity = iota
	// ByKind: a selector with neither name nor labelSelector matches.
	ByKind
	// ByLabelSelector: a selector's labelSelector matches.
	ByLabelSelector
	// ByName: a selector's name matches.
	ByName
)

// Selects returns the most specific way one of p's selectors matches t,
// NotSelected when none does. The error names the first selector that
// cannot be evaluated (an invalid labelSelector); the other selectors are
// still evaluated.
func Selects(p *Policy, t Template) (Specificity, error) {
	if !p.Cluster && (t.Namespace == "" || t.Namespace != p.Namespace) {
		return NotSelected, nil
	}
	best := NotSelected
	var firstErr error
	for i := range p.Spec.ResourceSelectors {
		s, err := selectorMatches(&p.Spec.ResourceSelectors[i], p.Cluster, t)
		if err != nil && firstErr == nil {
			firstErr = fmt.Errorf("%s resourceSelectors[%d]: %w", p.Ref, i, err)
		}
		best = max(best, s)
	}
	return best, firstErr
}

func selectorMatches(rs *policyv1alpha1.ResourceSelector, cluster bool, t Template) (Specificity, error) {
	if rs.APIVersion != t.APIVersion || rs.Kind != t.Kind {
		return NotSelected, nil
	}
	if cluster && rs.Namespace != "" && rs.Namespace != t.Namespace {
		return NotSelected, nil
	}
	switch {
	case rs.Name != "":
		if rs.Name == t.Name {
			return ByName, nil
		}
		return NotSelected, nil
	case rs.LabelSelector != nil:
		selector, err := metav1.LabelSelectorAsSelector(rs.LabelSelector)
		if err != nil {
			return NotSelected, fmt.Errorf("labelSelector: %w", err)
		}
		if selector.Matches(labels.Set(t.Labels)) {
			return ByLabelSelector, nil
		}
		return NotSelected, nil
	default:
		return ByKind, nil
	}
}

// Choose returns the policy that claims t, or nil when none selects it.
// claimedBy is the policy that claims t now, nil when t is unclaimed; it
// keeps t when it is among policies (same UID) and still selects t.
// Selectors that cannot be evaluated select nothing here: their policy
// reports them on its own status.
func Choose(t Template, claimedBy *Ref, policies []Policy) *Policy {
	type candidate struct {
		policy      *Policy
		specificity Specificity
	}
	var candidates []candidate
	for i := range policies {
		p := &policies[i]
		s, _ := Selects(p, t)
		if s == NotSelected {
			continue
		}
		if claimedBy != nil && p.Ref == *claimedBy {
			return p
		}
		candidates = append(candidates, candidate{p, s})
	}
	if len(candidates) == 0 {
		return nil
	}
	best := slices.MinFunc(candidates, func(a, b candidate) int {
		return Compare(a.policy, a.specificity, b.policy, b.specificity)
	})
	return best.policy
}

// Compare orders two policies that select the same template by precedence:
// negative when a wins over b.
func Compare(a *Policy, aSpecificity Specificity, b *Policy, bSpecificity Specificity) int {
	return cmp.Or(
		compareBool(!a.Cluster, !b.Cluster),
		cmp.Compare(priority(b), priority(a)),
		cmp.Compare(bSpecificity, aSpecificity),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Namespace, b.Namespace),
	)
}

// compareBool puts true first.
func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

func priority(p *Policy) int32 {
	if p.Spec.Priority == nil {
		return 0
	}
	return *p.Spec.Priority
}
