// Package clusteraffinity decides whether a ClusterAffinity selects a member.
//
// It is shared by every component that targets members with an affinity:
// the scheduler, override rules and taint policies. The semantics are
// Karmada's (pkg/util/selector.go, ClusterMatches): Exclude always wins, and
// every criterion that is set — label selector, field selector, names — must
// match; an unset criterion matches every member. Unlike Karmada, an invalid
// selector is an error, not a silent mismatch, so a broken policy is reported
// instead of quietly selecting nothing.
package clusteraffinity

import (
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// Matches reports whether affinity selects member. A nil affinity selects
// every member. The error says which part of the affinity is invalid.
func Matches(affinity *policyv1alpha1.ClusterAffinity, member *clusterv1alpha1.MemberCluster) (bool, error) {
	if member == nil {
		return false, errors.New("no member cluster given")
	}
	if affinity == nil {
		return true, nil
	}
	if slices.Contains(affinity.ExcludeClusters, member.Name) {
		return false, nil
	}
	if affinity.LabelSelector != nil {
		selector, err := metav1.LabelSelectorAsSelector(affinity.LabelSelector)
		if err != nil {
			return false, fmt.Errorf("labelSelector: %w", err)
		}
		if !selector.Matches(labels.Set(member.Labels)) {
			return false, nil
		}
	}
	if affinity.FieldSelector != nil {
		ok, err := fieldsMatch(affinity.FieldSelector, member)
		if err != nil {
			return false, fmt.Errorf("fieldSelector: %w", err)
		}
		if !ok {
			return false, nil
		}
	}
	if len(affinity.ClusterNames) > 0 && !slices.Contains(affinity.ClusterNames, member.Name) {
		return false, nil
	}
	return true, nil
}
