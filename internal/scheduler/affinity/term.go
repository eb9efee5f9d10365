// Package affinity compiles cluster affinities (names, exclusions, label and
// field selectors) into matchers over framework members. It is used by the
// ClusterAffinity filter and to read static weight lists.
package affinity

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheduler/framework"
)

// Reasons a member does not match, shared so that explanations group well.
const (
	ReasonExcluded    = "excluded by clusterAffinity.exclude"
	ReasonNotInNames  = "not in clusterAffinity.clusterNames"
	reasonLabelPrefix = "labels do not match labelSelector "
)

// Term is one compiled affinity; all given criteria must match, and an
// exclusion always wins. A Term with no criteria matches every member.
type Term struct {
	// Name is the affinityName of an ordered term; empty for a plain clusterAffinity.
	Name string

	names        []string
	exclude      []string
	selector     labels.Selector
	selectorText string
	fields       []fieldRequirement
}

type fieldRequirement struct {
	req    policyv1alpha1.FieldSelectorRequirement
	reason string
}

// Field keys of a fieldSelector.
const (
	FieldProvider = "provider"
	FieldRegion   = "region"
	FieldZone     = "zone"
)

// Compile compiles a; nil matches every member.
func Compile(name string, a *policyv1alpha1.ClusterAffinity) (*Term, error) {
	t := &Term{Name: name}
	if a == nil {
		return t, nil
	}
	t.names = a.ClusterNames
	t.exclude = a.ExcludeClusters
	if a.LabelSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(a.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("affinity %q: labelSelector: %w", name, err)
		}
		t.selector = sel
		t.selectorText = reasonLabelPrefix + sel.String()
	}
	if a.FieldSelector != nil {
		for _, r := range a.FieldSelector.MatchExpressions {
			if err := validateField(&r); err != nil {
				return nil, fmt.Errorf("affinity %q: fieldSelector: %w", name, err)
			}
			t.fields = append(t.fields, fieldRequirement{req: r, reason: fieldReason(&r)})
		}
	}
	return t, nil
}

func validateField(r *policyv1alpha1.FieldSelectorRequirement) error {
	switch r.Key {
	case FieldProvider, FieldRegion, FieldZone:
	default:
		return fmt.Errorf("key %q: want provider, region or zone", r.Key)
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			return fmt.Errorf("%s %s needs values", r.Key, r.Operator)
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) != 0 {
			return fmt.Errorf("%s %s takes no values", r.Key, r.Operator) // as internal/clusteraffinity
		}
	default:
		return fmt.Errorf("%s: operator %q: want In, NotIn, Exists or DoesNotExist", r.Key, r.Operator)
	}
	return nil
}

func fieldReason(r *policyv1alpha1.FieldSelectorRequirement) string {
	if len(r.Values) == 0 {
		return fmt.Sprintf("does not match fieldSelector %s %s", r.Key, r.Operator)
	}
	return fmt.Sprintf("does not match fieldSelector %s %s (%s)", r.Key, r.Operator, strings.Join(r.Values, ", "))
}

// Match says whether m matches the term and, if not, why.
func (t *Term) Match(m *framework.Member) (bool, string) {
	if slices.Contains(t.exclude, m.Name) {
		return false, ReasonExcluded
	}
	if len(t.names) > 0 && !slices.Contains(t.names, m.Name) {
		return false, ReasonNotInNames
	}
	if t.selector != nil && !t.selector.Matches(labels.Set(m.Labels)) {
		return false, t.selectorText
	}
	for i := range t.fields {
		if !fieldMatches(&t.fields[i].req, m) {
			return false, t.fields[i].reason
		}
	}
	return true, ""
}

// fieldMatches applies label semantics to member fields: an empty field is an
// absent key (NotIn and DoesNotExist match it). A member spanning several
// zones is In when any of them is listed and NotIn when none is.
func fieldMatches(r *policyv1alpha1.FieldSelectorRequirement, m *framework.Member) bool {
	var values []string
	switch r.Key {
	case FieldProvider:
		values = nonEmpty(m.Provider)
	case FieldRegion:
		values = nonEmpty(m.Region)
	case FieldZone:
		values = m.Zones
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		return slices.ContainsFunc(values, func(v string) bool { return slices.Contains(r.Values, v) })
	case corev1.NodeSelectorOpNotIn:
		return !slices.ContainsFunc(values, func(v string) bool { return slices.Contains(r.Values, v) })
	case corev1.NodeSelectorOpExists:
		return len(values) > 0
	case corev1.NodeSelectorOpDoesNotExist:
		return len(values) == 0
	}
	return false
}

func nonEmpty(v string) []string {
	if v == "" {
		return nil
	}
	return []string{v}
}
